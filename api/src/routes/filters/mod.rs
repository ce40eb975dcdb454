//! `/api/v1/filters`: the caller's filters, muted words applied at read time (issue 47). A
//! filter of anyone else's is 404, as an unknown one is.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use relations_domain::{FilterAction, FilterCommand, FilterContext, FilterId, FilterSpec, Phrase};
use relations_projections::filters::{query, HeldFilter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery, PathId};
use crate::outcome::{FilterAnswer, FilterOutcome, FilterView};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::{BearerQueryErrors, FilterCommandErrors};
use crate::routes::page::MinPosition;
use crate::routes::query::wait_for_projectors;
use crate::state::AppState;

/// The longest a filter may last: ten years.
const MAX_EXPIRES_IN_SECS: i64 = 10 * 365 * 24 * 3600;

/// The routes under `/api/v1/filters`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_filters, create_filter))
        .routes(routes!(delete_filter))
}

/// `POST /api/v1/filters` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFilter {
    /// What it matches: 1 to 100 characters, no NUL; case-insensitively.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\x00]*$")]
    pub phrase: String,
    /// Only at word boundaries (default false).
    #[serde(default)]
    pub whole_word: bool,
    /// Where it applies: at least one.
    #[schema(min_items = 1)]
    pub contexts: Vec<FilterContext>,
    /// What it does to what it matches.
    pub action: FilterAction,
    /// Seconds until it ends by itself (1 to ten years); null or absent: never.
    #[serde(default, deserialize_with = "relations_domain::ids::optional_integral")]
    #[schema(minimum = 1, maximum = 315_360_000)]
    pub expires_in_secs: Option<i64>,
}

/// The caller's filters: `{items}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Filters {
    /// Every live filter, in the order they were made.
    pub items: Vec<FilterView>,
}

/// Makes a filter: `201 {filter, position}`. At most 100 live filters a user.
#[utoipa::path(post, path = "/api/v1/filters", tag = "commands",
    request_body = NewFilter, params(CommandRequest), security(("bearer" = [])),
    responses((status = 201, body = FilterAnswer), FilterCommandErrors))]
pub async fn create_filter(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<NewFilter>,
) -> Result<CommandAnswer<FilterOutcome>, ApiError> {
    let invalid = |m: &str| ApiError::InvalidInput(m.to_owned());
    let phrase = Phrase::parse(&body.phrase).map_err(|e| invalid(&e.to_string()))?;
    let at = relations_store::metadata::now();
    let expires_at = match body.expires_in_secs {
        None => None,
        Some(secs @ 1..=MAX_EXPIRES_IN_SECS) => Some(at + chrono::TimeDelta::seconds(secs)),
        Some(_) => return Err(invalid("expires_in_secs is 1 to 315360000, or null")),
    };
    let spec = FilterSpec {
        phrase,
        whole_word: body.whole_word,
        contexts: body.contexts.iter().copied().collect(),
        action: body.action,
        expires_at,
    };
    let command = FilterCommand::Create {
        user: request.actor(),
        filter: FilterId::from_uuid(uuid::Uuid::now_v7()),
        spec,
        at,
    };
    run(state, request, command, &body).await
}

/// Deletes a live filter of the caller's: `{position}`.
#[utoipa::path(delete, path = "/api/v1/filters/{id}", tag = "commands",
    params(("id" = String, Path, description = "The filter"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = crate::outcome::Deleted), FilterCommandErrors))]
pub async fn delete_filter(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(filter): PathId<FilterId>,
) -> Result<CommandAnswer<FilterOutcome>, ApiError> {
    let command = FilterCommand::Delete {
        user: request.actor(),
        filter,
        at: relations_store::metadata::now(),
    };
    run(state, request, command, &filter).await
}

/// Every live filter of the caller's, unpaged (at most 100), in the order they were made.
#[utoipa::path(get, path = "/api/v1/filters", tag = "queries", security(("bearer" = [])),
    params(MinPosition),
    responses((status = 200, body = Filters), BearerQueryErrors))]
pub async fn get_filters(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(q): ApiQuery<MinPosition>,
) -> Result<Json<Filters>, ApiError> {
    let names = [relations_projections::filters::NAME];
    let pool = wait_for_projectors(&state, &names, q.min_position).await?;
    let now = chrono::Utc::now();
    let rows = query::filters(pool, actor.user).await?;
    let items = rows
        .into_iter()
        .filter(|f| f.live(now))
        .map(|f| view(f, now))
        .collect();
    Ok(Json(Filters { items }))
}

/// A filter of the table, as the API shows it at `now`.
fn view(filter: HeldFilter, now: chrono::DateTime<chrono::Utc>) -> FilterView {
    FilterView::at(
        filter.id,
        filter.phrase.unwrap_or_default(),
        filter.whole_word,
        filter.contexts,
        filter.action,
        filter.expires_at,
        now,
    )
}

/// Runs a filter command under its Idempotency-Key (bound to `fingerprint`) and answers it.
async fn run(
    state: AppState,
    mut request: CommandRequest,
    command: FilterCommand,
    fingerprint: &impl Serialize,
) -> Result<CommandAnswer<FilterOutcome>, ApiError> {
    let name = command.name();
    let status = match command {
        FilterCommand::Create { .. } => StatusCode::CREATED,
        FilterCommand::Delete { .. } => StatusCode::OK,
    };
    let idempotency = request.admit(&state, name, fingerprint).await?;
    let executed = state
        .filters
        .execute(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, status))
}
