//! `relations replay --format parquet --out DIR`: the log as Parquet files, one directory per
//! day of `occurred_at` (UTC, Hive style: `DIR/date=2026-11-24/`), rows in log order.
//!
//! Incremental: `DIR/_position` holds the position of the last event written (`"{tx}.{gp}"`);
//! a run appends only the events after it, as one new file per day it touches, named after the
//! run's first event (`part-{transaction_id:020}-{global_position:020}.parquet`, so names sort
//! in log order within a day). Atomic: each file is written under a temporary name and renamed
//! only when every file of the run is complete; `_position` is replaced (also by rename) last.
//! A run that died midway leaves temporary files and perhaps some renamed files named after
//! `_position`; the next run removes both before it starts, so every row is written once.
//!
//! Erasure (issue 25): content whose author's key is gone is null, as in JSON lines. Files
//! written before an erasure hold the content in plain text; a run that meets `UserErased`
//! events rewrites every earlier file holding the erased users' content with it null and
//! `erased` true (atomically as well), so the directory forgets as the log does, at the next run.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use chrono::NaiveDate;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use relations_store::log::{self, RecordedEvent, Replay, CONTENT_TYPES};
use relations_store::{Keyring, LogPosition};
use sqlx::PgConnection;

use super::columns;

/// The file holding the position of the last event written.
const POSITION: &str = "_position";

/// What a run wrote.
#[derive(Debug)]
pub struct Written {
    /// Events appended.
    pub events: u64,
    /// Earlier files rewritten without erased users' content.
    pub forgotten: usize,
}

/// Appends to `root` every event committed after its `_position` (everything, the first time).
pub async fn run(conn: &mut PgConnection, keys: &Keyring, root: &Path) -> anyhow::Result<Written> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let after = committed(root)?;
    let mut replay = Replay::start(conn, after, Duration::from_secs(60)).await?;
    let mut run = Run::new(root);
    while let Some(mut batch) = replay.next_batch(conn).await? {
        log::reveal(keys, &mut batch).await?;
        run.write(&batch)?;
    }
    run.finish()
}

/// The position `root`'s files hold everything up to, after removing what a run that died
/// midway left (temporary files, and files named after that position).
fn committed(root: &Path) -> anyhow::Result<LogPosition> {
    let after = match std::fs::read_to_string(root.join(POSITION)) {
        Ok(text) => text
            .trim()
            .parse()
            .with_context(|| format!("{} is not a position", root.join(POSITION).display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LogPosition::START,
        Err(e) => return Err(e.into()),
    };
    for (path, named) in files(root)? {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        // Only what a run writes: a file someone else put there is not ours to remove.
        let leftover = match named {
            Some(first) => first > after,
            None => name.starts_with(".part-") && name.ends_with(".parquet.tmp"),
        };
        if leftover {
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the leftover {}", path.display()))?;
        }
    }
    Ok(after)
}

/// Every file in `root`'s day directories, with the position its name starts from (`None`
/// for a temporary or unknown file).
fn files(root: &Path) -> anyhow::Result<Vec<(PathBuf, Option<LogPosition>)>> {
    let mut found = Vec::new();
    for day in std::fs::read_dir(root)? {
        let day = day?.path();
        let is_day = day
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("date="));
        if !is_day || !day.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&day)? {
            let path = file?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            found.push((path.clone(), first_of(name)));
        }
    }
    found.sort();
    Ok(found)
}

/// The file name of a run's file whose first event is at `first`.
fn file_name(first: LogPosition) -> String {
    format!(
        "part-{:020}-{:020}.parquet",
        first.transaction_id, first.global_position
    )
}

/// The position a file name of [`file_name`]'s form starts from.
fn first_of(name: &str) -> Option<LogPosition> {
    let (tx, pos) = name
        .strip_prefix("part-")?
        .strip_suffix(".parquet")?
        .split_once('-')?;
    let position = LogPosition {
        transaction_id: tx.parse().ok()?,
        global_position: pos.parse().ok()?,
    };
    (file_name(position) == name).then_some(position)
}

