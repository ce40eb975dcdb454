//! What the caller's keyed lists (blocks, follow requests) share: their page.

use axum::Json;
use relations_projections::relations::reads::KeyedList;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_source, CursorPage};
use crate::state::AppState;

/// A page of one of the caller's keyed lists.
pub async fn own_list(
    state: AppState,
    actor: Actor,
    page: Page<SinceKey>,
    list: KeyedList,
) -> Result<Json<CursorPage>, ApiError> {
    let source = graph_source(&state, page.min_position).await?;
    let rows = source
        .keyed_page(list, actor.user, page.after, page.probe())
        .await?;
    cursor_page(source, &page, rows, None).await.map(Json)
}
