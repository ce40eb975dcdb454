//! Servers a test owns and may stop and start: a PostgreSQL cluster (initdb in a temporary
//! directory, on a free port), its streaming hot standby, and a Redis. The fault tests break these, never the machine's
//! shared servers that the other tests use.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs a PostgreSQL tool, as user `postgres` when the tests run as root (the server refuses
/// to run as root).
fn pg(tool: &str, args: &[&str]) -> std::process::Output {
    let path = format!("{PG_BIN}/{tool}");
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", &path]);
        c
    } else {
        Command::new(&path)
    };
    command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// A PostgreSQL cluster of the test's own.
pub struct OwnedPostgres {
    dir: PathBuf,
    port: u16,
}

impl OwnedPostgres {
    /// A new temporary directory the server's user owns.
    fn new_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relations-pg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            assert!(Command::new("chown")
                .args(["postgres:postgres", dir.to_str().unwrap()])
                .status()
                .unwrap()
                .success());
        }
        dir
    }

    /// Creates and starts a cluster (trust authentication, no fsync: a test's data). initdb's
    /// defaults make it a primary a standby can stream from: `wal_level=replica`,
    /// `max_wal_senders=10`, and trusted replication connections from 127.0.0.1.
    pub fn start() -> Self {
        let dir = Self::new_dir();
        let data = dir.join("data");
        let out = pg(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        Self::started(dir, "initdb", out)
    }

    /// The cluster `tool` made in `dir`, started on a free port.
    fn started(dir: PathBuf, tool: &str, out: std::process::Output) -> Self {
        assert!(out.status.success(), "{tool}: {out:?}");
        let owned = Self {
            dir,
            port: free_port(),
        };
        owned.up();
        owned
    }

    /// A streaming hot standby of this cluster (`pg_basebackup -R -X stream`), started on a
    /// port of its own; `hot_standby` is on by default.
    pub fn standby(&self) -> Self {
        let dir = Self::new_dir();
        let data = dir.join("data");
        let out = pg(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-D",
                data.to_str().unwrap(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        );
        Self::started(dir, "pg_basebackup", out)
    }

    /// Starts the server and waits until it accepts connections.
    pub fn up(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let out = pg(
            "pg_ctl",
            &[
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-o",
                &options,
                "-l",
                self.dir.join("log").to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        assert!(out.status.success(), "pg_ctl start: {out:?}");
    }

    /// Stops the server the way an operator's restart does (`-m fast`: sessions are ended
    /// with SQLSTATE 57P01, open transactions roll back).
    pub fn down(&self) {
        let out = pg(
            "pg_ctl",
            &[
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
        assert!(out.status.success(), "pg_ctl stop: {out:?}");
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for OwnedPostgres {
    fn drop(&mut self) {
        let _ = pg(
            "pg_ctl",
            &[
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-m",
                "immediate",
                "stop",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis of the test's own (nothing kept on disk).
pub struct OwnedRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnedRedis {
    /// Starts one on a free port.
    pub fn start() -> Self {
        let mut owned = Self {
            port: free_port(),
            child: None,
        };
        owned.up();
        owned
    }

    /// Starts it (again, on the same port) and waits until it answers.
    pub fn up(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs");
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis never came up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it (SIGKILL: connections break, nothing answers).
    pub fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for OwnedRedis {
    fn drop(&mut self) {
        self.down();
    }
}
