//! Building the application and running it under one shutdown signal.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use relations_kafka::Relay;
use relations_projections::feed::read_marks::ReadMarks;
use relations_projections::feed::stream::FeedHub;
use relations_projections::replica::live::LiveGraph;
use relations_projections::runtime::LogWatch;
use relations_projections::{Projector, Runner, SharedLog, Wakeup};
use relations_store::db;
use relations_store::{
    AccountStore, CommitSignal, EngagementStore, FilterStore, ListStore, PostStore, RelationStore,
    SettingsStore,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::jwt::JwtKeys;
use crate::outcome::{render, render_relation, AccountChange, PostAnswer};
use crate::rate_limit::RateLimiter;
use crate::routes;
use crate::state::{AppState, ProjectorEntry, Shared};
use crate::stream_slots::StreamSlots;
use relations_projections::Caches;

/// A built application: connected, migrated, bound, not yet serving.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    runners: Vec<Runner>,
    relay: Option<Relay>,
}

/// Every projector by name, with its runner's health when this process runs it; the Kafka
/// relay among them when one is configured.
fn projector_entries(
    projectors: &[Arc<dyn Projector>],
    runners: &[Runner],
    relay_configured: bool,
    relay: &Option<Relay>,
) -> Vec<ProjectorEntry> {
    let mut entries: Vec<ProjectorEntry> = projectors
        .iter()
        .map(|p| ProjectorEntry {
            name: p.name(),
            essential: p.essential(),
            health: runners
                .iter()
                .find(|r| r.name() == p.name())
                .map(Runner::health),
        })
        .collect();
    if relay_configured {
        entries.push(ProjectorEntry {
            name: relations_kafka::relay::NAME,
            essential: false,
            health: relay.as_ref().map(Relay::health),
        });
    }
    entries
}

/// The runners and the relay this process runs: none when `RELATIONS_RUN_PROJECTORS` is off.
fn read_side(
    config: &Config,
    pool: &sqlx::PgPool,
    projectors: &[Arc<dyn relations_projections::Projector>],
) -> anyhow::Result<(Vec<Runner>, Option<Relay>)> {
    if !config.run_projectors {
        return Ok((vec![], None));
    }
    // One read of the log for the process's runners and relay.
    let log = SharedLog::default();
    let runners = Runner::all(pool, &log, projectors.iter().cloned());
    let relay = match config.kafka.settings() {
        Some(settings) => Some(Relay::new(pool.clone(), &settings)?.sharing(log)),
        None => None,
    };
    Ok((runners, relay))
}

/// The primary's pool (migrated), the pool reads use, and the keyring on the primary.
async fn databases(
    config: &Config,
) -> anyhow::Result<(sqlx::PgPool, sqlx::PgPool, relations_store::Keyring)> {
    let master_key = config.keys.master_key()?;
    let pool = config.database.connect().await?;
    let keys = relations_store::Keyring::new(master_key, pool.clone());
    db::migrate(&pool).await.context("applying migrations")?;
    let read_pool = config
        .database
        .connect_reads(config.database_read_url.as_deref(), &pool)
        .await?;
    Ok((pool, read_pool, keys))
}

/// The list commands' store (issue 46).
fn list_store(pool: &sqlx::PgPool, signal: &CommitSignal, config: &Config) -> ListStore {
    let render = crate::outcome::render::<_, crate::outcome::ListOutcome>;
    ListStore::new(pool.clone(), signal.clone(), config.workers(), render)
}

/// The engagement commands' store (comments, likes, reposts, bookmarks).
fn engagement_store(
    pool: &sqlx::PgPool,
    keys: &relations_store::Keyring,
    signal: &CommitSignal,
    config: &Config,
) -> EngagementStore {
    let renders = crate::outcome::engagement_renders();
    EngagementStore::new(
        pool.clone(),
        keys.clone(),
        signal.clone(),
        config.workers(),
        renders,
    )
}

/// The filter commands' store (issue 47): it seals phrases with `keys`.
fn filter_store(
    pool: &sqlx::PgPool,
    keys: &relations_store::Keyring,
    signal: &CommitSignal,
    config: &Config,
) -> FilterStore {
    let render = crate::outcome::render::<_, crate::outcome::FilterOutcome>;
    FilterStore::new(
        pool.clone(),
        keys.clone(),
        signal.clone(),
        config.workers(),
        render,
    )
}

