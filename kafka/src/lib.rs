//! The relations service's Kafka side: the relay that publishes the event log to a topic
//! ([`relay`]), and projectors that consume that topic as one consumer group ([`consumer`]).
//!
//! Depends on the store (the log and its envelope) and the projections (the projector contract
//! and its runtime); never on the web layer. The write side never depends on Kafka: the log in
//! PostgreSQL is the source of truth and the topic is a fold of it.

pub mod consumer;
pub mod relay;

pub use consumer::{Coordinator, KafkaProjector};
pub use relay::{ensure_topic, KafkaSettings, Relay};
