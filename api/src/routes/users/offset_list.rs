//! What the offset-paged user lists (following, friends) share: their parameters and their
//! page.

use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::reads::OffsetList;
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::routes::page::{limit, offset};
use crate::routes::query::{graph_list_source, items, OffsetPage};
use crate::state::AppState;

/// Offset-paged list parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OffsetParams {
    /// Items to skip: default 0, at most 100000.
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<i64>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>, minimum = 1)]
    viewer: Option<UserId>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// A page of one of `user`'s offset-paged lists, unless `user` hides it from `bearer`.
pub async fn offset_list(
    state: &AppState,
    user: UserId,
    bearer: Option<UserId>,
    p: OffsetParams,
    list: OffsetList,
) -> Result<Json<OffsetPage>, ApiError> {
    let (offset, limit) = (offset(p.offset)?, limit(p.limit)?);
    let source = graph_list_source(state, user, bearer, p.min_position).await?;
    let slice = source.offset_page(list, user, offset, limit).await?;
    let next = offset + slice.edges.len() as i64;
    let next_offset = (next < slice.total && !slice.edges.is_empty()).then_some(next);
    Ok(Json(OffsetPage {
        items: items(source, &slice.edges, p.viewer).await?,
        total: slice.total,
        next_offset,
    }))
}
