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

/// `initdb` of a cluster in `dir/data` (trust authentication, user `postgres`, UTF8), with
/// `extra` arguments.
fn initdb(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let data = dir.join("data");
    let mut args = vec!["-D", data.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
    pg("initdb", &args)
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
    /// `fsync` on, and the WAL on a tmpfs of its own mounted at `dir/wal` (storage faults).
    durable: bool,
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
        let out = initdb(&dir, &[]);
        Self::started(dir, "initdb", out, false)
    }

    /// Creates and starts a cluster that syncs its writes (`fsync` on), with its WAL in 1 MB
    /// segments on a tmpfs of `megabytes` of its own (`dir/wal`, mounted: the tests run as
    /// root), which a test may fill up.
    pub fn start_durable_with_wal_on_tmpfs(megabytes: u32) -> Self {
        assert!(is_root(), "mounting a tmpfs takes root");
        let dir = Self::new_dir();
        let wal = dir.join("wal");
        std::fs::create_dir_all(&wal).unwrap();
        let size = format!("size={megabytes}M");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs", wal.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(mounted.success(), "mount tmpfs");
        let chowned = Command::new("chown")
            .args(["postgres:postgres", wal.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(chowned.success());
        let waldir = format!("--waldir={}", wal.join("pg_wal").display());
        let out = initdb(&dir, &[&waldir, "--wal-segsize=1"]);
        Self::started(dir, "initdb", out, true)
    }

    /// The cluster `tool` made in `dir`, started on a free port.
    fn started(dir: PathBuf, tool: &str, out: std::process::Output, durable: bool) -> Self {
        assert!(out.status.success(), "{tool}: {out:?}");
        let owned = Self {
            dir,
            port: free_port(),
            durable,
        };
        owned.up();
        owned
    }

    /// The directory of the WAL's tmpfs (a durable cluster's).
    pub fn wal_mount(&self) -> PathBuf {
        assert!(self.durable);
        self.dir.join("wal")
    }

    /// What a supervisor does (systemd's `Restart=always`, Patroni): starts the server unless
    /// it runs. PostgreSQL shuts itself down when its crash recovery fails (a full WAL disk);
    /// while the fault lasts, the start fails too. Whether it is up now.
    pub fn supervise(&self) -> bool {
        let data = self.dir.join("data");
        let status = pg("pg_ctl", &["-D", data.to_str().unwrap(), "status"]);
        status.status.success() || self.start_server().status.success()
    }

    /// The server's processes: the postmaster and its children (for strace).
    pub fn pids(&self) -> Vec<String> {
        let pid_file = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).unwrap();
        let postmaster = pid_file.lines().next().unwrap().to_owned();
        let children = Command::new("pgrep")
            .args(["-P", &postmaster])
            .output()
            .unwrap();
        let children = String::from_utf8(children.stdout).unwrap();
        std::iter::once(postmaster)
            .chain(children.split_whitespace().map(str::to_owned))
            .collect()
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
        Self::started(dir, "pg_basebackup", out, false)
    }

    /// Starts the server and waits until it accepts connections.
    pub fn up(&self) {
        let out = self.start_server();
        assert!(out.status.success(), "pg_ctl start: {out:?}");
    }

    /// `pg_ctl start`, waiting at most 10 s.
    fn start_server(&self) -> std::process::Output {
        let fsync = match self.durable {
            // WAL kept (never recycled), so that writing goes on creating segment files: a
            // full disk is felt at once.
            true => "-c fsync=on -c wal_keep_size=4GB -c max_wal_size=8MB",
            false => "-c fsync=off",
        };
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 {fsync} -c max_connections=200",
            self.port,
            self.dir.display()
        );
        pg(
            "pg_ctl",
            &[
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-o",
                &options,
                "-l",
                self.dir.join("log").to_str().unwrap(),
                "-w",
                "-t",
                "10",
                "start",
            ],
        )
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

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
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
        if self.durable {
            let _ = Command::new("umount").arg(self.wal_mount()).status();
        }
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

/// A TCP proxy in front of a server that a test can freeze: every connection open at the
/// freeze stops forwarding for good and stays open (a half-open connection: the peer vanished
/// without a FIN or a RST, so a statement or a COMMIT on it waits forever), and connections
/// made while frozen are held before they reach the server (a connect that hangs). After
/// `thaw` new connections work; the frozen ones never do.
pub struct FreezingProxy {
    port: u16,
    frozen: tokio::sync::watch::Sender<u64>,
    shutdown: tokio_util::sync::CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FreezingProxy {
    /// Starts one on a free port, forwarding to `upstream_port` on 127.0.0.1, on a runtime of
    /// its own (so that dropping it closes every socket it holds even while the test's thread
    /// is blocked, e.g. joining a server that waits on those sockets).
    pub fn start(upstream_port: u16) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        // Odd: frozen. Each freeze or thaw moves it on by one.
        let (frozen, epochs) = tokio::sync::watch::channel(0u64);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let stop = shutdown.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let accepted = tokio::select! {
                        _ = stop.cancelled() => return,
                        accepted = listener.accept() => accepted,
                    };
                    let Ok((client, _)) = accepted else { continue };
                    tokio::spawn(forward(client, upstream_port, epochs.clone()));
                }
            });
            // Dropping the runtime drops every connection's task, and so closes its sockets.
        });
        Self {
            port,
            frozen,
            shutdown,
            thread: Some(thread),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Freezes every open connection for good, and holds new ones until `thaw`.
    pub fn freeze(&self) {
        self.frozen.send_modify(|epoch| *epoch |= 1);
    }

    /// Lets new connections through again.
    pub fn thaw(&self) {
        self.frozen.send_modify(|epoch| {
            if *epoch % 2 == 1 {
                *epoch += 1
            }
        });
    }
}

