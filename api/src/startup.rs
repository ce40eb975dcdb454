//! Building the application and running it under one shutdown signal.

use std::sync::Arc;

use anyhow::Context;
use relations_kafka::Relay;
use relations_projections::feed::read_marks::ReadMarks;
use relations_projections::graph::live::LiveGraph;
use relations_projections::{Runner, Wakeup};
use relations_store::db;
use relations_store::{CommitSignal, PostStore, RelationStore};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::JwtKeys;
use crate::config::Config;
use crate::rate_limit::RateLimiter;
use crate::routes;
use crate::state::{AppState, ProjectorEntry};
use relations_projections::Caches;

/// A built application: connected, migrated, bound, not yet serving.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    runners: Vec<Runner>,
    relay: Option<Relay>,
}

impl Application {
    /// Connects to PostgreSQL, applies migrations, and binds the listen address (port 0 picks a
    /// free port).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let pool = config.database.connect().await?;
        db::migrate(&pool).await.context("applying migrations")?;
        let redis = config.redis.connect()?.context("serve needs REDIS_URL")?;
        let listener = TcpListener::bind(config.http_addr)
            .await
            .with_context(|| format!("binding {}", config.http_addr))?;
        let signal = CommitSignal::spawn(pool.clone());
        let caches = Caches::new(redis.clone(), config.feed.settings());
        let projectors = relations_projections::all(config.feed.settings(), Some(&caches));
        let runners: Vec<Runner> = if config.run_projectors {
            projectors
                .iter()
                .cloned()
                .map(|p| Runner::new(pool.clone(), p))
                .collect()
        } else {
            vec![]
        };
        let relay = match (config.run_projectors, config.kafka.settings()) {
            (true, Some(settings)) => Some(Relay::new(pool.clone(), &settings)?),
            _ => None,
        };
        let mut projectors: Vec<ProjectorEntry> = projectors
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
        if config.kafka.kafka_brokers.is_some() {
            projectors.push(ProjectorEntry {
                name: relations_kafka::relay::NAME,
                essential: false,
                health: relay.as_ref().map(Relay::health),
            });
        }
        let state = AppState {
            projectors: Arc::new(projectors),
            graph: LiveGraph::new(),
            read_marks: ReadMarks::new(),
            inboxes: caches.inboxes,
            relations: RelationStore::new(
                pool.clone(),
                config.follow_limit,
                signal.clone(),
                usize::from(config.command_workers),
            ),
            posts: PostStore::new(pool.clone(), signal, usize::from(config.command_workers)),
            jwt: JwtKeys::new(&config.jwt.jwt_secret),
            limiter: RateLimiter::new(
                redis.clone(),
                config.rate_capacity,
                config.rate_refill_per_sec,
            ),
            redis,
            metrics: crate::metrics::handle(),
            pool,
            config: Arc::new(config),
        };
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
        let wakeup = Wakeup::listen(self.state.pool.clone(), shutdown.clone());
        let graph = tokio::spawn(self.state.graph.clone().run(
            self.state.pool.clone(),
            wakeup.clone(),
            shutdown.clone(),
        ));
        let projectors = spawn_projectors(wakeup, self.runners, self.relay, shutdown.clone());
        // Its own token, cancelled once HTTP has drained: marks set by the last requests are
        // still written.
        let drained = CancellationToken::new();
        let read_marks = tokio::spawn(
            self.state
                .read_marks
                .clone()
                .run(self.state.pool.clone(), drained.clone()),
        );
        axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
            .context("http server")?;
        drained.cancel();
        let _ = read_marks.await;
        for projector in projectors {
            let _ = projector.await;
        }
        let _ = graph.await;
        self.state.pool.close().await;
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
