//! The rules a command is decided against beyond its own stream, each a [`Guard`] that plugs
//! into the executor: what it locks and reads in the group's transaction, what each decision
//! changes of it, and what it writes back.
//!
//! [`Guard`]: crate::executor::Guard

pub(crate) mod erasure;
pub(crate) mod follows;
pub(crate) mod lists;
pub(crate) mod pairs;