/// One proxied connection: waits while the proxy is frozen, then forwards until the proxy
/// freezes again (then holds both sockets open, forwarding nothing, until the proxy stops).
async fn forward(
    mut client: tokio::net::TcpStream,
    upstream_port: u16,
    mut epochs: tokio::sync::watch::Receiver<u64>,
) {
    let epoch = match epochs.wait_for(|epoch| epoch % 2 == 0).await {
        Ok(epoch) => *epoch,
        Err(_) => return,
    };
    let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream_port)).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = async { epochs.wait_for(|now| *now != epoch).await.is_ok() } => {
            std::future::pending::<()>().await
        }
    }
}

impl Drop for FreezingProxy {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `n` consecutive free TCP ports on 127.0.0.1; the first.
pub fn free_ports(n: u16) -> u16 {
    loop {
        let first = free_port();
        if first.checked_add(n).is_none() {
            continue;
        }
        let held: Vec<_> = (first..first + n)
            .map_while(|port| std::net::TcpListener::bind(("127.0.0.1", port)).ok())
            .collect();
        if held.len() == usize::from(n) {
            return first;
        }
    }
}

/// A highly available PostgreSQL of the test's own: `scripts/ha.sh` (Patroni with
/// synchronous_mode_strict, etcd, HAProxy; two nodes) in a directory and on ports of its own.
/// Stopped and removed on drop.
pub struct OwnedHa {
    env: Vec<(&'static str, String)>,
    write_port: u16,
}

impl OwnedHa {
    /// Starts one; `None` (the caller skips) when not running as root, which ha.sh needs.
    pub fn start() -> Option<Self> {
        Self::start_nodes(2)
    }