impl Application {
    /// Connects to PostgreSQL, applies migrations, and binds the listen address (port 0 picks a
    /// free port).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        // The recorder first: a gauge set before it is installed (Redis's `relations_redis_up`
        // at connect) went to no recorder and stayed absent until Redis first failed.
        let metrics = crate::metrics::handle();
        let jwt = JwtKeys::new(config.jwt.secret()?);
        let (pool, read_pool, keys) = databases(&config).await?;
        let redis = config.redis.connect()?.context("serve needs REDIS_URL")?;
        let listener = TcpListener::bind(config.http_addr)
            .await
            .with_context(|| format!("binding {}", config.http_addr))?;
        let signal = CommitSignal::spawn(pool.clone());
        let caches = Caches::new(redis.clone(), config.feed.settings());
        let settings = crate::config::projector_settings(config.feed, config.fans);
        let projectors = relations_projections::all(settings, &keys, Some(&caches));
        let (runners, relay) = read_side(&config, &pool, &projectors)?;
        let relayed = config.kafka.kafka_brokers.is_some();
        let projectors = projector_entries(&projectors, &runners, relayed, &relay);
        let state = AppState::new(Shared {
            projectors: Arc::new(projectors),
            graph: LiveGraph::holding_posts(config.feed_memory(), keys.clone())
                .with_snapshots(config.graph_snapshots()),
            read_marks: ReadMarks::new(),
            log_watch: LogWatch::new(Duration::from_millis(config.held_after_ms)),
            inboxes: caches.inboxes,
            likes: caches.likes,
            hub: FeedHub::new(config.recommended(), keys.clone(), pool.clone()),
            stream_slots: StreamSlots::new(config.streams_per_user),
            notify_hub: Default::default(),
            closing: CancellationToken::new(),
            engagement: engagement_store(&pool, &keys, &signal, &config),
            lists: list_store(&pool, &signal, &config),
            filters: filter_store(&pool, &keys, &signal, &config),
            relations: RelationStore::new(
                pool.clone(),
                config.follow_limit,
                signal.clone(),
                config.workers(),
                render_relation,
            ),
            posts: PostStore::new(
                pool.clone(),
                keys.clone(),
                signal.clone(),
                config.workers(),
                render::<_, PostAnswer>,
            ),
            accounts: AccountStore::new(
                pool.clone(),
                signal.clone(),
                relations_store::Workers {
                    count: 1,
                    ..config.workers()
                },
                render::<_, AccountChange>,
            ),
            settings: SettingsStore::new(pool.clone(), signal),
            jwt,
            limiter: RateLimiter::new(
                redis.clone(),
                config.rate_capacity,
                config.rate_refill_per_sec,
            ),
            redis,
            keys,
            metrics,
            pool,
            read_pool,
            config: Arc::new(config),
        });
        Ok(Self {
            listener,
            state,
            runners,
            relay,
        })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The shared state (tests use it to reach the database).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` is cancelled, then drains in-flight requests.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let addr = self.listener.local_addr()?;
        tracing::info!(%addr, "serving");
        let app = routes::app(self.state.clone());
        // Everything behind HTTP (the graph, projectors, the relay, read marks) runs until HTTP
        // has drained, so a request accepted before the signal (a `min_position` read of a
        // write this instance acknowledged) is answered as fully as any other.
        let background = CancellationToken::new();
        let wakeup = Wakeup::listen(self.state.pool.clone(), background.clone());
        // The replica loads and tails where the reads go, so that its position is what the
        // read pool has replayed.
        let graph = tokio::spawn(self.state.graph.clone().run(
            self.state.read_pool.clone(),
            wakeup.clone(),
            background.clone(),
        ));
        let projectors = spawn_projectors(wakeup, self.runners, self.relay, background.clone());
        let read_marks = tokio::spawn(
            self.state
                .read_marks
                .clone()
                .run(self.state.pool.clone(), background.clone()),
        );
        let graph_position = self.state.graph.clone();
        let memory_readers: Vec<relations_projections::runtime::MemoryReader> = vec![(
            relations_projections::replica::NAME,
            Arc::new(move || graph_position.position()),
        )];
        let horizon = tokio::spawn(self.state.log_watch.clone().run(
            self.state.pool.clone(),
            memory_readers,
            background.clone(),
        ));
        let partitions = tokio::spawn(relations_store::log::partitions::keep_ahead(
            self.state.pool.clone(),
            background.clone(),
        ));
        let hub = tokio::spawn(
            self.state
                .hub
                .clone()
                .run(self.state.graph.clone(), background.clone()),
        );
        let notify_hub = tokio::spawn(
            self.state
                .notify_hub
                .clone()
                .run(self.state.pool.clone(), background.clone()),
        );
        // Feed streams end when shutdown begins, so HTTP drains.
        let closing = self.state.closing.clone();
        let signal = shutdown.clone();
        tokio::spawn(async move {
            signal.cancelled().await;
            closing.cancel();
        });
        let limits = crate::serve::Limits {
            header_read_timeout: Duration::from_millis(self.state.config.header_read_timeout_ms),
            max_connections: self.state.config.max_connections,
        };
        crate::serve::serve(self.listener, app, limits, shutdown).await;
        tracing::info!("http drained; stopping projectors");
        background.cancel();
        let _ = read_marks.await;
        let _ = horizon.await;
        let _ = partitions.await;
        let _ = hub.await;
        let _ = notify_hub.await;
        for projector in projectors {
            let _ = projector.await;
        }
        let _ = graph.await;
        self.state.pool.close().await;
        self.state.read_pool.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Starts one task per runner and the relay, woken by `wakeup`; they stop when `shutdown` is
/// cancelled.
pub fn spawn_projectors(
    wakeup: Wakeup,
    runners: Vec<Runner>,
    relay: Option<Relay>,
    shutdown: CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks: Vec<_> = runners
        .into_iter()
        .map(|runner| tokio::spawn(runner.run(wakeup.clone(), shutdown.clone())))
        .collect();
    if let Some(relay) = relay {
        tasks.push(tokio::spawn(relay.run(wakeup, shutdown)));
    }
    tasks
}

/// Cancels `token` on SIGINT or SIGTERM.
pub async fn cancel_on_signal(token: CancellationToken) {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received; draining");
    token.cancel();
}
