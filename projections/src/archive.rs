//! A user's own data, for their archive (`GET /api/v1/me/archive`, issue 25): every follow,
//! follower, request, block, mute, post, comment, like, repost, bookmark, dismissed
//! suggestion, list with its members (issue 46) and filter (issue 47) of theirs as the read models hold it, as JSON lines `{"kind", ..., "at"}`. Read section by
//! section in keyset pages (newest first, by `(at, tie)`), so a user with 100k followers costs
//! one page of memory at a time and holds no connection between pages.

use chrono::{DateTime, Utc};
use relations_domain::UserId;
use sqlx::PgPool;

/// One part of the archive: where its rows are, when each happened, what breaks ties between
/// rows of the same time, and the record (`json_build_object` arguments).
struct Section {
    rows: &'static str,
    at: &'static str,
    tie: &'static str,
    record: &'static str,
}

/// The sections, in the archive's order.
const SECTIONS: &[Section] = &[
    // With the follow's preferences (issue 44; no row: the defaults).
    Section {
        rows: "rm_follows f LEFT JOIN rm_follow_prefs p USING (follower, followee)
               WHERE f.follower = $1",
        at: "f.since",
        tie: "f.followee",
        record: "'kind', 'following', 'user', f.followee, 'at', f.since,
                 'show_reposts', COALESCE(p.show_reposts, true), 'notify', COALESCE(p.notify, false)",
    },
    Section {
        rows: "rm_fans WHERE route = rm_fan_route($1) AND followee = $1",
        at: "since",
        tie: "follower",
        record: "'kind', 'follower', 'user', follower, 'at', since",
    },
    Section {
        rows: "rm_follow_requests WHERE requester = $1",
        at: "since",
        tie: "target",
        record: "'kind', 'request', 'from', requester, 'to', target, 'at', since",
    },
    Section {
        rows: "rm_follow_requests WHERE target = $1",
        at: "since",
        tie: "requester",
        record: "'kind', 'request', 'from', requester, 'to', target, 'at', since",
    },
    Section {
        rows: "rm_blocks WHERE blocker = $1",
        at: "since",
        tie: "blocked",
        record: "'kind', 'block', 'user', blocked, 'at', since",
    },
    Section {
        rows: "rm_mutes WHERE muter = $1",
        at: "since",
        tie: "muted",
        record: "'kind', 'mute', 'user', muted, 'until', until, 'at', since",
    },
    Section {
        rows: "rm_posts WHERE author = $1 AND NOT deleted AND repost_of IS NULL",
        at: "created_at",
        tie: "seq",
        record: "'kind', 'post', 'id', post_id, 'content', content, 'at', created_at,
                 'quote_of', quote_of, 'quote_policy', quote_policy,
                 'comment_policy', comment_policy",
    },
    Section {
        rows: "rm_comments WHERE author = $1 AND NOT deleted",
        at: "created_at",
        tie: "post::text || '.' || n",
        record: "'kind', 'comment', 'id', post::text || '.' || n, 'post', post,
                 'parent', post::text || '.' || parent, 'content', content, 'at', created_at",
    },
    Section {
        rows: "rm_likes WHERE user_id = $1",
        at: "since",
        tie: "target",
        record: "'kind', 'like', 'target', target, 'at', since",
    },
    Section {
        rows: "rm_reposts WHERE user_id = $1",
        at: "since",
        tie: "post::text",
        record: "'kind', 'repost', 'post', post, 'at', since",
    },
    // Issue 46: every bookmark standing, its post readable now or not (they are the user's).
    Section {
        rows: "rm_bookmarks WHERE user_id = $1",
        at: "since",
        tie: "post::text",
        record: "'kind', 'bookmark', 'post', post, 'at', since",
    },
    // Issue 46: every suggestion dismissed.
    Section {
        rows: "rm_dismissals WHERE user_id = $1",
        at: "since",
        tie: "dismissed",
        record: "'kind', 'dismissal', 'user', dismissed, 'at', since",
    },
    // Issue 46: every list, with its members.
    Section {
        rows: "rm_lists l WHERE l.owner = $1",
        at: "l.created_at",
        tie: "l.list_id::text",
        record: "'kind', 'list', 'id', l.list_id, 'title', l.title, 'exclusive', l.exclusive,
                 'at', l.created_at,
                 'members', (SELECT COALESCE(json_agg(json_build_object('user', m.member,
                                                                       'since', m.since)
                                                     ORDER BY m.since, m.member), '[]')
                               FROM rm_list_members m WHERE m.list_id = l.list_id)",
    },
    // Issue 47: every filter not deleted (an expired one too: it is still the user's data).
    Section {
        rows: "rm_filters WHERE user_id = $1",
        at: "created_at",
        tie: "filter_id::text",
        record: "'kind', 'filter', 'id', filter_id, 'phrase', phrase, 'whole_word', whole_word,
                 'contexts', contexts, 'action', action, 'expires_at', expires_at,
                 'at', created_at",
    },
];

/// Where the archive has been read to: a section, and the last row's `(at, tie)` in it.
#[derive(Debug, Clone, Default)]
pub struct ArchiveKey {
    section: usize,
    after: Option<(DateTime<Utc>, String)>,
}

/// The next page of `user`'s archive after `key`: up to `limit` JSON lines (each without its
/// newline) and the key after them; `None` when the archive is over.
pub async fn page(
    pool: &PgPool,
    user: UserId,
    key: ArchiveKey,
    limit: i64,
) -> Result<Option<(Vec<String>, ArchiveKey)>, sqlx::Error> {
    let mut key = key;
    while let Some(section) = SECTIONS.get(key.section) {
        let Section {
            rows,
            at,
            tie,
            record,
        } = section;
        // Ties compare as text in one collation, in SQL and in the key alike; `at <= $2` lets
        // the section's index bound the scan.
        let tie = format!("({tie})::text COLLATE \"C\"");
        let after = match key.after {
            Some(_) => format!("AND {at} <= $2 AND ({at}, {tie}) < ($2, $3::text COLLATE \"C\")"),
            None => String::new(),
        };
        let sql = format!(
            "SELECT {at}, {tie}, json_build_object({record})::text FROM {rows} {after}
              ORDER BY {at} DESC, {tie} DESC LIMIT $4"
        );
        let (after_at, after_tie) = key.after.clone().unzip();
        let found: Vec<(DateTime<Utc>, String, String)> = sqlx::query_as(&sql)
            .bind(user.get())
            .bind(after_at)
            .bind(after_tie)
            .bind(limit)
            .fetch_all(pool)
            .await?;
        if let Some((at, tie, _)) = found.last() {
            let next = ArchiveKey {
                section: key.section,
                after: Some((*at, tie.clone())),
            };
            return Ok(Some((found.into_iter().map(|r| r.2).collect(), next)));
        }
        key = ArchiveKey {
            section: key.section + 1,
            after: None,
        };
    }
    Ok(None)
}
