//! A page of a comment list as the API answers it: the read rule (hiding comments across a
//! block) is the read side's (`relations_projections::engagement::visible`); here the page is
//! cut and its cursor made.

use chrono::Utc;
use relations_domain::FilterContext;
use relations_projections::engagement::query::CommentKey;
use relations_projections::engagement::visible;
pub use relations_projections::engagement::visible::CommentList;
use relations_projections::filters::read::screen_for;
use relations_projections::filters::screen::Screening;
use relations_projections::views::CommentView;
use serde::Serialize;
use sqlx::PgPool;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::page::Page;
use crate::routes::query::graph_source;
use crate::state::AppState;

/// A page of comments: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentPage {
    /// In the list's order.
    pub items: Vec<CommentView>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// The page of `list` that `viewer` may see, each comment marked liked or not for a bearer.
/// The caller has waited for `min_position`.
pub async fn visible_page(
    state: &AppState,
    pool: &PgPool,
    viewer: Option<Actor>,
    list: CommentList,
    page: &Page<CommentKey>,
) -> Result<CommentPage, ApiError> {
    let viewer = viewer.map(|a| a.user);
    let source = graph_source(state, None).await?;
    let screen = match viewer {
        Some(viewer) => screen_for(&state.graph, pool, page.min_position, viewer).await?,
        None => None,
    };
    let screening = Screening::new(screen.as_deref(), FilterContext::Comments, Utc::now());
    let (after, wanted) = (page.after, page.probe());
    let mut items = visible::visible(pool, source, viewer, screening, list, after, wanted).await?;
    let next_cursor = page.cut(&mut items, CommentKey::of);
    if let Some(viewer) = viewer {
        visible::mark_liked(pool, viewer, &mut items).await?;
    }
    Ok(CommentPage { items, next_cursor })
}