    /// Starts one of `nodes` PostgreSQL nodes (each port range holds that many).
    pub fn start_nodes(nodes: u16) -> Option<Self> {
        if !is_root() {
            eprintln!("skipped: scripts/ha.sh runs the nodes as user postgres and needs root");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("relations-ha-{}", uuid::Uuid::new_v4()));
        let (write_port, pg_port, rest_port, etcd_port) = (
            free_ports(2),
            free_ports(nodes),
            free_ports(nodes),
            free_ports(2),
        );
        let owned = Self {
            env: vec![
                ("HA_NODES", nodes.to_string()),
                ("HA_DIR", dir.display().to_string()),
                ("HA_WRITE_PORT", write_port.to_string()),
                ("HA_READ_PORT", (write_port + 1).to_string()),
                ("HA_PG_PORT", pg_port.to_string()),
                ("HA_REST_PORT", rest_port.to_string()),
                ("HA_ETCD_PORT", etcd_port.to_string()),
                ("HA_STATS_PORT", free_port().to_string()),
                ("HA_SCOPE", format!("test-{write_port}")),
            ],
            write_port,
        };
        let out = owned.run("start");
        assert!(
            out.status.success(),
            "ha.sh start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(owned)
    }

    /// `scripts/ha.sh <verb>` on this cluster.
    pub fn run(&self, verb: &str) -> std::process::Output {
        self.command(verb)
            .stdin(Stdio::null())
            .output()
            .expect("scripts/ha.sh runs")
    }

    /// `scripts/ha.sh <verb>` on this cluster, not started.
    pub fn command(&self, verb: &str) -> Command {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/ha.sh");
        let mut command = Command::new(script);
        command.arg(verb).envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// The write endpoint (HAProxy to the leader).
    pub fn write_url(&self) -> String {
        format!(
            "postgres://postgres:postgres@127.0.0.1:{}/postgres",
            self.write_port
        )
    }
}

impl Drop for OwnedHa {
    fn drop(&mut self) {
        let _ = self.run("stop");
    }
}

/// A cgroup (v2) of the test's own: what its processes send, nftables can tell apart from what
/// their neighbours on the same loopback send ([`Partition`]). Removed on drop, once empty.
pub struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// A new one right under the hierarchy's root; `None` when the machine has no cgroup v2.
    pub fn new() -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
        let root = mounts
            .lines()
            .map(|line| line.split(' ').collect::<Vec<_>>())
            .find(|fields| fields.get(2) == Some(&"cgroup2"))?[1]
            .to_owned();
        let dir = PathBuf::from(root).join(format!("relations-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).ok()?;
        Some(Self { dir })
    }

    /// `program` and `args` as a command whose process starts inside this cgroup (a shell
    /// moves itself in and then becomes the program, so every socket it opens is the cgroup's).
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"echo $$ >"$0" && exec "$@""#)
            .arg(self.dir.join("cgroup.procs"))
            .arg(program);
        command
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A partition: every TCP packet the processes of a [`Cgroup`] send to a port is dropped (an
/// nftables table of its own), so their connections hang as across a broken network. Healed on
/// drop.
pub struct Partition {
    table: String,
}

impl Partition {
    /// Cuts `cgroup`'s processes off from `port`.
    pub fn cut(cgroup: &Cgroup, port: u16) -> Self {
        let table = format!("relations_{}", uuid::Uuid::new_v4().simple());
        // nftables names a cgroup by its path under /sys/fs/cgroup; level 1 is right under the
        // hierarchy's root.
        let path = cgroup.dir.strip_prefix("/sys/fs/cgroup").unwrap().display();
        let rules = format!(
            "table inet {table} {{\n chain out {{\n type filter hook output priority 0;\n \
             socket cgroupv2 level 1 \"{path}\" tcp dport {port} counter drop\n }}\n}}\n"
        );
        let out = Command::new("nft")
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .spawn();
        let mut child = out.expect("nft (scripts/services.sh installs nftables)");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(rules.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success(), "nft refused {rules}");
        Self { table }
    }
}

impl Partition {
    /// How many packets it dropped so far (none: the rule matched nothing, and the cgroup's
    /// processes were never cut off).
    pub fn dropped(&self) -> u64 {
        let out = Command::new("nft")
            .args(["list", "table", "inet", &self.table])
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&out.stdout);
        listing
            .split("counter packets ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next()?.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        let _ = Command::new("nft")
            .args(["delete", "table", "inet", &self.table])
            .status();
    }
}

/// libfaketime, which shifts a process's wall clock (not its monotonic one) by `FAKETIME`.
pub fn faketime_library() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib")
        .ok()?
        .flatten()
        .map(|arch| arch.path().join("faketime/libfaketime.so.1"))
        .find(|path| path.exists())
}

/// The `relations` binary running as a process of the test's own (`serve` or `project`) on the
/// database and Redis prefix of `config`; killed (SIGKILL) on drop.
pub struct ServiceProcess {
    child: Child,
    /// `http://127.0.0.1:PORT` (for `serve`).
    pub base: String,
}

/// `relations <verb>` on `config`'s database and Redis, with `env` added, in `cgroup` when
/// one is given.
fn relations(
    verb: &str,
    config: &relations_api::config::Config,
    env: &[(&str, &str)],
    cgroup: Option<&Cgroup>,
) -> Command {
    let program = env!("CARGO_BIN_EXE_relations");
    let mut command = cgroup.map_or_else(|| Command::new(program), |c| c.command(program));
    command
        .arg(verb)
        .env("DATABASE_URL", &config.database.database_url)
        .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
        .env("REDIS_URL", config.redis.redis_url.clone().unwrap())
        .env("RELATIONS_REDIS_PREFIX", &config.redis.redis_prefix)
        .env("RELATIONS_JWT_SECRET", crate::helpers::SECRET)
        .env("RELATIONS_RATE_CAPACITY", "100000")
        .envs(env.iter().copied());
    if let Some(brokers) = &config.kafka.kafka_brokers {
        command
            .env("KAFKA_BROKERS", brokers)
            .env("KAFKA_TOPIC", &config.kafka.kafka_topic)
            .env(
                "KAFKA_PARTITIONS",
                config.kafka.kafka_partitions.to_string(),
            );
    }
    command
}

impl ServiceProcess {
    /// Starts `relations <verb>` (`serve` listens on a free port) with `env` added; for
    /// `serve`, waits until it answers.
    pub async fn start(
        verb: &str,
        config: &relations_api::config::Config,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_in(verb, config, env, None).await
    }

    /// [`ServiceProcess::start`], in `cgroup` when one is given.
    pub async fn start_in(
        verb: &str,
        config: &relations_api::config::Config,
        env: &[(&str, &str)],
        cgroup: Option<&Cgroup>,
    ) -> Self {
        let port = free_port();
        let child = relations(verb, config, env, cgroup)
            .env("RELATIONS_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let process = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        if verb == "serve" {
            let started = Instant::now();
            while reqwest::get(format!("{}/healthz", process.base))
                .await
                .is_err()
            {
                assert!(started.elapsed() < Duration::from_secs(20), "never came up");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        process
    }

    /// Runs `relations <verb> <args>` to its end (`verify`, say): its output.
    pub fn run(
        verb: &str,
        args: &[&str],
        config: &relations_api::config::Config,
    ) -> std::process::Output {
        relations(verb, config, &[], None)
            .args(args)
            .output()
            .unwrap()
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`-STOP`, `-CONT`...).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
