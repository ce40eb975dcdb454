//! Where a read finds its reader's filters: the replica, or the table.

use std::sync::Arc;

use relations_domain::UserId;
use relations_store::LogPosition;
use sqlx::PgPool;

use super::query;
use super::screen::Screen;
use crate::error::ProjectionError;
use crate::replica::live::LiveGraph;

/// `reader`'s filters as a screen, none when they have none: the replica's when it reflects
/// `min_position`, else the table's on `reads` (which the caller waited for).
pub async fn screen_for(
    replica: &LiveGraph,
    reads: &PgPool,
    min_position: Option<LogPosition>,
    reader: UserId,
) -> Result<Option<Arc<Screen>>, ProjectionError> {
    let held = replica.with(|replica| {
        let behind = min_position.is_some_and(|at| replica.position() < at);
        (!behind).then(|| replica.filters().screen(reader))
    });
    if let Some(screen) = held.flatten() {
        return Ok(screen);
    }
    let filters = query::filters(reads, reader).await?;
    Ok((!filters.is_empty()).then(|| Arc::new(Screen::new(filters))))
}
