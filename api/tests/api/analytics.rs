//! The analysts' path (issue 29): `relations replay --format parquet`, read by DuckDB (the PyPI
//! wheel, `scripts/duckdb.sh`) with docs/analytics.md's own SQL, checked against the service's
//! follower counts; the incremental run against one run over the whole log.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{moment, relations, rfc3339, run_relations, spawn_app, TestApp};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's Python, with DuckDB: made once per test run by `scripts/duckdb.sh`.
fn duckdb_python() -> PathBuf {
    static MADE: OnceLock<()> = OnceLock::new();
    MADE.get_or_init(|| {
        let status = Command::new(root().join("scripts/duckdb.sh"))
            .status()
            .expect("scripts/duckdb.sh runs");
        assert!(status.success(), "scripts/duckdb.sh failed");
    });
    root().join("target/duckdb-venv/bin/python")
}

/// Runs `load`, then each (query, parameters), in DuckDB in `dir`; each query's rows.
fn duckdb(dir: &Path, load: &str, queries: &[(&str, Value)]) -> Vec<Vec<Vec<Value>>> {
    const PROGRAM: &str = r#"
import duckdb, json, sys
request = json.load(sys.stdin)
con = duckdb.connect()
con.execute(request["load"])
answers = [[list(row) for row in con.execute(q["sql"], q["params"]).fetchall()]
           for q in request["queries"]]
json.dump(answers, sys.stdout, default=str)
"#;
    let request = json!({
        "load": load,
        "queries": queries.iter().map(|(sql, params)| json!({"sql": sql, "params": params})).collect::<Vec<_>>(),
    });
    let mut child = Command::new(duckdb_python())
        .args(["-c", PROGRAM])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &request).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// docs/analytics.md's SQL blocks, in order: the load block, then the three queries.
