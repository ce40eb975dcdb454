//! A projector's progress as the admin endpoint and `/readyz` report it.

use relations_store::{log, LogPosition};
use serde::Serialize;
use sqlx::PgPool;

use super::checkpoint;
use super::health::Health;
use super::log_watch::Horizon;

/// A projector's progress as the admin endpoint reports it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectorStatus {
    /// The projector's name.
    pub name: String,
    /// Its checkpoint.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub position: LogPosition,
    /// Events below the horizon not applied yet.
    pub lag_events: i64,
    /// Age of the oldest event not applied yet (0 when caught up).
    pub lag_seconds: f64,
    /// `caught_up`, `catching_up`, `failing`, `held` (committed events wait behind an open
    /// transaction longer than `RELATIONS_HELD_AFTER_MS`: see `horizon` in the admin answer), or
    /// (the in-memory graph before its load) `loading`.
    pub state: &'static str,
    /// Committed events it cannot read yet because an older transaction is open (cluster-wide:
    /// the same for every reader).
    pub held_events: i64,
    /// Age of the oldest of them.
    pub held_seconds: f64,
    /// The last error, while failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Seconds since this process's runner last finished a step, and what it found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_step: Option<(f64, String)>,
}

impl ProjectorStatus {
    /// Reads `name`'s checkpoint and lag; `health` is this process's runner, if it runs one.
    pub async fn read(
        pool: &PgPool,
        name: &str,
        health: Option<&Health>,
    ) -> Result<Self, sqlx::Error> {
        let position = checkpoint::read(pool, name).await?;
        Self::at(pool, name, position, health).await
    }

    /// The progress of a reader at `position` that keeps no checkpoint (the in-memory graph).
    pub async fn at(
        pool: &PgPool,
        name: &str,
        position: LogPosition,
        health: Option<&Health>,
    ) -> Result<Self, sqlx::Error> {
        let lag = log::lag(pool, position).await?;
        let lag_events = lag.events;
        let failing = health.is_some_and(|h| h.failures() > 0);
        Ok(Self {
            name: name.to_owned(),
            position,
            lag_events,
            lag_seconds: lag.seconds,
            held_events: 0,
            held_seconds: 0.0,
            state: if failing {
                "failing"
            } else if lag_events > 0 {
                "catching_up"
            } else {
                "caught_up"
            },
            last_error: health.and_then(|h| h.last_error()),
            last_step: health
                .and_then(|h| h.last_step())
                .map(|(ago, what)| (ago.as_secs_f64(), what)),
        })
    }

    /// The same, with what the horizon watch saw: events held, and the state `held` while they
    /// stall (a failing projector stays `failing`).
    pub fn with_horizon(mut self, horizon: &Horizon) -> Self {
        self.held_events = horizon.held.events;
        self.held_seconds = horizon.held.seconds;
        if horizon.stalled && self.state != "failing" {
            self.state = "held";
        }
        self
    }
}
