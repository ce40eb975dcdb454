//! The filters in memory: the replica's part of projector `filters` (loaded from its table at
//! its checkpoint, then folded from the log by [`super::fold`]), each user's compiled into one
//! [`Screen`] when they change, so that a read matches with no round trip and no build.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use foldhash::HashMap;
use futures::TryStreamExt;
use relations_domain::{FilterId, LogEvent, UserId};
use relations_store::LogPosition;
use sqlx::PgConnection;

use super::held::HeldFilter;
use super::screen::Screen;
use super::FilterTables;
use crate::replica::MemoryModel;
use crate::runtime::checkpoint;

/// Every user's filters not deleted, as a screen each.
#[derive(Debug, Default, Clone)]
pub struct FiltersMemory {
    screens: HashMap<i64, Arc<Screen>>,
    /// Events up to here are in the load.
    loaded: LogPosition,
}

impl FiltersMemory {
    /// `user`'s screen, when they have a filter.
    pub fn screen(&self, user: UserId) -> Option<Arc<Screen>> {
        self.screens.get(&user.get()).cloned()
    }

    /// Every user's screen (verify).
    pub fn all(&self) -> &HashMap<i64, Arc<Screen>> {
        &self.screens
    }

    /// `user`'s filters changed by `change`: their screen built again (at most 100 phrases).
    fn change(&mut self, user: i64, change: impl FnOnce(&mut Vec<HeldFilter>)) {
        let mut filters = self
            .screens
            .get(&user)
            .map(|s| s.filters().to_vec())
            .unwrap_or_default();
        change(&mut filters);
        match filters.is_empty() {
            true => self.screens.remove(&user),
            false => self.screens.insert(user, Arc::new(Screen::new(filters))),
        };
    }

    /// Folds `event` whatever the load held (verify's fold of the whole log).
    pub fn fold_all(&mut self, event: &LogEvent) {
        super::fold(self, event);
    }
}

impl FilterTables for FiltersMemory {
    fn create(&mut self, filter: HeldFilter) {
        self.change(filter.user, |filters| {
            if !filters.iter().any(|f| f.id == filter.id) {
                filters.push(filter);
            }
        });
    }

    fn delete(&mut self, user: i64, filter: FilterId) {
        if self.screens.contains_key(&user) {
            self.change(user, |filters| filters.retain(|f| f.id != filter));
        }
    }

    fn erase(&mut self, user: i64) {
        self.screens.remove(&user);
    }
}

impl MemoryModel for FiltersMemory {
    async fn checkpoint(
        &mut self,
        tx: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        self.loaded = checkpoint::read(&mut *tx, super::NAME).await?;
        Ok(Some(self.loaded))
    }

    /// The read model's rows, as of the snapshot, each user's screen built once.
    async fn load(&mut self, tx: &mut PgConnection, _: LogPosition) -> Result<(), sqlx::Error> {
        let sql = super::query::select_all();
        let mut rows = sqlx::query_as::<_, super::query::FilterRow>(&sql).fetch(&mut *tx);
        let mut users: HashMap<i64, Vec<HeldFilter>> = HashMap::default();
        while let Some(row) = rows.try_next().await? {
            let filter = HeldFilter::try_from(row).map_err(|e| sqlx::Error::Decode(e.into()))?;
            users.entry(filter.user).or_default().push(filter);
        }
        for (user, filters) in users {
            self.screens.insert(user, Arc::new(Screen::new(filters)));
        }
        Ok(())
    }

    fn apply(&mut self, at: LogPosition, _: DateTime<Utc>, event: &LogEvent) {
        if at > self.loaded {
            super::fold(self, event);
        }
    }
}
