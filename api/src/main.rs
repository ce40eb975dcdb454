//! The `relations` binary: see `relations --help`.

/// mimalloc, not glibc's malloc: a server's requests allocate and free small objects on every
/// worker thread, and a profile of 64 clients' follows found glibc's allocator (its arena
/// locks, chunk consolidation) at 18% of the server's CPU. The feature `system-alloc` leaves
/// it out, for heap profilers that hook malloc (heaptrack: see BENCHMARKS.md, the soak).
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // A build with fail points (issue 45) takes them from FAILPOINTS (`name=action;...`, the
    // `fail` crate's form), for fault trials that drive the binary from outside.
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    relations_api::cli::main().await
}