fn documented_sql() -> Vec<String> {
    let page = std::fs::read_to_string(root().join("docs/analytics.md")).unwrap();
    let blocks: Vec<String> = page
        .split("```sql\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap().to_owned())
        .collect();
    assert_eq!(blocks.len(), 4, "a load block and three queries");
    blocks
}

/// A fresh directory under target/ holding `analytics/` (as the page's load block names it).
fn workdir(name: &str) -> PathBuf {
    let dir = root()
        .join("target/analytics-tests")
        .join(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `relations replay --format parquet --out DIR`.
fn replay_parquet(app: &TestApp, out: &Path) {
    relations(
        app,
        &[
            "replay",
            "--format",
            "parquet",
            "--out",
            out.to_str().unwrap(),
        ],
    );
}

/// Relation commands in order, each of which must succeed; the last one's position.
async fn commands(app: &TestApp, steps: &[(&str, i64, i64)], last: &mut String) {
    for &(verb, actor, target) in steps {
        let (status, body) = app.command(verb, actor, target).await;
        assert_eq!(status, StatusCode::OK, "{verb} {actor} {target}: {body}");
        *last = body["position"].as_str().unwrap().to_owned();
    }
}

/// Each user's follower count from the service, once it has read up to `position`.
async fn followers(app: &TestApp, users: &[i64], position: &str) -> Vec<i64> {
    let mut counts = Vec::new();
    for &user in users {
        let path = format!("/api/v1/users/{user}/counts?min_position={position}");
        let (status, body) = app.get_as(999, &path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        counts.push(body["followers"].as_i64().unwrap());
    }
    counts
}

fn int(value: &Value) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not an integer: {value}"))
}

#[tokio::test]
async fn documented_queries_over_the_parquet_log_agree_with_the_read_models() {
    let app = spawn_app().await;
    let mut last = String::new();
    // Growth of user 1, with an unfollow and an erased follower (whose post is then unreadable).
    let growth = (2..=7).map(|f| ("follow", f, 1)).collect::<Vec<_>>();
    commands(&app, &growth, &mut last).await;
    commands(&app, &[("unfollow", 3, 1)], &mut last).await;
    app.publish(4, "words of four").await;
    app.publish(5, "words of five").await;
    let (status, _) = app.erase_me(4).await;
    assert_eq!(status, StatusCode::OK);

    // The window: 10 gains 5, 12 gains 4 and loses 1, 11 gains 2, 13 and 1 gain 1 each.
    let candidates = [1, 10, 11, 12, 13];
    let since = moment().await;
    let before = followers(&app, &candidates, &last).await;
    let mut window: Vec<(&str, i64, i64)> = (20..=24).map(|f| ("follow", f, 10)).collect();
    window.extend((20..=23).map(|f| ("follow", f, 12)));
    window.extend([("unfollow", 20, 12), ("follow", 20, 11), ("follow", 21, 11)]);
    window.extend([("follow", 22, 13), ("follow", 25, 1)]);
    commands(&app, &window, &mut last).await;
    let until = moment().await;
    let after = followers(&app, &candidates, &last).await;
    // After the window 13 gains four more: a query that ignored the window would rank it.
    let later: Vec<(&str, i64, i64)> = (26..=29).map(|f| ("follow", f, 13)).collect();
    commands(&app, &later, &mut last).await;

    // A block wave against 40 and 41 (and 51, who has no followers), then unfollows.
    let wave_users = [40, 41, 51];
    let mut setup: Vec<(&str, i64, i64)> = (30..=35).map(|f| ("follow", f, 40)).collect();
    setup.extend((30..=33).map(|f| ("follow", f, 41)));
    commands(&app, &setup, &mut last).await;
    let wave_start = moment().await;
    let c0 = followers(&app, &wave_users, &last).await;
    let wave = [
        ("block", 30, 40),
        ("block", 31, 40),
        ("block", 32, 41),
        ("block", 50, 51),
    ];
    commands(&app, &wave, &mut last).await;
    let wave_end = moment().await;
    let c1 = followers(&app, &wave_users, &last).await;
    let churn = [
        ("unfollow", 33, 40),
        ("unfollow", 34, 40),
        ("unfollow", 33, 41),
    ];
    commands(&app, &churn, &mut last).await;
    let end = moment().await;
    let c2 = followers(&app, &wave_users, &last).await;
    let now = followers(&app, &[1], &last).await[0];

    let dir = workdir("queries");
    replay_parquet(&app, &dir.join("analytics"));
    let sql = documented_sql();
    let answers = duckdb(
        &dir,
        &sql[0],
        &[
            (&sql[1], json!({"user": 1})),
            (
                &sql[2],
                json!({"since": rfc3339(since), "until": rfc3339(until), "top": 3}),
            ),
            (
                &sql[3],
                json!({"wave_start": rfc3339(wave_start), "wave_end": rfc3339(wave_end), "until": rfc3339(end)}),
            ),
            (
                "SELECT count(content), bool_and(erased) FROM log WHERE type = 'PostPublished' AND author = $a",
                json!({"a": 4}),
            ),
            (
                "SELECT content FROM log WHERE type = 'PostPublished' AND author = $a",
                json!({"a": 5}),
            ),
        ],
    );

    // Growth: the count at the last day's end is the service's; the days add up to it.
    let days = &answers[0];
    assert!(!days.is_empty());
    let last_day = days.last().unwrap();
    assert_eq!(int(&last_day[3]), now, "growth per day: {days:?}");
    let net: i64 = days.iter().map(|d| int(&d[1]) - int(&d[2])).sum();
    assert_eq!(net, now, "gained less lost over every day: {days:?}");

    // The window's top three: the service's counts at its two edges, differenced.
    let mut expected: Vec<(i64, i64)> = candidates
        .iter()
        .zip(after.iter().zip(&before))
        .map(|(&user, (a, b))| (user, a - b))
        .collect();
    expected.sort_by_key(|&(user, net)| (-net, user));
    expected.truncate(3);
    let top: Vec<(i64, i64)> = answers[1]
        .iter()
        .map(|row| (int(&row[0]), int(&row[3])))
        .collect();
    assert_eq!(
        top, expected,
        "the most followed in the window: {:?}",
        answers[1]
    );
    assert_eq!(top[0], (10, 5), "the scenario is what it means to be");

    // The block wave: followers at its end, lost to its blocks, and unfollowed after it.
    let mut churned: Vec<(i64, [i64; 3])> = answers[2]
        .iter()
        .map(|row| (int(&row[0]), [int(&row[1]), int(&row[2]), int(&row[3])]))
        .collect();
    churned.sort();
    let expected: Vec<(i64, [i64; 3])> = (0..wave_users.len())
        .map(|i| (wave_users[i], [c1[i], c0[i] - c1[i], c1[i] - c2[i]]))
        .collect();
    assert_eq!(churned, expected, "churn after the wave: {:?}", answers[2]);
    assert_eq!(
        expected[0].1,
        [4, 2, 2],
        "the scenario is what it means to be"
    );

    // Erased content is null in Parquet as in JSON lines; other content is there.
    assert_eq!(answers[3], vec![vec![json!(0), json!(true)]]);
    assert_eq!(answers[4], vec![vec![json!("words of five")]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every row of `dir`'s Parquet log (with its `date` partition), in log order, as DuckDB reads it.
fn rows(workdir: &Path, dir: &str) -> Vec<Vec<Value>> {
    let sql = format!(
        "SELECT * FROM read_parquet('{dir}/**/*.parquet', hive_partitioning = true)
         ORDER BY transaction_id, global_position"
    );
    duckdb(workdir, "SET TimeZone = 'UTC'", &[(&sql, json!({}))]).remove(0)
}

/// The Parquet files under `dir`, relative to it, and `_position`'s text.
fn listing(dir: &Path) -> (Vec<String>, String) {
    let mut files = Vec::new();
    for day in std::fs::read_dir(dir).unwrap() {
        let day = day.unwrap().path();
        if day.is_dir() {
            for file in std::fs::read_dir(&day).unwrap() {
                let path = file.unwrap().path();
                files.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    let position = std::fs::read_to_string(dir.join("_position")).unwrap();
    (files, position)
}

#[tokio::test]
async fn an_incremental_replay_holds_the_same_rows_as_one_replay_of_the_whole_log() {
    let app = spawn_app().await;
    let mut last = String::new();
    let first: Vec<(&str, i64, i64)> = (2..=9).map(|f| ("follow", f, 1)).collect();
    commands(&app, &first, &mut last).await;
    app.publish(7, "seven's words, forgotten later").await;
    app.publish(8, "eight's words").await;
    let dir = workdir("incremental");
    let (a, b) = (dir.join("a"), dir.join("b"));
    replay_parquet(&app, &a);
    let (files, position) = listing(&a);
    assert_eq!(files.len(), 1, "{files:?}");
    replay_parquet(&app, &a);
    assert_eq!(
        listing(&a),
        (files.clone(), position.clone()),
        "nothing new, nothing written"
    );

    // A run that died midway left a temporary file and a file named after `_position`.
    let day = a.join(files[0].split('/').next().unwrap());
    std::fs::write(day.join(".part-x.parquet.tmp"), b"half").unwrap();
    let beyond = format!("part-{:020}-{:020}.parquet", i64::MAX / 2, 1);
    std::fs::write(day.join(&beyond), b"half").unwrap();

    // More commands: follows, blocks (unfollows), an erasure of a user whose post is in A.
    let second = [
        ("block", 1, 2),
        ("unfollow", 3, 1),
        ("follow", 1, 5),
        ("follow", 10, 1),
    ];
    commands(&app, &second, &mut last).await;
    let (status, _) = app.erase_me(7).await;
    assert_eq!(status, StatusCode::OK);
    app.publish(9, "nine's words").await;
    replay_parquet(&app, &a);
    replay_parquet(&app, &b);

    let (a_files, a_position) = listing(&a);
    let (b_files, b_position) = listing(&b);
    assert_eq!(a_files.len(), 2, "one file per run and day: {a_files:?}");
    assert_eq!(b_files.len(), 1, "{b_files:?}");
    assert_eq!(a_position, b_position);
    let (in_a, in_b) = (rows(&dir, "a"), rows(&dir, "b"));
    assert_eq!(in_a.len(), in_b.len());
    assert_eq!(in_a, in_b, "the same rows, in the same order");
    let events = app.event_count().await;
    assert_eq!(in_a.len() as i64, events, "every event, once");
    let words = serde_json::to_string(&in_a).unwrap();
    assert!(
        !words.contains("seven's words"),
        "the erasure reached A's first file"
    );
    assert!(words.contains("eight's words") && words.contains("nine's words"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn json_lines_carry_the_two_integers_and_parquet_keeps_their_order() {
    let app = spawn_app().await;
    let mut last = String::new();
    let steps: Vec<(&str, i64, i64)> = (2..=12).map(|f| ("follow", f, 1)).collect();
    commands(&app, &steps, &mut last).await;
    let output = relations(&app, &["replay"]);
    let lines: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut pairs = Vec::new();
    for line in &lines {
        let (tx, pos) = (int(&line["transaction_id"]), int(&line["global_position"]));
        assert_eq!(line["position"], json!(format!("{tx}.{pos}")));
        pairs.push((tx, pos, line["event_id"].as_str().unwrap().to_owned()));
    }
    let mut sorted = pairs.clone();
    sorted.sort();
    assert_eq!(pairs, sorted, "JSON lines come in the pair's order");

    let dir = workdir("order");
    replay_parquet(&app, &dir.join("analytics"));
    let read = duckdb(
        &dir,
        "SET TimeZone = 'UTC'",
        &[(
            "SELECT transaction_id, global_position, event_id
               FROM read_parquet('analytics/**/*.parquet', hive_partitioning = true)
              ORDER BY transaction_id, global_position",
            json!({}),
        )],
    );
    let parquet: Vec<(i64, i64, String)> = read[0]
        .iter()
        .map(|r| (int(&r[0]), int(&r[1]), r[2].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(parquet, pairs);

    // Parquet is the whole log, appended to: a filter is refused, and so is --out without it.
    let out = dir.join("filtered");
    let out = out.to_str().unwrap();
    let filtered = run_relations(
        &app,
        &[
            "replay", "--format", "parquet", "--out", out, "--type", "Followed",
        ],
    );
    assert!(!filtered.status.success());
    assert!(String::from_utf8_lossy(&filtered.stderr).contains("filter it in your query"));
    assert!(!run_relations(&app, &["replay", "--out", out])
        .status
        .success());
    assert!(!run_relations(&app, &["replay", "--format", "parquet"])
        .status
        .success());
    assert!(!dir.join("filtered").exists(), "nothing written");
    std::fs::remove_dir_all(&dir).unwrap();
}
