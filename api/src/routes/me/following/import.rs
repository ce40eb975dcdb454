//! `POST /api/v1/me/following/import`: follows each user a CSV file lists. The handler reads
//! the file, admits the import, and then each step is one function: an earlier answer to the
//! same key ([`prior`]), the follows ([`follow_each`]), their tally ([`tally`]), and keeping the
//! answer for retries ([`keep`]).

use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{RelationCommand, UserId};
use relations_store::idempotency;
use relations_store::RelationDecision;
use relations_store::{Executed, Idempotency, LogPosition, StoredAnswer};
use serde::Serialize;
use utoipa::ToSchema;

use super::csv::parse;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiCsv;
use crate::routes::command::{prior, CommandAnswer, CommandRequest};
use crate::state::AppState;

/// One line of an import that did not become a follow or a request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Refused {
    /// The listed user.
    pub user: i64,
    /// Why, as the follow command would have answered: `SELF_RELATION`, `BLOCKED`,
    /// `BLOCKING_TARGET`, `FOLLOW_LIMIT_REACHED`.
    pub code: String,
}

/// What an import did, line by line.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct ImportOutcome {
    /// Lines that became follows.
    pub followed: usize,
    /// Lines that became follow requests (locked accounts).
    pub requested: usize,
    /// Lines already followed or asked.
    pub unchanged: usize,
    /// Lines refused, in file order.
    pub refused: Vec<Refused>,
    /// Where the last appended event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// Follows every user listed in a CSV body (`user_id[,since]`, the export's shape; `since` is
/// read and not used), as a follow command would: rules 2 and 3 per line, one rate-limit token
/// for the whole import. With an `Idempotency-Key` a retry answers the same and follows
/// nothing twice. A malformed file changes nothing: 400 `INVALID_CSV` or `TOO_MANY_LINES` with
/// the line at fault. An empty file (or one of blank lines) lists nobody and follows nobody.
#[utoipa::path(post, path = "/api/v1/me/following/import", tag = "commands",
    request_body(content = String, content_type = "text/csv",
                 description = "header `user_id,since` (or `user_id`), at most 1,000 lines; an empty file lists nobody"),
    params(CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = ImportOutcome),
              (status = 400, body = ErrorBody, description = "INVALID_CSV or TOO_MANY_LINES, with `line`"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"),
              (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After")))]
pub async fn import(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiCsv(body): ApiCsv,
) -> Result<CommandAnswer<ImportOutcome>, ApiError> {
    let ids: Vec<i64> = parse(&body)?.into_iter().map(|(_, id)| id).collect();
    let idempotency = request.admit(&state, "import", &ids).await?;
    let idempotency = idempotency.as_ref();
    let actor = request.actor();
    if let Some(first) = prior(&state, actor, idempotency).await? {
        return Ok(CommandAnswer::replay(first));
    }
    let decided = follow_each(&state, &request, idempotency, &ids).await;
    let outcome = tally(&ids, decided)?;
    let executed = keep(&state, actor, idempotency, outcome).await?;
    Ok(CommandAnswer::new("import", executed, StatusCode::OK))
}

/// Follows each of `ids` as a follow command would, all at once: they share group commits.
/// Each line has its own key under the import's, so an import cut short and retried follows
/// nobody twice.
async fn follow_each(
    state: &AppState,
    request: &CommandRequest,
    idempotency: Option<&Idempotency>,
    ids: &[i64],
) -> Vec<Result<Executed<RelationDecision>, ApiError>> {
    let actor = request.actor();
    futures::future::join_all(ids.iter().enumerate().map(|(n, &id)| {
        let part = idempotency.map(|idem| idem.part(n));
        async move {
            let target = UserId::try_from(id).map_err(|_| ApiError::SelfRelation)?;
            let command = RelationCommand::Follow {
                actor,
                target,
                prefs: relations_domain::PrefsChange::default(),
            };
            if command.pair().is_err() {
                return Err(ApiError::SelfRelation);
            }
            Ok(state
                .relations
                .execute(command, &request.metadata, part.as_ref())
                .await?)
        }
    }))
    .await
}

/// What the follows of `ids` came to, line by line; a refusal is the line's, any other failure
/// the import's.
fn tally(
    ids: &[i64],
    decided: Vec<Result<Executed<RelationDecision>, ApiError>>,
) -> Result<ImportOutcome, ApiError> {
    let mut outcome = ImportOutcome::default();
    for (&id, result) in ids.iter().zip(decided) {
        let answer = match result.and_then(LineAnswer::of) {
            Ok(answer) => answer,
            Err(error) if error.is_client_error() => {
                let code = error.code().to_owned();
                outcome.refused.push(Refused { user: id, code });
                continue;
            }
            Err(error) => return Err(error),
        };
        match (answer.changed, answer.requested) {
            (false, _) => outcome.unchanged += 1,
            (true, true) => outcome.requested += 1,
            (true, false) => outcome.followed += 1,
        }
        outcome.position = outcome.position.max(answer.position);
    }
    Ok(outcome)
}

/// Keeps `outcome` as the import's answer under its key, for retries; when a concurrent twin
/// kept its answer first, that answer is the one given.
async fn keep(
    state: &AppState,
    actor: UserId,
    idempotency: Option<&Idempotency>,
    outcome: ImportOutcome,
) -> Result<Executed<ImportOutcome>, ApiError> {
    let Some(idem) = idempotency else {
        return Ok(Executed::Fresh(outcome));
    };
    let answer = StoredAnswer {
        code: StatusCode::OK.as_u16(),
        body: serde_json::to_value(&outcome).map_err(anyhow::Error::from)?,
    };
    let kept = idempotency::keep(&state.pool, actor, idem, answer.clone()).await?;
    Ok(match kept == answer {
        true => Executed::Fresh(outcome),
        false => Executed::Replayed(kept),
    })
}

/// What an import needs of a follow's answer.
struct LineAnswer {
    changed: bool,
    requested: bool,
    position: Option<LogPosition>,
}

impl LineAnswer {
    /// A follow's answer, fresh or stored.
    fn of(executed: Executed<RelationDecision>) -> Result<Self, ApiError> {
        Ok(match executed {
            Executed::Fresh(answer) => answer.into(),
            Executed::Replayed(stored) => serde_json::from_value::<StoredOutcome>(stored.body)
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("a stored answer: {e}")))?
                .into(),
        })
    }
}

impl From<RelationDecision> for LineAnswer {
    fn from(answer: RelationDecision) -> Self {
        Self {
            changed: answer.changed,
            requested: answer.relation.requested,
            position: answer.position,
        }
    }
}

/// A follow's answer as stored under its idempotency key.
#[derive(serde::Deserialize)]
struct StoredOutcome {
    changed: bool,
    relation: StoredRelation,
    position: Option<LogPosition>,
}

#[derive(serde::Deserialize)]
struct StoredRelation {
    #[serde(default)]
    requested: bool,
}

impl From<StoredOutcome> for LineAnswer {
    fn from(stored: StoredOutcome) -> Self {
        Self {
            changed: stored.changed,
            requested: stored.relation.requested,
            position: stored.position,
        }
    }
}
