//! The relations service's HTTP API (axum) and command line.
//!
//! Routes call the store for commands and read models for queries; they hold no business rule.
//! Configuration is read once here (`config`) and handed down; library crates never read the
//! environment.

pub mod auth;
pub mod cli;
pub mod config;
pub mod error;
pub mod extract;
pub mod jwt;
pub mod metrics;
pub mod openapi;
pub mod outcome;
pub mod rate_limit;
pub mod routes;
pub mod serve;
pub mod startup;
pub mod state;
pub mod stream_slots;
pub mod telemetry;

pub use routes::app;
pub use startup::Application;
