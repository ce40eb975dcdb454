//! A runner's health as this process sees it: consecutive failures, the last error, and the
//! last step and the position it reached, shared with the admin endpoint, `/readyz` and
//! `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use relations_store::LogPosition;

/// A runner's health, shared with the admin endpoint and `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
    failing_since: Mutex<Option<Instant>>,
    /// When the last step (of any outcome) ended, and what it was.
    last_step: Mutex<Option<(Instant, String)>>,
    /// Where the reader last stood in the log, as it stepped: `/metrics` reads it from memory.
    position: Mutex<Option<LogPosition>>,
}

impl Health {
    /// Consecutive failed steps (0 when the last step succeeded).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The last error, while failing.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("not poisoned").clone()
    }

    /// How long it has been failing without a success.
    pub fn failing_for(&self) -> Option<Duration> {
        self.failing_since
            .lock()
            .expect("not poisoned")
            .map(|t| t.elapsed())
    }

    /// How long ago the last step ended, and its outcome.
    pub fn last_step(&self) -> Option<(Duration, String)> {
        self.last_step
            .lock()
            .expect("not poisoned")
            .as_ref()
            .map(|(t, what)| (t.elapsed(), what.clone()))
    }

    /// Records that a step ended with `what`.
    pub fn stepped(&self, what: String) {
        *self.last_step.lock().expect("not poisoned") = Some((Instant::now(), what));
    }

    /// Where the reader last stood, as it last published (`None` before its first step).
    pub fn position(&self) -> Option<LogPosition> {
        *self.position.lock().expect("not poisoned")
    }

    /// Publishes where the reader stands now (a position never moves back: a stale look
    /// published late cannot undo a newer one).
    pub fn at(&self, position: LogPosition) {
        let mut at = self.position.lock().expect("not poisoned");
        if at.is_none_or(|at| at < position) {
            *at = Some(position);
        }
    }

    /// Records a successful step: no longer failing.
    pub fn succeeded(&self) {
        self.failures.store(0, Ordering::Relaxed);
        *self.last_error.lock().expect("not poisoned") = None;
        *self.failing_since.lock().expect("not poisoned") = None;
    }

    /// Records a failed step.
    pub fn failed(&self, error: &dyn std::fmt::Display) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().expect("not poisoned") = Some(error.to_string());
        self.failing_since
            .lock()
            .expect("not poisoned")
            .get_or_insert_with(Instant::now);
    }
}
