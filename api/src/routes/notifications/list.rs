//! `GET /api/v1/notifications`: the caller's notifications, grouped, newest group first.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use relations_domain::{CommentId, PostId, UserId};
use relations_projections::filters::screen::FilterHit;
use relations_projections::notifications::change::Kind;
use relations_projections::notifications::query::{self as notify_read, GroupRow, Reading};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::{CursorKey, Page};
use crate::routes::query::wait_for_projectors;
use crate::state::AppState;

use super::visible;

/// One group of notifications.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationGroup {
    /// The group's key (stable while the group lives).
    pub group: String,
    /// `followed`, `follow_request`, `follow_request_approved`, `liked_post`,
    /// `liked_comment`, `commented`, `replied`, `reposted` or `posted`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The post it is about (likes, comments, replies, reposts).
    #[schema(value_type = Option<String>)]
    pub post: Option<PostId>,
    /// The comment it is about (a comment's likes; replies: the comment replied to).
    pub comment: Option<CommentId>,
    /// Notifications in the group.
    pub count: i64,
    /// Who, newest first, at most 5 distinct users.
    pub actors: Vec<UserId>,
    /// When the newest happened.
    pub latest_at: DateTime<Utc>,
    /// Whether the newest is newer than the caller's read marker.
    pub unread: bool,
    /// The newest's place in the log: `POST /api/v1/notifications/read` takes it as `up_to`.
    pub position: String,
    /// The caller's `warn` filters of context `notifications` the text it shows of someone
    /// else's matches (issue 47); left out when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<FilterHit>>,
}

/// A page of groups: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationPage {
    /// Newest group first.
    pub items: Vec<NotificationGroup>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// `notifications` parameters besides the page's.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TypesParams {
    /// Only these types, comma-separated.
    #[param(
        pattern = r"^(followed|follow_request|follow_request_approved|liked_post|liked_comment|commented|replied|reposted|posted|quoted)(,(followed|follow_request|follow_request_approved|liked_post|liked_comment|commented|replied|reposted|posted|quoted))*$"
    )]
    types: Option<String>,
    /// `true`: the filtered list (issue 47), the notifications the caller's
    /// `notification_policy` set apart; never unread. Default `false`: the main list.
    #[serde(default)]
    filtered: bool,
}

impl TypesParams {
    /// The types asked for (`None`: all); 400 on an unknown one.
    fn kinds(&self) -> Result<Option<Vec<&'static str>>, ApiError> {
        let Some(types) = &self.types else {
            return Ok(None);
        };
        types
            .split(',')
            .map(|t| {
                Kind::parse(t)
                    .map(Kind::name)
                    .ok_or_else(|| ApiError::InvalidInput(format!("types: unknown type {t:?}")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// A reading's place on the wire: `"{snapshot}.{before}"`, two log positions.
impl CursorKey for Reading {
    const PATTERN: &'static str = r"^[0-9]{1,18}\.[0-9]{1,18}\.[0-9]{1,18}\.[0-9]{1,18}$";

    fn decode(raw: &str) -> Option<Self> {
        let mut parts = raw.split('.');
        let mut next =
            || -> Option<String> { Some(format!("{}.{}", parts.next()?, parts.next()?)) };
        let (snapshot, before) = (next()?.parse().ok()?, next()?.parse().ok()?);
        (parts.next().is_none()).then_some(Reading { snapshot, before })
    }

    fn encode(&self) -> String {
        format!("{}.{}", self.snapshot, self.before)
    }
}

/// The caller's notifications, grouped, newest group first: `{items, next_cursor}`. Likes
/// group per post or comment, comments per post, replies per comment, follows, requests and
/// approvals per UTC day; a group moves to the top when something joins it.
///
/// A group's place is its last notification's: something new moves it to the top, an undo
/// never moves it down. Paging never skips or repeats a group while groups move: the first
/// page fixes a snapshot (the newest place then), and the cursor carries it with the last
/// place shown, so every later page lists groups by their place as of that snapshot. A group
/// that moves up while you page stays where it was in this reading (it shows on top of the
/// next first page); a group made after the first page is not in this reading. The one
/// exception: a group that moves up while you page and whose last notification before the
/// snapshot was undone meanwhile may show once more, lower down.
///
/// The likes and replies of a comment on a post the caller may not read now (issue 26) are
/// left out, so a page may hold fewer groups than `limit` while `next_cursor` goes on.
///
/// With `filtered=true`, the list beside it (issue 47): the notifications the caller's
/// notification policy filtered when they were caused, grouped and paged the same way, never
/// unread.
#[utoipa::path(get, path = "/api/v1/notifications", tag = "queries", security(("bearer" = [])),
    params(Page<Reading>, TypesParams),
    responses((status = 200, body = NotificationPage), BearerQueryErrors))]
pub async fn notifications(
    State(state): State<AppState>,
    actor: Actor,
    page: Page<Reading>,
    ApiQuery(types): ApiQuery<TypesParams>,
) -> Result<Json<NotificationPage>, ApiError> {
    let kinds = types.kinds()?;
    let pool = wait_for_projectors(
        &state,
        &relations_projections::notifications::READS,
        page.min_position,
    )
    .await?;
    let user = actor.user.get();
    let marker = notify_read::marker(pool, user).await?;
    let (mut rows, snapshot) = notify_read::page(
        pool,
        user,
        (kinds.as_deref(), types.filtered),
        page.after,
        page.probe(),
    )
    .await?;
    let next_cursor = snapshot.and_then(|snapshot| {
        page.cut(&mut rows, |row| Reading {
            snapshot,
            before: row.key(),
        })
    });
    // Left out after the cut: the cursor goes on below every group read, shown or not.
    let asks: Vec<_> = rows.iter().map(GroupRow::ask).collect();
    let screen = visible::screen(&state, pool, page.min_position, actor.user).await?;
    let screening = visible::screening(screen.as_deref());
    let shown = visible::readable(&state, actor.user, page.min_position, screening, &asks).await?;
    let items = rows
        .into_iter()
        .zip(shown)
        .filter_map(|(row, seen)| seen.map(|marks| view(row, marker, types.filtered, marks)))
        .collect::<Result<_, _>>()?;
    Ok(Json(NotificationPage { items, next_cursor }))
}

/// A group as the API shows it; a filtered one is never unread.
fn view(
    row: GroupRow,
    marker: relations_store::LogPosition,
    filtered: bool,
    warned: Option<Vec<FilterHit>>,
) -> Result<NotificationGroup, ApiError> {
    let position = row.position();
    let post = row.post.map(PostId::from_uuid);
    let comment = match (post, row.comment) {
        (Some(post), Some(n)) => Some(CommentId { post, n: n as u32 }),
        _ => None,
    };
    let actors = row
        .actors
        .iter()
        .map(|&a| UserId::try_from(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("an actor that is no user id: {e}")))?;
    Ok(NotificationGroup {
        group: row.grp,
        kind: row.kind,
        post,
        comment,
        count: row.count,
        actors,
        latest_at: row.latest_at,
        unread: !filtered && position > marker,
        position: position.to_string(),
        filtered: warned,
    })
}