/// Snappy pages, and the files' rows declared sorted by the pair (they are: log order).
fn properties() -> WriterProperties {
    let sorted = |column: &str| SortingColumn {
        column_idx: columns::index(column) as i32,
        descending: false,
        nulls_first: false,
    };
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_sorting_columns(Some(vec![
            sorted("transaction_id"),
            sorted("global_position"),
        ]))
        .build()
}

/// Writes `batches` to `path` under a temporary name; the temporary path, synced to disk.
fn write_temporary(path: &Path, batches: &[RecordBatch]) -> anyhow::Result<PathBuf> {
    let temporary = temporary(path);
    let mut writer = ArrowWriter::try_new(
        File::create(&temporary)?,
        columns::schema(),
        Some(properties()),
    )?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.into_inner()?.sync_all()?;
    Ok(temporary)
}

/// Where `path` is written before it is renamed into place: a hidden name, which DuckDB's
/// `*.parquet`, pyarrow (pandas, Polars) and Spark all pass over.
fn temporary(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.tmp"))
}

/// One run: a temporary file per day it touches, renamed into place at the end.
struct Run<'r> {
    root: &'r Path,
    /// The run's first event, which names its files.
    first: Option<LogPosition>,
    /// Its last event, `_position` when it is done.
    last: Option<LogPosition>,
    days: BTreeMap<NaiveDate, (PathBuf, ArrowWriter<File>)>,
    /// Users erased by the run's events.
    erased: BTreeSet<i64>,
    events: u64,
}

impl<'r> Run<'r> {
    fn new(root: &'r Path) -> Self {
        Self {
            root,
            first: None,
            last: None,
            days: BTreeMap::new(),
            erased: BTreeSet::new(),
            events: 0,
        }
    }

    /// Appends `batch` (revealed, in log order) to its days' files.
    fn write(&mut self, batch: &[RecordedEvent]) -> anyhow::Result<()> {
        let (Some(head), Some(tail)) = (batch.first(), batch.last()) else {
            return Ok(());
        };
        let first = *self.first.get_or_insert(head.position);
        self.last = Some(tail.position);
        let mut by_day: BTreeMap<NaiveDate, Vec<&RecordedEvent>> = BTreeMap::new();
        for event in batch {
            by_day
                .entry(event.occurred_at.date_naive())
                .or_default()
                .push(event);
            if let Some(user) = relations_projections::runtime::projector::erased_user(event) {
                self.erased.insert(user);
            }
        }
        for (day, events) in by_day {
            let (_, writer) = match self.days.entry(day) {
                std::collections::btree_map::Entry::Occupied(open) => open.into_mut(),
                std::collections::btree_map::Entry::Vacant(new) => {
                    let dir = self.root.join(format!("date={day}"));
                    std::fs::create_dir_all(&dir)?;
                    let path = dir.join(file_name(first));
                    let file = File::create(temporary(&path))?;
                    let writer = ArrowWriter::try_new(file, columns::schema(), Some(properties()))?;
                    new.insert((path, writer))
                }
            };
            writer.write(&columns::batch(&events)?)?;
            self.events += events.len() as u64;
        }
        Ok(())
    }

    /// Completes the run: every file synced, earlier files rid of erased content, the run's
    /// files renamed into place, and `_position` moved to the run's last event.
    fn finish(self) -> anyhow::Result<Written> {
        let mut done = Vec::new();
        for (path, writer) in self.days.into_values() {
            writer.into_inner()?.sync_all()?;
            done.push(path);
        }
        let forgotten = forget(self.root, &self.erased)?;
        for path in &done {
            std::fs::rename(temporary(path), path)?;
        }
        if let Some(last) = self.last {
            let position = self.root.join(POSITION);
            std::fs::write(temporary(&position), format!("{last}\n"))?;
            File::open(temporary(&position))?.sync_all()?;
            std::fs::rename(temporary(&position), &position)?;
        }
        Ok(Written {
            events: self.events,
            forgotten,
        })
    }
}

