//! `/api/v1/me/*`: the caller's own lists, settings, likes, follows as CSV and logout, one file
//! each.

mod blocks;
mod follow_requests;
mod follower_changes;
mod following;
mod liked;
mod logout;
mod mutes;
mod settings;

use axum::Json;
use relations_projections::following::reads::KeyedList;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_source, CursorPage};
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The caller's routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(blocks::blocks))
        .routes(routes!(mutes::mutes))
        .routes(routes!(follow_requests::follow_requests))
        .routes(routes!(settings::settings))
        .routes(routes!(follower_changes::follower_changes))
        .routes(routes!(liked::liked))
        .routes(routes!(logout::logout))
        .routes(routes!(following::export::export))
        .routes(routes!(following::import::import))
}

/// A page of one of the caller's keyed lists.
async fn own_list(
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
