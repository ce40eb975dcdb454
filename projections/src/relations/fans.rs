//! Followers by the followee (`rm_fans`, issue 48 item 3): seed 001's fans table beside its
//! follow table (`rm_follows`, by the follower), kept in step in projector `following`'s
//! transaction. Each row sits in its followee's route: the hash bucket `-1 - followee % 8`, or,
//! for an account with at least [`Settings::fan_table_threshold`](super::Settings) followers,
//! a table of its own (`rm_fans_u<id>`, route = the id, listed in `rm_fan_routes`). An account
//! is routed by the batch that leaves it over the threshold, its followers moved there in the
//! same transaction (SQL readers of followers wait for it: [`route`]); it is never routed back
//! (only an erasure removes its table). Readers find the route with SQL's `rm_fan_route(followee)`
//! (migration `20261129000040_follows_split.sql`).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::fold::UserPair;
use crate::error::ProjectionError;
use crate::runtime::copy_out::{copy_timestamp, CopyOut};

/// Removes follows (`$1` followers, `$2` followees) from `rm_follows` and their rows from
/// `rm_fans`, found by the follow's `since`.
pub(super) const DELETE_FOLLOWS: &str = "
    WITH gone AS (
        DELETE FROM rm_follows t USING unnest($1::bigint[], $2::bigint[]) AS k(a, b)
         WHERE t.follower = k.a AND t.followee = k.b
        RETURNING t.follower, t.followee, t.since)
    DELETE FROM rm_fans x USING gone g
     WHERE x.route = rm_fan_route(g.followee) AND x.followee = g.followee
       AND x.since = g.since AND x.follower = g.follower";

/// Adds follows (`$1` followers, `$2` followees, `$3` since) to both tables.
pub(super) const INSERT_FOLLOWS: &str = "
    WITH made AS (
        INSERT INTO rm_follows (follower, followee, since)
        SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[])
        RETURNING follower, followee, since)
    INSERT INTO rm_fans (route, followee, follower, since)
    SELECT rm_fan_route(followee), followee, follower, since FROM made";

/// The route of `followee`'s followers when `routed` lists the accounts with a table of their
/// own (SQL's `rm_fan_route`).
pub(super) fn route_of(followee: i64, routed: &BTreeSet<i64>) -> i64 {
    match routed.contains(&followee) {
        true => followee,
        false => -1 - followee.rem_euclid(8),
    }
}

/// The statement that makes `followee`'s own table (a partition of `rm_fans`, in the first
/// schema of the search_path: a rebuild's shadows when it runs there).
fn own_table(followee: i64) -> String {
    format!("CREATE TABLE IF NOT EXISTS rm_fans_u{followee} PARTITION OF rm_fans FOR VALUES IN ({followee})")
}

/// The own tables of `rm_fans` on the search_path and the account each is for. (The id is
/// read by a match that yields NULL for any other name: a condition on it may be evaluated
/// before the name's.)
pub(super) const OWN_TABLES: &str = "
    SELECT c.relname::text, (regexp_match(c.relname, '^rm_fans_u([0-9]+)$'))[1]::bigint
      FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
     WHERE h.inhparent = 'rm_fans'::regclass AND c.relname ~ '^rm_fans_u[0-9]+$'";

/// The statements that give a rebuild's shadow `rm_fans` a table of its own for each of
/// `routed` and none for any other account (the shadows were made like the live tables, whose
/// routes may differ: `RelationsBulk::routed`).
pub(super) fn shadow_layout(routed: &BTreeSet<i64>) -> Vec<String> {
    let keep: Vec<String> = routed.iter().map(i64::to_string).collect();
    let drop_others = format!(
        "DO $$ DECLARE t text; BEGIN
           FOR t IN SELECT relname FROM ({OWN_TABLES}) AS own(relname, followee)
                     WHERE followee <> ALL('{{{}}}'::bigint[])
           LOOP EXECUTE format('DROP TABLE %I', t); END LOOP;
         END $$",
        keep.join(",")
    );
    std::iter::once(drop_others)
        .chain(routed.iter().map(|&followee| own_table(followee)))
        .collect()
}

