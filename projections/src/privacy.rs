//! The private-content rules ([`relations_domain::privacy`]) with their facts read from one
//! graph state: what a viewer is to each author (the author, a follower, anyone else) and each
//! author's settings. Every reader asks here: timelines and feeds (a column filter and
//! [`ReadFilter`]), `new_count`, the live stream (on the replica it already holds), likes,
//! comments, replies, the graph lists and relation queries. On the replica (the usual source)
//! nothing here costs a round trip.

use std::collections::HashMap;

use async_trait::async_trait;
use relations_domain::privacy::{self, Access, Privacy, Reader};
use relations_domain::{UserId, Visibility};

use crate::error::ProjectionError;
use crate::feed::query::PostFilter;
use crate::relations::reads::Source;
use crate::replica::Replica;

impl Replica {
    /// `user`'s settings as the replica folds them.
    pub fn privacy(&self, user: UserId) -> Privacy {
        self.accounts().privacy(user)
    }

    /// What `viewer` is to `user`, and `user`'s settings.
    pub fn access(&self, viewer: Option<UserId>, user: UserId) -> Access {
        let follows =
            viewer.is_some_and(|v| v != user && self.relations().facts(v, user).following);
        Access {
            privacy: self.privacy(user),
            reader: Reader::of(viewer, user, follows),
        }
    }
}

/// What `viewer` is to each of `users`, from `source`'s one state.
pub async fn access(
    source: Source<'_>,
    viewer: Option<UserId>,
    users: &[UserId],
) -> Result<HashMap<UserId, Access>, sqlx::Error> {
    let mut users = users.to_vec();
    users.sort_unstable();
    users.dedup();
    let found = source.access(viewer, &users).await?;
    Ok(users.into_iter().zip(found).collect())
}

/// What `viewer` is to `user`, and `user`'s settings, from `source`.
async fn access_one(
    source: Source<'_>,
    viewer: Option<UserId>,
    user: UserId,
) -> Result<Option<Access>, sqlx::Error> {
    Ok(source.access(viewer, &[user]).await?.pop())
}

/// Whether `viewer` may read a post of `visibility` by `author`.
pub async fn may_read(
    source: Source<'_>,
    viewer: Option<UserId>,
    author: UserId,
    visibility: Visibility,
) -> Result<bool, sqlx::Error> {
    let found = access_one(source, viewer, author).await?;
    Ok(found.is_some_and(|a| a.may_read(visibility)))
}

/// Whether `user` hides their graph (lists) from `viewer`.
pub async fn graph_hidden(
    source: Source<'_>,
    viewer: Option<UserId>,
    user: UserId,
) -> Result<bool, sqlx::Error> {
    let found = access_one(source, viewer, user).await?;
    Ok(found.is_some_and(|a| a.graph_hidden()))
}

/// Whether a relation query about `from` and each of `to` (status, batch) is refused to
/// `asker`: refused as a whole when any of its pairs is.
pub async fn pairs_hidden(
    source: Source<'_>,
    asker: Option<UserId>,
    from: UserId,
    to: &[UserId],
) -> Result<bool, sqlx::Error> {
    let member = |u: UserId| asker == Some(u);
    if member(from) {
        return Ok(false);
    }
    let mut users: Vec<UserId> = to.iter().copied().filter(|&u| !member(u)).collect();
    if users.is_empty() {
        return Ok(false);
    }
    users.push(from);
    let found = access(source, asker, &users).await?;
    let hidden = |u: UserId| found.get(&u).is_some_and(|a| a.graph_hidden());
    Ok(to
        .iter()
        .any(|&t| privacy::pair_hidden(asker, (from, t), (hidden(from), hidden(t)))))
}

/// The feed's filter: keeps the posts `viewer` may read, by the state of `source` at the
/// moment of reading (a follow that ended is ended here, whatever the feed's projector has
/// folded yet); for the recommended feed, only what may be recommended.
pub struct ReadFilter<'a> {
    /// Where the facts come from (the replica when loaded).
    pub source: Source<'a>,
    /// Who reads.
    pub viewer: Option<UserId>,
}

#[async_trait]
impl PostFilter for ReadFilter<'_> {
    async fn readable(
        &self,
        posts: &[(UserId, Visibility)],
        recommended: bool,
    ) -> Result<Vec<bool>, ProjectionError> {
        let authors: Vec<UserId> = posts.iter().map(|&(author, _)| author).collect();
        let found = access(self.source, self.viewer, &authors).await?;
        Ok(posts
            .iter()
            .map(|(author, visibility)| {
                found.get(author).is_some_and(|a| match recommended {
                    true => privacy::recommendable(*visibility, a.privacy),
                    false => a.may_read(*visibility),
                })
            })
            .collect())
    }
}
