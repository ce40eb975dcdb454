#![allow(clippy::await_holding_lock)] // each test holds fail's scenario lock across its awaits: one at a time, on purpose

//! Fail points in the windows that matter (issue 45), each tried with each action: an error, a
//! panic, and a delay that overruns the deadline (or widens the window while another instance
//! races for the same work). The fail points are the store's (`relations_store::faults`).
//!
//! A binary of its own: a fail point is global to its process, so these tests run one at a
//! time (each holds a `fail::FailScenario`, which also clears every point when it ends), away
//! from the other tests' servers.

#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;

#[allow(dead_code)]
#[path = "../api/broker.rs"]
mod broker;

mod commands;
mod readers;

/// The point fails with an error (see `relations_store::faults` for the actions).
pub const ERROR: &str = "return";
/// The point panics.
pub const PANIC: &str = "panic";

/// A delay of `ms` milliseconds.
pub fn delay(ms: u64) -> String {
    format!("return(delay:{ms})")
}
