//! (f) server memory and bytes per follow edge.

use sqlx::PgPool;

use crate::harness::{Row, Server};

/// (f) server memory, and bytes per follow edge.
pub async fn memory(server: &Server, pool: &PgPool) -> anyhow::Result<Vec<Row>> {
    // The split tables' bytes are their partitions' (issue 48, item 3).
    let (edges, follows, fans, feed_follows): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM rm_follows),
                (SELECT sum(pg_total_relation_size(relid))::bigint
                   FROM pg_partition_tree('rm_follows')),
                (SELECT sum(pg_total_relation_size(relid))::bigint
                   FROM pg_partition_tree('rm_fans')),
                pg_total_relation_size('feed_follows')",
    )
    .fetch_one(pool)
    .await?;
    let (event_rows, events) = relations_store::log::footprint(pool).await?;
    let per = |bytes: i64| bytes as f64 / edges.max(1) as f64;
    let graph_bytes = server.metric("relations_graph_bytes").await?;
    Ok(vec![
        Row::new(
            "f. memory",
            "in-process graph bytes per follow edge (its own estimate: vectors and tables)",
            format!(
                "{:.0} B ({:.1} MiB for {edges} follows)",
                graph_bytes / edges.max(1) as f64,
                graph_bytes / 1048576.0
            ),
        ),
        Row::new(
            "f. memory",
            "server RSS after the graph scenarios",
            format!("{:.1} MiB", server.rss_kib() as f64 / 1024.0),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per follow edge: rm_follows (table and its indexes)",
            format!("{:.0} B", per(follows)),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per follow edge: rm_fans (the followers by followee)",
            format!("{:.0} B", per(fans)),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per follow edge: feed_follows (the feed's copy)",
            format!("{:.0} B", per(feed_follows)),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per event in the log (table + indexes)",
            format!("{:.0} B", events as f64 / event_rows.max(1) as f64),
        ),
    ])
}
