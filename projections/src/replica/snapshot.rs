//! The graph's snapshot (issue 48, item 2): what lets an instance start in seconds. The
//! replica writes its graph to a file now and then, with the log position it reflects; a
//! starting instance restores the graph from it instead of reading `rm_follows`, and the tail
//! replays the log from that position as from any checkpoint.
//!
//! A snapshot is a cache, never the truth. It is used only when the log still holds, at its
//! position, the event it names (so a snapshot of another database, or one newer than a
//! restored backup, is not), when its format is this build's and when its checksum holds;
//! otherwise the graph is loaded from the read model as before. It holds ids, edges, times,
//! mutes and follow preferences, never content, and it is written again soon after an erasure,
//! so that an erased user's edges leave the disk as they leave memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use relations_domain::{AccountEvent, LogEvent};
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};

use crate::relations::memory::RelationsMemory;

/// What the file begins with.
const MAGIC: [u8; 8] = *b"relgraph";
/// The image's format: raised whenever [`RelationsMemory`]'s fields or its fold change, so
/// that a snapshot of an older build is loaded from the read model instead.
const FORMAT: u32 = 3;
/// The file's name in the snapshot directory.
const FILE: &str = "graph.snapshot";
/// How soon after an erasure the snapshot is written again.
const AFTER_ERASURE: Duration = Duration::from_secs(5);

/// Where snapshots are kept and how often they are written (`RELATIONS_GRAPH_SNAPSHOT_DIR`,
/// `RELATIONS_GRAPH_SNAPSHOT_EVERY_S`).
#[derive(Debug, Clone)]
pub struct SnapshotConfig {
    /// The directory (created if missing).
    pub dir: PathBuf,
    /// How often a new one is written while the graph moves.
    pub every: Duration,
}

/// What precedes the image.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    magic: [u8; 8],
    format: u32,
    /// The position the graph reflects.
    transaction_id: i64,
    global_position: i64,
    /// The event at that position (none at the log's start).
    event: Option<uuid::Uuid>,
    /// The image's length and its XXH3 hash.
    length: u64,
    hash: u64,
}

/// A snapshot read from disk, not yet checked against the log.
pub(super) struct Snapshot {
    position: LogPosition,
    event: Option<uuid::Uuid>,
    graph: RelationsMemory,
}

impl Snapshot {
    /// The graph, if the log holds the snapshot's event at its position (read in the load's
    /// transaction, so the load and the check see one log).
    pub(super) async fn check(
        self,
        tx: &mut PgConnection,
    ) -> Result<Option<RelationsMemory>, sqlx::Error> {
        let of_this_log = match self.position == LogPosition::START {
            true => self.event.is_none(),
            false => {
                let found = log::event_at(&mut *tx, self.position).await?;
                found.is_some() && found == self.event
            }
        };
        if !of_this_log {
            tracing::warn!(position = %self.position, "the graph's snapshot is not of this log: loading from the read model");
            metrics::counter!("relations_graph_snapshots_refused_total").increment(1);
            return Ok(None);
        }
        Ok(Some(self.graph.restored(self.position)))
    }
}

/// How old a temporary file must be to be taken for one a stopped write left behind.
const ABANDONED: Duration = Duration::from_secs(600);

/// Removes the temporary files of writes that a stop cut short (older than [`ABANDONED`]:
/// another instance sharing the directory may be writing its own now).
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let temporary = name.starts_with(&format!("{FILE}.")) && name.ends_with(".tmp");
        let modified = entry.metadata().and_then(|m| m.modified());
        let old = modified.is_ok_and(|m| m.elapsed().is_ok_and(|age| age >= ABANDONED));
        if temporary && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads the snapshot in `dir`; `None` (and why, logged) when there is none or it is not
/// whole or not of this build. Runs on a blocking thread: it reads and decodes the whole file,
/// and sweeps away what stopped writes left.
pub(super) async fn read(dir: &Path) -> Option<Snapshot> {
    let (path, swept) = (dir.join(FILE), dir.to_owned());
    let read = tokio::task::spawn_blocking(move || {
        sweep(&swept);
        decode(&std::fs::read(&path)?)
    });
    match read.await {
        Ok(Ok(snapshot)) => Some(snapshot),
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::NotFound => None,
        Ok(Err(error)) => {
            tracing::warn!(%error, "the graph's snapshot cannot be used: loading from the read model");
            metrics::counter!("relations_graph_snapshots_refused_total").increment(1);
            None
        }
        Err(error) => {
            tracing::error!(%error, "reading the graph's snapshot failed");
            None
        }
    }
}

