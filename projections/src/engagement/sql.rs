//! Projector `engagement`'s tables in PostgreSQL as the engagement fold's tables: `rm_likes`,
//! `rm_reposts`, `rm_bookmarks`, `rm_quotes`, `rm_post_stats` and `rm_comments`, written
//! set-based where the fold hands over many.

use relations_domain::LikeTarget;
use sqlx::PgConnection;
use uuid::Uuid;

use super::fold::{
    Bookmark, EngagementTables, Folded, Key, Like, NewComment, PostMark, Quote, Repost,
};
use super::likes;

/// The tables, on the projector's connection.
pub struct SqlTables<'c> {
    /// The batch's transaction.
    pub conn: &'c mut PgConnection,
}

impl EngagementTables for SqlTables<'_> {
    /// One like as a run of one ([`likes`]), so that likes have one set of statements.
    async fn like(&mut self, like: &Like) -> Folded<bool> {
        let moved = likes::like_run(self.conn, std::slice::from_ref(like)).await?;
        Ok(!moved.is_empty())
    }

    /// Written in at most four statements, whatever the run's length ([`likes`]).
    async fn like_run(&mut self, run: &[Like]) -> Folded<()> {
        let moved = likes::like_run(self.conn, run).await?;
        self.count_likes(&moved).await
    }

    async fn count_likes(&mut self, moved: &[(LikeTarget, i64)]) -> Folded<()> {
        let (mut posts, mut comments) = (Vec::new(), Vec::new());
        for &(target, delta) in moved {
            match target {
                LikeTarget::Post(post) => posts.push((post.uuid(), delta)),
                LikeTarget::Comment(c) => comments.push(((c.post.uuid(), c.n as i32), delta)),
            }
        }
        add_to_posts(self.conn, PostCount::Likes, &posts).await?;
        add_to_comments(self.conn, CommentCount::Likes, &comments).await
    }

    async fn repost(&mut self, repost: &Repost) -> Folded<bool> {
        mark(self.conn, REPOSTS, repost).await
    }

    async fn unrepost_all(&mut self, user: i64) -> Folded<Vec<Uuid>> {
        unmark_all(self.conn, REPOSTS, user).await
    }

    async fn bookmark(&mut self, bookmark: &Bookmark) -> Folded<()> {
        mark(self.conn, BOOKMARKS, bookmark).await.map(drop)
    }

    async fn unbookmark_all(&mut self, user: i64) -> Folded<()> {
        unmark_all(self.conn, BOOKMARKS, user).await.map(drop)
    }

    async fn count_reposts(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        add_to_posts(self.conn, PostCount::Reposts, moved).await
    }

    async fn quote(&mut self, quote: &Quote) -> Folded<bool> {
        let done = sqlx::query(
            "INSERT INTO rm_quotes (post, quote_of, author) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(quote.post)
        .bind(quote.quote_of)
        .bind(quote.author)
        .execute(&mut *self.conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn unquote(&mut self, post: Uuid) -> Folded<Option<Uuid>> {
        Ok(
            sqlx::query_scalar("DELETE FROM rm_quotes WHERE post = $1 RETURNING quote_of")
                .bind(post)
                .fetch_optional(&mut *self.conn)
                .await?,
        )
    }

    async fn unquote_all(&mut self, user: i64) -> Folded<Vec<Uuid>> {
        Ok(
            sqlx::query_scalar("DELETE FROM rm_quotes WHERE author = $1 RETURNING quote_of")
                .bind(user)
                .fetch_all(&mut *self.conn)
                .await?,
        )
    }

    async fn count_quotes(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        add_to_posts(self.conn, PostCount::Quotes, moved).await
    }

    async fn count_comments(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        add_to_posts(self.conn, PostCount::Comments, moved).await
    }

    async fn count_replies(&mut self, moved: &[(Key, i64)]) -> Folded<()> {
        add_to_comments(self.conn, CommentCount::Replies, moved).await
    }

    async fn comment(&mut self, c: &NewComment<'_>) -> Folded<bool> {
        let done = sqlx::query(
            "INSERT INTO rm_comments (post, n, author, parent, content, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(c.key.0)
        .bind(c.key.1)
        .bind(c.author)
        .bind(c.parent)
        .bind(c.content)
        .bind(c.created_at)
        .execute(&mut *self.conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn uncomment(&mut self, (post, n): Key) -> Folded<bool> {
        let done = sqlx::query(
            "UPDATE rm_comments SET deleted = true, content = NULL, pinned = false
              WHERE post = $1 AND n = $2 AND NOT deleted",
        )
        .bind(post)
        .bind(n)
        .execute(&mut *self.conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn uncomment_all(&mut self, user: i64) -> Folded<Vec<Key>> {
        Ok(sqlx::query_as(
            "UPDATE rm_comments SET deleted = true, content = NULL, pinned = false
              WHERE author = $1 AND NOT deleted RETURNING post, n",
        )
        .bind(user)
        .fetch_all(&mut *self.conn)
        .await?)
    }

    async fn unlike_all(&mut self, user: i64) -> Folded<Vec<LikeTarget>> {
        let targets: Vec<String> =
            sqlx::query_scalar("DELETE FROM rm_likes WHERE user_id = $1 RETURNING target")
                .bind(user)
                .fetch_all(&mut *self.conn)
                .await?;
        targets.iter().map(|t| likes::like_target(t)).collect()
    }

    async fn pin(&mut self, (post, n): Key, on: bool) -> Folded<()> {
        sqlx::query("UPDATE rm_comments SET pinned = $3 WHERE post = $1 AND n = $2")
            .bind(post)
            .bind(n)
            .bind(on)
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    async fn hide(&mut self, candidates: &[Key]) -> Folded<Vec<Key>> {
        let (posts, ns): (Vec<Uuid>, Vec<i32>) = candidates.iter().copied().unzip();
        let parents: Vec<(Uuid, Option<i32>)> = sqlx::query_as(
            "UPDATE rm_comments c SET visible = false
               FROM unnest($1::uuid[], $2::int[]) AS k(post, n)
              WHERE c.post = k.post AND c.n = k.n
                AND c.deleted AND c.visible AND c.reply_count = 0
             RETURNING c.post, c.parent",
        )
        .bind(&posts)
        .bind(&ns)
        .fetch_all(&mut *self.conn)
        .await?;
        Ok(parents
            .into_iter()
            .filter_map(|(post, parent)| Some((post, parent?)))
            .collect())
    }
}

/// Who reposts which post (issue 44): a table of marks.
const REPOSTS: &str = "rm_reposts";

/// Who bookmarks which post (issue 46): a table of marks.
const BOOKMARKS: &str = "rm_bookmarks";

/// Makes (`mark.on`) or removes the row of (`mark.post`, `mark.user`) in `table`, a table of
/// marks (`post`, `user_id`, `since`); whether it came or went.
async fn mark(conn: &mut PgConnection, table: &str, mark: &PostMark) -> Folded<bool> {
    let done = match mark.on {
        true => {
            let sql = format!(
                "INSERT INTO {table} (post, user_id, since) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING"
            );
            let query = sqlx::query(&sql).bind(mark.post).bind(mark.user);
            query.bind(mark.at).execute(&mut *conn).await?
        }
        false => {
            let sql = format!("DELETE FROM {table} WHERE post = $1 AND user_id = $2");
            let query = sqlx::query(&sql).bind(mark.post).bind(mark.user);
            query.execute(&mut *conn).await?
        }
    };
    Ok(done.rows_affected() == 1)
}

/// Removes every mark of `user` from `table` (see [`mark`]); the posts they marked.
async fn unmark_all(conn: &mut PgConnection, table: &str, user: i64) -> Folded<Vec<Uuid>> {
    let sql = format!("DELETE FROM {table} WHERE user_id = $1 RETURNING post");
    Ok(sqlx::query_scalar(&sql)
        .bind(user)
        .fetch_all(&mut *conn)
        .await?)
}

/// A count of `rm_post_stats`.
#[derive(Clone, Copy)]
enum PostCount {
    Likes,
    Comments,
    Reposts,
    Quotes,
}

/// Adds each post's change to one of its counts (its row made when missing), in post order.
async fn add_to_posts(
    conn: &mut PgConnection,
    count: PostCount,
    moved: &[(Uuid, i64)],
) -> Folded<()> {
    if moved.is_empty() {
        return Ok(());
    }
    let (posts, deltas): (Vec<Uuid>, Vec<i64>) = moved.iter().copied().unzip();
    let sql = match count {
        PostCount::Likes => {
            "INSERT INTO rm_post_stats AS s (post, like_count)
             SELECT * FROM unnest($1::uuid[], $2::bigint[]) ORDER BY 1
             ON CONFLICT (post) DO UPDATE SET like_count = s.like_count + excluded.like_count"
        }
        PostCount::Comments => {
            "INSERT INTO rm_post_stats AS s (post, comment_count)
             SELECT * FROM unnest($1::uuid[], $2::bigint[]) ORDER BY 1
             ON CONFLICT (post) DO UPDATE SET comment_count = s.comment_count + excluded.comment_count"
        }
        PostCount::Reposts => {
            "INSERT INTO rm_post_stats AS s (post, repost_count)
             SELECT * FROM unnest($1::uuid[], $2::bigint[]) ORDER BY 1
             ON CONFLICT (post) DO UPDATE SET repost_count = s.repost_count + excluded.repost_count"
        }
        PostCount::Quotes => {
            "INSERT INTO rm_post_stats AS s (post, quote_count)
             SELECT * FROM unnest($1::uuid[], $2::bigint[]) ORDER BY 1
             ON CONFLICT (post) DO UPDATE SET quote_count = s.quote_count + excluded.quote_count"
        }
    };
    sqlx::query(sql)
        .bind(&posts)
        .bind(&deltas)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A count of `rm_comments`.
#[derive(Clone, Copy)]
enum CommentCount {
    Likes,
    Replies,
}

/// Adds each comment's change to one of its counts.
async fn add_to_comments(
    conn: &mut PgConnection,
    count: CommentCount,
    moved: &[(Key, i64)],
) -> Folded<()> {
    if moved.is_empty() {
        return Ok(());
    }
    let (keys, deltas): (Vec<Key>, Vec<i64>) = moved.iter().copied().unzip();
    let (posts, ns): (Vec<Uuid>, Vec<i32>) = keys.into_iter().unzip();
    let sql = match count {
        CommentCount::Likes => {
            "UPDATE rm_comments c SET like_count = c.like_count + k.delta
               FROM unnest($1::uuid[], $2::int[], $3::bigint[]) AS k(post, n, delta)
              WHERE c.post = k.post AND c.n = k.n"
        }
        CommentCount::Replies => {
            "UPDATE rm_comments c SET reply_count = c.reply_count + k.delta
               FROM unnest($1::uuid[], $2::int[], $3::bigint[]) AS k(post, n, delta)
              WHERE c.post = k.post AND c.n = k.n"
        }
    };
    sqlx::query(sql)
        .bind(&posts)
        .bind(&ns)
        .bind(&deltas)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
