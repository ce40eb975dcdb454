//! `verify`'s check of projector `filters`: every filter not deleted, field by field, against
//! the one fold in memory up to the projector's checkpoint.

use std::collections::BTreeSet;

use async_trait::async_trait;
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::held::HeldFilter;
use super::memory::FiltersMemory;
use super::query::{self, FilterRow};
use crate::error::ProjectionError;
use crate::runtime::verify::{diff, distinct, Check};

/// A filter as compared: (id, user, phrase, whole_word, contexts, action, expires µs,
/// created µs).
type FilterCompared = (
    uuid::Uuid,
    i64,
    Option<String>,
    bool,
    Vec<&'static str>,
    &'static str,
    Option<i64>,
    i64,
);

fn compared(f: &HeldFilter) -> FilterCompared {
    (
        f.id.uuid(),
        f.user,
        f.phrase.clone(),
        f.whole_word,
        f.contexts.iter().map(|c| c.as_str()).collect(),
        f.action.as_str(),
        f.expires_at.map(|e| e.timestamp_micros()),
        f.created_at.timestamp_micros(),
    )
}

/// `rm_filters` against the fold.
#[derive(Debug, Default)]
pub struct FiltersCheck {
    filters: FiltersMemory,
}

#[async_trait]
impl Check for FiltersCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.filters.fold_all(&event.event);
        Ok(())
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let expected: BTreeSet<FilterCompared> = (self.filters.all().values())
            .flat_map(|screen| screen.filters().iter().map(compared))
            .collect();
        let rows: Vec<FilterRow> = sqlx::query_as(&query::select_all())
            .fetch_all(&mut *conn)
            .await?;
        let rows = rows
            .into_iter()
            .map(|row| HeldFilter::try_from(row).map(|f| compared(&f)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| sqlx::Error::Decode(e.into()))?;
        const FILTERS: &str =
            "rm_filters (filter, user, phrase, whole_word, contexts, action, expires_at, created_at)";
        let actual = distinct(FILTERS, rows, out);
        diff(FILTERS, &expected, &actual, out);
        Ok(())
    }
}
