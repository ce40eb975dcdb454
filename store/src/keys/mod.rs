//! Envelope encryption of post and comment content (issue 25's crypto-shredding): a data key
//! per user seals their content in the log; the master key (`RELATIONS_MASTER_KEY`) wraps
//! every data key; the wrapped keys live in `data_keys`, never in the log. Destroying a user's
//! row makes their content unreadable wherever the ciphertext went: the log, replays, the
//! Kafka topic, backups of the log.
//!
//! A writer gets its authors' keys inside the command's own transaction: read, and for a user
//! without one, made, inserted (`ON CONFLICT DO NOTHING`) and read again, so every event
//! committed with sealed content commits with its key. Readers look keys up as committed and
//! keep the unwrapped ones in memory; [`Keyring::forget`] drops one when its user is erased.
//! How a payload is sealed and opened (its version 2) is `crate::log`'s (`content.rs`).

mod cipher;
mod table;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use relations_domain::UserId;
use sqlx::{PgConnection, PgPool};

pub use cipher::{BadMasterKey, DataKey, MasterKey, Unopenable};

/// Unwrapped keys kept in memory before the cache is emptied (a rebuild over a million
/// authors must not hold a million keys).
const CACHED_KEYS: usize = 100_000;

/// Why content could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// PostgreSQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored key does not unwrap: `RELATIONS_MASTER_KEY` is not the key that wrapped it.
    #[error("the data key of user {user} does not unwrap: is RELATIONS_MASTER_KEY the key it was wrapped with?")]
    Unwrap {
        /// Whose key.
        user: i64,
    },
    /// Sealed content does not open with its author's key: the log was altered.
    #[error("the sealed content of event {event_id} does not open with its author's key")]
    Unopenable {
        /// The event.
        event_id: uuid::Uuid,
    },
    /// A payload that should hold content does not have the shape of its version.
    #[error("event {event_id}: {problem}")]
    Shape {
        /// The event (nil for one being appended).
        event_id: uuid::Uuid,
        /// What is missing or wrong.
        problem: &'static str,
    },
}

/// The master key and the data keys this process has unwrapped. Cheap to clone.
#[derive(Clone)]
pub struct Keyring {
    inner: Arc<Inner>,
}

struct Inner {
    master: MasterKey,
    /// Where readers look keys up (the primary: the erasure deletes there first).
    pool: PgPool,
    /// Users' unwrapped keys; `None`: the user's key is gone (erased) for good. Shared, not
    /// copied: a key holds its cipher's expanded state (its round keys), and a rebuild's
    /// batch of 50,000 posts copied that many into a fresh map (the kernel's zeroing of its
    /// pages and the copies were a quarter of a feed rebuild's CPU).
    cache: Mutex<HashMap<i64, Option<Arc<DataKey>>>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keyring(<redacted>)")
    }
}

