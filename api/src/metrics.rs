//! Prometheus metrics: one global recorder, and HTTP request metrics by matched route.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Request latency buckets, in seconds: fine below 10 ms, where the targets are.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Commands per group-commit transaction.
const GROUP_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// The process's recorder, installed on first use.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                // Histograms with buckets, so dashboards aggregate quantiles across instances.
                .set_buckets_for_metric(
                    Matcher::Full("relations_http_request_duration_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("relations_command_group_size".into()),
                        GROUP_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("relations_graph_apply_seconds".into()),
                        LATENCY_BUCKETS,
                    )
                })
                .expect("buckets are not empty")
                .install_recorder()
                .map(upkeep)
                .expect("no other metrics recorder is installed")
        })
        .clone()
}

/// How often the recorder's upkeep runs.
const UPKEEP: Duration = Duration::from_secs(5);

/// Runs the recorder's upkeep every [`UPKEEP`], for as long as the process lives. A histogram
/// keeps every sample recorded until it is drained into its buckets, which only a scrape or
/// the upkeep does, and `install_recorder` starts no upkeep of its own: an instance that
/// nobody scraped grew by every request's samples without bound (issue 48's soak: about
/// 1.3 MiB a minute at 1,200 requests a second; heaptrack found it).
fn upkeep(handle: PrometheusHandle) -> PrometheusHandle {
    let kept = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP);
            kept.run_upkeep();
        })
        .expect("a thread starts");
    handle
}

/// Counts and times each request under its route template (never the raw path: ids would
/// explode the label space).
pub async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(request).await;
    let labels = [
        ("method", method),
        ("route", route),
        ("status", response.status().as_u16().to_string()),
    ];
    metrics::counter!("relations_http_requests_total", &labels).increment(1);
    metrics::histogram!("relations_http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}
