//! Fail points in the windows where a crash or an error is hardest to get right (issue 45):
//! after a group's COMMIT and before its answers, before a group stores its idempotent answers,
//! between a projector's apply and its checkpoint, and between the relay's publish and its
//! checkpoint. Each is named in [`POINTS`].
//!
//! They are the `fail` crate's points, compiled in only with this crate's `failpoints` feature
//! (the tests' builds turn it on through the API's dev-dependencies; a release build leaves it
//! out, and [`point`] is then an empty function). A test configures one with
//! `fail::cfg(name, action)`:
//! - `return` (or `return(anything)`): the point fails with [`Injected`];
//! - `return(delay:MS)`: the point waits MS milliseconds (on the runtime, not the thread) and
//!   goes on;
//! - `panic`: the point panics (the executor's workers and the log tails survive it);
//! - and the crate's own forms (`1*return`, `50%return`, `off`).

use std::time::Duration;

/// After a command group's COMMIT, before its callers are answered.
pub const AFTER_COMMIT: &str = "command.after_commit";
/// Inside a command group's transaction, after its events are appended and before their
/// idempotent answers are stored.
pub const BEFORE_ANSWERS_STORED: &str = "command.before_answers_stored";
/// Inside a projector's batch transaction, after the batch is applied and before the
/// checkpoint advances.
pub const PROJECTOR_AFTER_APPLY: &str = "projector.after_apply";
/// After the Kafka relay's batch is acknowledged by the broker, before its checkpoint advances.
pub const RELAY_AFTER_PUBLISH: &str = "relay.after_publish";

/// Every point, for the tests that try each with each action.
pub const POINTS: [&str; 4] = [
    AFTER_COMMIT,
    BEFORE_ANSWERS_STORED,
    PROJECTOR_AFTER_APPLY,
    RELAY_AFTER_PUBLISH,
];

/// A fail point's injected error.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("fail point {0} injected an error")]
pub struct Injected(pub &'static str);

/// Passes fail point `name`: as configured (an error, a delay, a panic), or straight through.
pub async fn point(name: &'static str) -> Result<(), Injected> {
    match configured(name) {
        None => Ok(()),
        Some(arg) => match arg.as_deref().and_then(|a| a.strip_prefix("delay:")) {
            Some(ms) => {
                let ms = ms.parse().expect("a fail point's delay is in milliseconds");
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(())
            }
            None => Err(Injected(name)),
        },
    }
}

/// The argument of point `name`'s `return` action when it fires (`Some(None)` for a bare
/// `return`); `None` when it does not fire or fail points are compiled out.
#[cfg_attr(not(feature = "failpoints"), allow(unused_variables))]
fn configured(name: &str) -> Option<Option<String>> {
    fail::fail_point!(name, Some);
    None
}
