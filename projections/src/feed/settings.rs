//! The feed's tunables (`RELATIONS_BIG_V_THRESHOLD`, `RELATIONS_FEED_INBOX_CAP`).

/// How the feed pushes and caps; every process that runs or rebuilds the projector needs the
/// same values.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Authors with at least this many followers are pulled.
    pub big_v_threshold: i64,
    /// Entries kept per inbox.
    pub inbox_cap: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            big_v_threshold: 5000,
            inbox_cap: 1000,
        }
    }
}