/// Rewrites every file of `root` (earlier runs': this run's are still temporary) that holds
/// content of an `erased` author with that content null and `erased` true; how many it rewrote.
fn forget(root: &Path, erased: &BTreeSet<i64>) -> anyhow::Result<usize> {
    if erased.is_empty() {
        return Ok(0);
    }
    let mut rewritten = 0;
    for (path, first) in files(root)? {
        if first.is_none() || !names_an_author(&path, erased)? {
            continue;
        }
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path)?)?.build()?;
        let batches = reader.collect::<Result<Vec<_>, _>>()?;
        let mut changed = false;
        let batches = batches
            .into_iter()
            .map(|batch| {
                let (batch, forgot) = without_content(batch, erased)?;
                changed |= forgot;
                Ok(batch)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        if changed {
            let temporary = write_temporary(&path, &batches)?;
            std::fs::rename(temporary, &path)?;
            rewritten += 1;
        }
    }
    Ok(rewritten)
}

/// Whether the file at `path` holds a post or comment by an `erased` author: reads only the
/// `type` and `author` columns, so a run after an erasure reads a fraction of the directory.
fn names_an_author(path: &Path, erased: &BTreeSet<i64>) -> anyhow::Result<bool> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let leaves = [columns::index("type"), columns::index("author")];
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    for batch in builder.with_projection(mask).build()? {
        let batch = batch?;
        let types = batch.column(0).as_string::<i32>();
        let authors = batch.column(1).as_primitive::<Int64Type>();
        let named = (0..batch.num_rows()).any(|row| {
            authors.is_valid(row)
                && erased.contains(&authors.value(row))
                && CONTENT_TYPES.contains(&types.value(row))
        });
        if named {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `batch` with the content of `erased` authors null and `erased` true; whether any was there.
fn without_content(
    batch: RecordBatch,
    erased: &BTreeSet<i64>,
) -> anyhow::Result<(RecordBatch, bool)> {
    let types = batch.column(columns::index("type")).as_string::<i32>();
    let authors = batch
        .column(columns::index("author"))
        .as_primitive::<Int64Type>();
    let content = batch.column(columns::index("content")).as_string::<i32>();
    let gone: Vec<bool> = (0..batch.num_rows())
        .map(|row| {
            CONTENT_TYPES.contains(&types.value(row))
                && authors.is_valid(row)
                && erased.contains(&authors.value(row))
        })
        .collect();
    if !gone
        .iter()
        .zip(0..)
        .any(|(&g, row)| g && content.is_valid(row))
    {
        return Ok((batch, false));
    }
    let flags = batch.column(columns::index("erased")).as_boolean();
    let content: StringArray = (0..batch.num_rows())
        .map(|row| (!gone[row] && content.is_valid(row)).then(|| content.value(row)))
        .collect();
    let flags: BooleanArray = (0..batch.num_rows())
        .map(|row| match gone[row] {
            true => Some(true),
            false => flags.is_valid(row).then(|| flags.value(row)),
        })
        .collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[self::columns::index("content")] = std::sync::Arc::new(content);
    columns[self::columns::index("erased")] = std::sync::Arc::new(flags);
    Ok((RecordBatch::try_new(batch.schema(), columns)?, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn file_names_sort_in_log_order_and_read_back() {
        let a = LogPosition {
            transaction_id: 320_569,
            global_position: 2,
        };
        let b = LogPosition {
            transaction_id: 320_569,
            global_position: 10,
        };
        assert!(file_name(a) < file_name(b));
        assert_eq!(first_of(&file_name(b)), Some(b));
        let hidden = temporary(Path::new(&file_name(b)));
        assert_eq!(first_of(hidden.to_str().unwrap()), None);
        assert!(hidden.to_str().unwrap().starts_with(".part-"));
        assert_eq!(first_of("part-1-2.parquet"), None);
    }

    /// An event at `(tx, gp)` that occurred `day` days after 2023-11-14 (UTC).
    fn at(tx: i64, gp: i64, day: i64, stream_type: &str, kind: &str, data: Value) -> RecordedEvent {
        let occurred = 1_700_000_000_000_000 + day * 86_400_000_000;
        RecordedEvent::from_stored(
            uuid::Uuid::new_v4(),
            LogPosition {
                transaction_id: tx,
                global_position: gp,
            },
            (stream_type, "s", 1),
            (kind, "1"),
            chrono::DateTime::from_timestamp_micros(occurred).unwrap(),
            &serde_json::json!({ kind: data }),
            &serde_json::json!({"request_id": "r", "actor": "3"}),
        )
        .expect("an event of the log")
    }

    /// (day directory, file name, rows, contents) of every Parquet file under `root`.
    fn read_back(root: &Path) -> Vec<(String, String, usize, Vec<Option<String>>)> {
        let mut found = Vec::new();
        for (path, named) in files(root).unwrap() {
            assert!(named.is_some(), "only whole files: {}", path.display());
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                .unwrap()
                .build()
                .unwrap();
            let (mut rows, mut contents) = (0, Vec::new());
            for batch in reader {
                let batch = batch.unwrap();
                rows += batch.num_rows();
                let content = batch.column(columns::index("content")).as_string::<i32>();
                contents.extend(
                    (0..batch.num_rows())
                        .map(|r| content.is_valid(r).then(|| content.value(r).to_owned())),
                );
            }
            let day = path.parent().unwrap().file_name().unwrap();
            let name = path.file_name().unwrap();
            found.push((
                day.to_string_lossy().into(),
                name.to_string_lossy().into(),
                rows,
                contents,
            ));
        }
        found
    }

    #[test]
    fn runs_split_by_day_append_after_the_position_and_forget_erased_content() {
        let root = std::env::temp_dir().join(format!("relations-parquet-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        let post = |tx, day, author: i64, words: &str| {
            let id = format!("0190a1b2-c3d4-7e5f-8a9b-{tx:012}");
            let data = serde_json::json!({"post_id": id, "author": author, "content": words,
                "erased": false, "created_at": "2023-11-14T22:13:20Z", "visibility": "public"});
            at(tx, tx, day, "post", "PostPublished", data)
        };
        let follow = |tx, day| {
            at(
                tx,
                tx,
                day,
                "relation",
                "Followed",
                serde_json::json!({"follower": 1, "followee": 2}),
            )
        };
        let mut run = Run::new(&root);
        run.write(&[
            follow(10, 0),
            post(11, 0, 7, "seven"),
            post(12, 1, 8, "eight"),
        ])
        .unwrap();
        run.finish().unwrap();
        assert_eq!(
            committed(&root).unwrap(),
            LogPosition {
                transaction_id: 12,
                global_position: 12
            }
        );
        let first = read_back(&root);
        assert_eq!(
            first
                .iter()
                .map(|f| (f.0.as_str(), f.2))
                .collect::<Vec<_>>(),
            [("date=2023-11-14", 2), ("date=2023-11-15", 1)]
        );

        // A dead run's leftovers, then a run that erases 7: new rows in a new file per day,
        // and 7's words gone from the first run's file.
        let day = root.join("date=2023-11-15");
        std::fs::write(day.join(".part-x.parquet.tmp"), b"half").unwrap();
        std::fs::write(
            day.join(file_name(LogPosition {
                transaction_id: 99,
                global_position: 1,
            })),
            b"half",
        )
        .unwrap();
        std::fs::write(day.join("notes.txt"), b"not ours").unwrap();
        assert_eq!(committed(&root).unwrap().transaction_id, 12);
        assert!(day.join("notes.txt").exists(), "another's file stays");
        std::fs::remove_file(day.join("notes.txt")).unwrap();
        let mut run = Run::new(&root);
        let erase = at(
            13,
            13,
            1,
            "account",
            "UserErased",
            serde_json::json!({"user": 7}),
        );
        run.write(&[erase, follow(14, 2)]).unwrap();
        let written = run.finish().unwrap();
        assert_eq!((written.events, written.forgotten), (2, 1));
        let second = read_back(&root);
        let summary: Vec<(&str, usize, &[Option<String>])> = second
            .iter()
            .map(|f| (f.0.as_str(), f.2, f.3.as_slice()))
            .collect();
        assert_eq!(
            summary,
            [
                ("date=2023-11-14", 2, &[None, None][..]),
                ("date=2023-11-15", 1, &[Some("eight".to_owned())][..]),
                ("date=2023-11-15", 1, &[None][..]),
                ("date=2023-11-16", 1, &[None][..]),
            ]
        );
        assert_eq!(
            second[2].1,
            file_name(LogPosition {
                transaction_id: 13,
                global_position: 13
            })
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
