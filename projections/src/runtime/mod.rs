//! What every projector runs on, whatever its read model: the [`Projector`] contract, the
//! runner that applies batches under its checkpoint, wake-ups, health, progress reports,
//! read-your-writes waits, rebuilds and verification.

pub mod checkpoint;
pub mod copy_out;
pub mod health;
pub mod log_watch;
pub mod projector;
pub mod rebuild;
pub mod runner;
pub mod shared_log;
pub mod status;
pub mod tail;
pub mod verify;
pub mod wait;
pub mod wakeup;

pub use health::Health;
pub use log_watch::{Horizon, LogView, LogWatch, MemoryReader};
pub use projector::Projector;
pub use runner::{Runner, Step};
pub use shared_log::SharedLog;
pub use status::ProjectorStatus;
pub use tail::{AfterFailure, Backoff, LogTail, Progress, TailLoop};
pub use wait::wait_for;
pub use wakeup::Wakeup;
