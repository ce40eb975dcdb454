//! Storage faults (issue 45, item 3), on a cluster of the test's own that syncs its writes:
//! its WAL on a small tmpfs that fills up, and its `fdatasync` failing with EIO (strace's
//! fault injection). PostgreSQL PANICs on either (it never acknowledges a commit it could not
//! make durable) and restarts, or shuts itself down when even its recovery cannot write; a
//! supervisor starts it again, as systemd or Patroni would. Meanwhile every command is
//! answered, 503 or 200, never 500; within 10 s of the fault's end commands succeed again;
//! every command whose outcome was unknown is settled by a retry under its key, and the log
//! holds exactly one follow for each command, none acknowledged lost.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::helpers::{read, spawn_with, test_config, TestApp};
use crate::owned::OwnedPostgres;

/// The fault, and how it ends.
enum Fault {
    /// A file fills what the WAL's tmpfs has left.
    DiskFull,
    /// strace makes every `fdatasync` of the server's processes (and of those they start)
    /// fail with EIO.
    SyncFails,
}

/// A fault in force; ended by [`Injected::end`].
enum Injected {
    Filler(std::path::PathBuf),
    Strace(Child),
}

impl Fault {
    fn inject(&self, pg: &OwnedPostgres) -> Injected {
        match self {
            Fault::DiskFull => {
                let filler = pg.wal_mount().join("filler");
                // dd stops at ENOSPC (its status is then a failure: expected).
                let _ = Command::new("dd")
                    .args(["if=/dev/zero", &format!("of={}", filler.display()), "bs=1M"])
                    .stderr(Stdio::null())
                    .status()
                    .unwrap();
                // And WAL to write: the segments made ahead of need are used up at once.
                // (It fails, the server PANICking: expected.)
                let burn = "CREATE TABLE wal_burn AS SELECT repeat('x', 900) FROM generate_series(1, 20000)";
                let _ = Command::new("psql")
                    .args([pg.url().as_str(), "-qc", burn])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                Injected::Filler(filler)
            }
            Fault::SyncFails => {
                let pids: Vec<String> = pg
                    .pids()
                    .into_iter()
                    .flat_map(|p| ["-p".into(), p])
                    .collect();
                let strace = Command::new("strace")
                    .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=fdatasync"])
                    .args(["-e", "inject=fdatasync:error=EIO"])
                    .args(pids)
                    .spawn()
                    .expect("strace (scripts/services.sh installs it)");
                Injected::Strace(strace)
            }
        }
    }
}

impl Injected {
    fn end(self) {
        match self {
            Injected::Filler(path) => std::fs::remove_file(path).unwrap(),
            Injected::Strace(mut strace) => {
                // SIGTERM: strace detaches from every process it traces, which go on.
                let pid = strace.id().to_string();
                Command::new("kill").arg(&pid).status().unwrap();
                strace.wait().unwrap();
            }
        }
    }
}

/// A follow of `target` by `actor` under the key `storage-{actor}-{target}`: its status (a
/// status the test does not expect is reported with its body).
async fn keyed_follow(app: &TestApp, actor: i64, target: i64) -> StatusCode {
    let key = format!("storage-{actor}-{target}");
    let (status, body) = read(app.keyed_follow(actor, target, &key).await).await;
    let expected = [StatusCode::OK, StatusCode::SERVICE_UNAVAILABLE];
    assert!(
        expected.contains(&status),
        "{actor} -> {target}: {status} {body}"
    );
    status
}

async fn under(fault: Fault) {
    let pg = OwnedPostgres::start_durable_with_wal_on_tmpfs(48);
    let mut config = test_config().await;
    config.database.database_url = pg.url();
    config.catch_up_wait_ms = 500;
    let app = Arc::new(spawn_with(config).await);
    let stop = Arc::new(AtomicBool::new(false));
    // (actor, target) -> the first answer's status.
    let first: Arc<Mutex<BTreeMap<(i64, i64), StatusCode>>> = Arc::default();
    let load: Vec<_> = (1..=4i64)
        .map(|actor| {
            let (app, stop, first) = (app.clone(), stop.clone(), first.clone());
            tokio::spawn(async move {
                let mut target = 1_000;
                while !stop.load(Ordering::Relaxed) {
                    target += 1;
                    let status = keyed_follow(&app, actor, target).await;
                    first.lock().unwrap().insert((actor, target), status);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The fault's tools and the supervisor block: off the runtime's other thread, where the
    // load goes on.
    let injected = tokio::task::block_in_place(|| fault.inject(&pg));
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        tokio::task::block_in_place(|| pg.supervise());
    }
    tokio::task::block_in_place(|| injected.end());
    let ended = Instant::now();
    // Back within 10 s of the fault's end, the supervisor starting PostgreSQL meanwhile.
    let mut probe = 0;
    loop {
        tokio::task::block_in_place(|| pg.supervise());
        probe += 1;
        if keyed_follow(&app, 9, 5_000 + probe).await == StatusCode::OK {
            break;
        }
        assert!(
            ended.elapsed() < Duration::from_secs(10),
            "not back 10 s after the fault"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }
    let first = first.lock().unwrap().clone();
    let unavailable = first
        .values()
        .filter(|s| **s == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    assert!(
        unavailable > 0,
        "the fault was never felt ({} follows)",
        first.len()
    );
    for ((actor, target), status) in &first {
        assert!(
            *status == StatusCode::OK || *status == StatusCode::SERVICE_UNAVAILABLE,
            "{actor} -> {target}: {status}"
        );
        // Every outcome settled by its key: the answer now is the one a fault-free follow gets.
        if *status != StatusCode::OK {
            let mut settled = keyed_follow(&app, *actor, *target).await;
            for _ in 0..20 {
                if settled == StatusCode::OK {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
                settled = keyed_follow(&app, *actor, *target).await;
            }
            assert_eq!(settled, StatusCode::OK, "{actor} -> {target} never settled");
        }
    }
    let logged: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT (payload->'Followed'->>'follower')::bigint, (payload->'Followed'->>'followee')::bigint, count(*)
           FROM events WHERE event_type = 'Followed' GROUP BY 1, 2",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let logged: BTreeMap<(i64, i64), i64> =
        logged.into_iter().map(|(a, t, n)| ((a, t), n)).collect();
    for edge in first.keys() {
        assert_eq!(logged.get(edge), Some(&1), "{edge:?}: once in the log");
    }
    println!(
        "{} follows ({unavailable} answered 503 first), back {:?} after the fault's end",
        first.len(),
        ended.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_wal_disk_is_503_then_back_within_10_s_losing_nothing_acknowledged() {
    under(Fault::DiskFull).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fdatasync_failing_with_eio_is_503_then_back_within_10_s_losing_nothing_acknowledged() {
    under(Fault::SyncFails).await;
}