/// Routes each of `gained` (accounts whose followers grew in this batch) that now has at least
/// `threshold` followers and no table of its own yet: the table is made as a partition of
/// `rm_fans` and the account's rows move into it, all in the batch's transaction.
///
/// The batch first takes `rm_fans` whole (`ACCESS EXCLUSIVE`), so followers pages read from
/// PostgreSQL wait for the move (reads from memory do not). A weaker lock is not enough: a
/// statement planned before a partition is attached and given its snapshot after the commit
/// prunes to the new partition its plan does not have, and finds none of the moved rows (the
/// test in `api/tests/api/fan_tables.rs` caught exactly that with `ATTACH PARTITION`'s lock).
/// A query that waited for the lock plans again and sees the move whole.
pub(super) async fn route(
    conn: &mut PgConnection,
    gained: &[i64],
    threshold: i64,
) -> Result<(), ProjectionError> {
    if gained.is_empty() {
        return Ok(());
    }
    let due: Vec<i64> = sqlx::query_scalar(
        "SELECT c.user_id FROM rm_follow_counts c
          WHERE c.user_id = ANY($1) AND c.followers >= $2
            AND NOT EXISTS (SELECT 1 FROM rm_fan_routes r WHERE r.followee = c.user_id)
          ORDER BY c.user_id",
    )
    .bind(gained)
    .bind(threshold)
    .fetch_all(&mut *conn)
    .await?;
    if due.is_empty() {
        return Ok(());
    }
    // Readers queue behind the lock while it is awaited: a batch that cannot have it within 5
    // s (a long `verify`, a dump) fails and is tried again. A big account's move may take
    // longer than the service's 30 s a statement.
    for sql in [
        "SET LOCAL lock_timeout = '5s'",
        "SET LOCAL statement_timeout = '10min'",
        "LOCK TABLE rm_fans IN ACCESS EXCLUSIVE MODE",
    ] {
        sqlx::query(sql).execute(&mut *conn).await?;
    }
    for followee in due {
        sqlx::query(&own_table(followee))
            .execute(&mut *conn)
            .await?;
        // Moved while `rm_fan_route` still names the bucket, then routed.
        let moved = sqlx::query(
            "UPDATE rm_fans SET route = $1 WHERE route = rm_fan_route($1) AND followee = $1",
        )
        .bind(followee)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        sqlx::query("INSERT INTO rm_fan_routes (followee, since) VALUES ($1, now())")
            .bind(followee)
            .execute(&mut *conn)
            .await?;
        tracing::info!(followee, moved, "followers moved to a table of their own");
    }
    Ok(())
}

/// Removes `followee`'s own table and route, if it had either (its erasure: the table's name
/// holds the id). A drop locks `rm_fans` until the batch commits; `IF EXISTS` of a table that
/// is not there locks nothing.
pub(super) async fn unroute(conn: &mut PgConnection, followee: i64) -> Result<(), ProjectionError> {
    sqlx::query("DELETE FROM rm_fan_routes WHERE followee = $1")
        .bind(followee)
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!("DROP TABLE IF EXISTS rm_fans_u{followee}"))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// `follows` (follower, followee -> since) as the rows of `rm_fans`, and `routed` as those of
/// `rm_fan_routes`, for a rebuild.
pub(super) fn copy(
    out: &CopyOut,
    follows: &HashMap<UserPair, DateTime<Utc>>,
    routed: &BTreeSet<i64>,
) {
    let mut rows = out.table("rm_fans (route, followee, follower, since)");
    for (&(follower, followee), since) in follows {
        let route = route_of(followee, routed);
        writeln!(
            rows,
            "{route}\t{followee}\t{follower}\t{}",
            copy_timestamp(*since)
        )
        .expect("rows in memory");
    }
    drop(rows);
    let now = copy_timestamp(Utc::now());
    let mut rows = out.table("rm_fan_routes (followee, since)");
    for followee in routed {
        writeln!(rows, "{followee}\t{now}").expect("rows in memory");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_the_account_when_it_has_a_table_else_its_bucket() {
        let routed = BTreeSet::from([42]);
        assert_eq!(route_of(42, &routed), 42);
        assert_eq!(route_of(7, &routed), -8);
        assert_eq!(route_of(8, &routed), -1);
        assert_eq!(route_of(43, &routed), -4);
    }
}