fn invalid(why: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

fn decode(bytes: &[u8]) -> std::io::Result<Snapshot> {
    let (header, image): (Header, &[u8]) = postcard::take_from_bytes(bytes).map_err(invalid)?;
    if header.magic != MAGIC || header.format != FORMAT {
        return Err(invalid(format!(
            "format {} (this build's: {FORMAT})",
            header.format
        )));
    }
    if image.len() as u64 != header.length || xxhash_rust::xxh3::xxh3_64(image) != header.hash {
        return Err(invalid("its checksum does not hold"));
    }
    let graph = postcard::from_bytes(image).map_err(invalid)?;
    Ok(Snapshot {
        position: LogPosition {
            transaction_id: header.transaction_id,
            global_position: header.global_position,
        },
        event: header.event,
        graph,
    })
}

/// Writes `graph`, as of `position` (the event `event`), into `dir`: to a temporary file,
/// synced, then renamed over the last one, so a reader finds a whole snapshot or the previous
/// one. Its size in bytes.
fn write(
    dir: &Path,
    position: LogPosition,
    event: Option<uuid::Uuid>,
    graph: &RelationsMemory,
) -> std::io::Result<u64> {
    let image = postcard::to_stdvec(graph).map_err(invalid)?;
    let header = Header {
        magic: MAGIC,
        format: FORMAT,
        transaction_id: position.transaction_id,
        global_position: position.global_position,
        event,
        length: image.len() as u64,
        hash: xxhash_rust::xxh3::xxh3_64(&image),
    };
    let header = postcard::to_stdvec(&header).map_err(invalid)?;
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(&header)?;
    file.write_all(&image)?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join(FILE))?;
    Ok((header.len() + image.len()) as u64)
}

/// When the live replica writes its snapshot: at its first install, every `every` while the
/// graph moves, and soon after an erasure. One write at a time, on a blocking thread, from a
/// copy taken between batches (so readers never wait for it, and the tail only for the copy).
pub(super) struct Writer {
    config: SnapshotConfig,
    /// When the last write began; `None` before the first.
    last: Option<Instant>,
    /// The position last written.
    written: Option<LogPosition>,
    /// When an erasure was applied that no write has covered yet.
    erased: Option<Instant>,
    writing: Option<tokio::task::JoinHandle<()>>,
}

impl Writer {
    /// A writer for a replica whose graph was restored from the snapshot at `restored`, if
    /// it was (that one is not written again).
    pub(super) fn new(config: SnapshotConfig, restored: Option<LogPosition>) -> Self {
        Self {
            config,
            last: None,
            written: restored,
            erased: None,
            writing: None,
        }
    }

    /// Notes a batch the replica applied.
    pub(super) fn applied(&mut self, events: &[RecordedEvent]) {
        let erasure = |e: &RecordedEvent| {
            matches!(e.event, LogEvent::Account(AccountEvent::UserErased { .. }))
        };
        if self.erased.is_none() && events.iter().any(erasure) {
            self.erased = Some(Instant::now());
        }
    }

    /// Whether a write is due for a graph at `position`.
    fn due(&self, position: LogPosition) -> bool {
        if self.writing.as_ref().is_some_and(|w| !w.is_finished()) {
            return false;
        }
        // A graph at the log's start holds nothing worth keeping.
        if self.written == Some(position) || position == LogPosition::START {
            return false;
        }
        let erasure = self.erased.is_some_and(|at| at.elapsed() >= AFTER_ERASURE);
        let periodic = self.last.is_none_or(|at| at.elapsed() >= self.config.every);
        erasure || periodic
    }

    /// Writes the graph if a write is due: `copy` gives its position and a copy of it.
    pub(super) fn maybe_write(
        &mut self,
        pool: &PgPool,
        position: LogPosition,
        copy: impl FnOnce() -> Option<(LogPosition, RelationsMemory)>,
    ) {
        if !self.due(position) {
            return;
        }
        let Some((position, graph)) = copy() else {
            return;
        };
        (self.last, self.written, self.erased) = (Some(Instant::now()), Some(position), None);
        let (pool, dir) = (pool.clone(), self.config.dir.clone());
        self.writing = Some(tokio::spawn(async move {
            let started = Instant::now();
            let event = match position == LogPosition::START {
                true => Ok(None),
                false => log::event_at(&pool, position).await,
            };
            let event = match event {
                // A position is an event's, or the start: none there means another log.
                Ok(None) if position != LogPosition::START => {
                    tracing::warn!(%position, "no event at the graph's position: no snapshot written");
                    return;
                }
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(%error, "the graph's snapshot was not written");
                    return;
                }
            };
            let written =
                tokio::task::spawn_blocking(move || write(&dir, position, event, &graph)).await;
            match written {
                Ok(Ok(bytes)) => {
                    metrics::counter!("relations_graph_snapshots_total").increment(1);
                    metrics::gauge!("relations_graph_snapshot_bytes").set(bytes as f64);
                    tracing::info!(%position, bytes, elapsed = ?started.elapsed(), "graph snapshot written");
                }
                Ok(Err(error)) => tracing::warn!(%error, "the graph's snapshot was not written"),
                Err(error) => tracing::error!(%error, "writing the graph's snapshot failed"),
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_removes_only_old_temporary_files() {
        let dir = std::env::temp_dir().join(format!("relations-sweep-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, age: Duration| {
            let path = dir.join(name);
            let f = std::fs::File::create(&path).unwrap();
            f.set_modified(std::time::SystemTime::now() - age).unwrap();
            path
        };
        let old = file("graph.snapshot.17.tmp", ABANDONED * 2);
        let fresh = file("graph.snapshot.18.tmp", Duration::ZERO);
        let snapshot = file(FILE, ABANDONED * 2);
        let other = file("notes.tmp", ABANDONED * 2);
        sweep(&dir);
        assert!(!old.exists(), "an abandoned write is removed");
        assert!(fresh.exists() && snapshot.exists() && other.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