impl Keyring {
    /// A keyring under `master` that looks stored keys up on `pool`.
    pub fn new(master: MasterKey, pool: PgPool) -> Self {
        Self {
            inner: Arc::new(Inner {
                master,
                pool,
                cache: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// `user` was erased (their key destroyed): this process opens none of their content from
    /// now on, even with the key still in memory. The erasure's folds call it.
    pub fn forget(&self, user: UserId) {
        self.cache().insert(user.get(), None);
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Option<Arc<DataKey>>>> {
        self.inner.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The keys that seal `users`' content in the caller's transaction, made for users who
    /// have none. An erased user gets a throwaway key that is never stored: what it seals is
    /// unreadable from the start.
    pub(crate) async fn for_writing(
        &self,
        conn: &mut PgConnection,
        users: &[i64],
    ) -> Result<HashMap<i64, DataKey>, KeyError> {
        let mut users = users.to_vec();
        users.sort_unstable();
        users.dedup();
        let mut keys = HashMap::with_capacity(users.len());
        let mut missing = Vec::new();
        for row in table::for_writing(conn, &users).await? {
            match (row.wrapped, row.erased) {
                (_, true) => {
                    keys.insert(row.user, DataKey::generate());
                }
                (Some(wrapped), false) => {
                    keys.insert(row.user, self.unwrap_key(row.user, &wrapped)?);
                }
                (None, false) => missing.push(row.user),
            }
        }
        if missing.is_empty() {
            return Ok(keys);
        }
        let wrapped: Vec<Vec<u8>> = missing
            .iter()
            .map(|&user| self.inner.master.wrap(user, &DataKey::generate()))
            .collect();
        table::insert(conn, &missing, &wrapped).await?;
        // Read again: a writer that added one meanwhile won, and its key is the key.
        for row in table::for_writing(conn, &missing).await? {
            let wrapped = row.wrapped.ok_or(KeyError::Unwrap { user: row.user })?;
            keys.insert(row.user, self.unwrap_key(row.user, &wrapped)?);
        }
        Ok(keys)
    }

    /// The keys of `users` (each once, however often named) as committed; a user absent from
    /// the answer was erased. A user named again costs a shared key's count, not a copy.
    pub(crate) async fn for_reading(
        &self,
        users: &[i64],
    ) -> Result<HashMap<i64, Arc<DataKey>>, KeyError> {
        // Grown to the users named, not sized to the names: a batch names its few authors
        // thousands of times.
        let mut found = HashMap::new();
        let mut unknown = Vec::new();
        {
            let cache = self.cache();
            for &user in users {
                match cache.get(&user) {
                    Some(Some(key)) => {
                        found.insert(user, Arc::clone(key));
                    }
                    Some(None) => {}
                    None => unknown.push(user),
                }
            }
        }
        if unknown.is_empty() {
            return Ok(found);
        }
        unknown.sort_unstable();
        unknown.dedup();
        let mut loaded: HashMap<i64, Option<Arc<DataKey>>> =
            unknown.iter().map(|&user| (user, None)).collect();
        for (user, wrapped) in table::committed(&self.inner.pool, &unknown).await? {
            loaded.insert(user, Some(Arc::new(self.unwrap_key(user, &wrapped)?)));
        }
        let mut cache = self.cache();
        if cache.len() + loaded.len() > CACHED_KEYS {
            cache.clear();
        }
        for (user, key) in loaded {
            // A `forget` that came in meanwhile stands.
            let key = cache.entry(user).or_insert(key);
            if let Some(key) = key {
                found.insert(user, Arc::clone(key));
            }
        }
        Ok(found)
    }

    fn unwrap_key(&self, user: i64, wrapped: &[u8]) -> Result<DataKey, KeyError> {
        self.inner
            .master
            .unwrap_key(user, wrapped)
            .map_err(|Unopenable| KeyError::Unwrap { user })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A keyring whose cache holds user 7's key, over a database where nothing listens: a
    /// look-up there would fail, so every answer comes from the cache.
    fn cached_seven() -> Keyring {
        let master = "11".repeat(32).parse().unwrap();
        let pool = PgPool::connect_lazy("postgres://nobody@127.0.0.1:1/none").unwrap();
        let keys = Keyring::new(master, pool);
        keys.cache().insert(7, Some(Arc::new(DataKey::generate())));
        keys
    }

    #[tokio::test]
    async fn a_forgotten_user_is_never_opened_again_and_the_database_is_not_asked() {
        let keys = cached_seven();
        assert_eq!(keys.for_reading(&[7]).await.unwrap().len(), 1);
        keys.forget(UserId::try_from(7).unwrap());
        assert!(keys.for_reading(&[7, 7]).await.unwrap().is_empty());
        assert_eq!(format!("{keys:?}"), "Keyring(<redacted>)");
    }

    #[tokio::test]
    async fn readers_share_one_key_and_each_user_is_answered_once() {
        let keys = cached_seven();
        let first = keys.for_reading(&[7, 7, 7]).await.unwrap();
        let again = keys.for_reading(&[7]).await.unwrap();
        assert_eq!(first.len(), 1);
        assert!(
            Arc::ptr_eq(&first[&7], &again[&7]),
            "the cached key, not a copy"
        );
    }
}
