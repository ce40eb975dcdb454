//! Moving a following list between accounts (or services) as CSV, `user_id,since`:
//! `GET /api/v1/me/following.csv` streams it; `POST /api/v1/me/following/import` follows each
//! listed user as a follow command would.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use relations_domain::{RelationCommand, UserId};
use relations_projections::relations::query::FOLLOWING_KEYED;
use relations_store::idempotency::{self, Prior};
use relations_store::{Executed, LogPosition, RelationChange, StoredAnswer};
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiCsv;
use crate::routes::command::CommandRequest;
use crate::state::AppState;

/// Most data lines an import takes (the header is not counted).
pub const MAX_IMPORT_LINES: usize = 1000;

/// Rows read from the read model per round trip while exporting.
const EXPORT_PAGE: i64 = 500;

/// The CSV header, both ways.
const HEADER: [&str; 2] = ["user_id", "since"];

/// The transfer routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/me/following.csv", get(export))
        .route("/api/v1/me/following/import", post(import))
}

/// The transfer routes' contract.
#[derive(OpenApi)]
#[openapi(paths(export, import))]
pub struct Doc;

/// Whom the caller follows, as CSV (`user_id,since`, newest first, the following list's
/// order), streamed page by page from the read model.
#[utoipa::path(get, path = "/api/v1/me/following.csv", tag = "queries", security(("bearer" = [])),
    responses((status = 200, content_type = "text/csv", body = String,
               description = "`user_id,since` then one line per followed user"),
              (status = 401, body = ErrorBody)))]
async fn export(State(state): State<AppState>, actor: Actor) -> Response {
    let header = csv_line(HEADER);
    let pool = state.pool.clone();
    // (key after which the next page starts; whether the list is exhausted)
    let start: (Option<(DateTime<Utc>, i64)>, bool) = (None, false);
    let pages = futures::stream::unfold(start, move |(after, done)| {
        let pool = pool.clone();
        async move {
            if done {
                return None;
            }
            let page = FOLLOWING_KEYED
                .page(&pool, actor.user, after, EXPORT_PAGE)
                .await;
            match page {
                Err(error) => {
                    tracing::warn!(%error, "following.csv: a page failed; the stream ends");
                    Some((Err(std::io::Error::other(error)), (after, true)))
                }
                Ok(edges) => {
                    let last = edges.last().map(|e| (e.since, e.user.get()));
                    let mut chunk = Vec::with_capacity(edges.len() * 40);
                    for edge in &edges {
                        chunk.extend(csv_line([
                            edge.user.to_string(),
                            edge.since
                                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                        ]));
                    }
                    let exhausted = (edges.len() as i64) < EXPORT_PAGE;
                    Some((Ok(Bytes::from(chunk)), (last, exhausted)))
                }
            }
        }
    });
    let body = futures::StreamExt::chain(
        futures::stream::once(async move { Ok(Bytes::from(header)) }),
        pages,
    );
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"following.csv\"",
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// One CSV record, with its line end.
fn csv_line<T: AsRef<[u8]>>(fields: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(fields)
        .expect("writing to memory cannot fail");
    writer.into_inner().expect("writing to memory cannot fail")
}

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
/// the line at fault.
#[utoipa::path(post, path = "/api/v1/me/following/import", tag = "commands",
    request_body(content = String, content_type = "text/csv",
                 description = "header `user_id,since` (or `user_id`), at most 1,000 lines"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
    security(("bearer" = [])),
    responses((status = 200, body = ImportOutcome),
              (status = 400, body = ErrorBody, description = "INVALID_CSV or TOO_MANY_LINES, with `line`"),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"),
              (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After")))]
async fn import(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiCsv(body): ApiCsv,
) -> Result<Response, ApiError> {
    let lines = parse(&body)?;
    let ids: Vec<i64> = lines.iter().map(|&(_, id)| id).collect();
    let idempotency = request.admit(&state, "import", &ids).await?;
    let actor = request.actor();
    if let Some(idem) = &idempotency {
        match idempotency::prior(&state.pool, actor, idem).await? {
            Prior::Unused => {}
            Prior::Answered(first) => return Ok(replayed(first)),
            Prior::Reused => return Err(ApiError::IdempotencyKeyReused),
        }
    }
    // Every line at once: they share group commits. Each line has its own key under the
    // import's, so an import cut short and retried follows nobody twice.
    let decided = futures::future::join_all(lines.iter().enumerate().map(|(n, &(_, id))| {
        let (state, metadata) = (&state, &request.metadata);
        let part = idempotency.as_ref().map(|idem| idem.part(n));
        async move {
            let target = UserId::try_from(id).map_err(|_| ApiError::SelfRelation)?;
            let command = RelationCommand::Follow { actor, target };
            if command.pair().is_err() {
                return Err(ApiError::SelfRelation);
            }
            Ok(state
                .relations
                .execute(command, metadata, part.as_ref())
                .await?)
        }
    }))
    .await;
    let mut outcome = ImportOutcome::default();
    for ((_, id), result) in lines.iter().zip(decided) {
        let answer: LineAnswer = match result {
            Ok(Executed::Fresh(answer)) => answer.into(),
            Ok(Executed::Replayed(stored)) => serde_json::from_value::<StoredOutcome>(stored.body)
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("a stored answer: {e}")))?
                .into(),
            Err(error) if error.is_client_error() => {
                outcome.refused.push(Refused {
                    user: *id,
                    code: error.code().to_owned(),
                });
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
    metrics::counter!("relations_commands_total", "command" => "import").increment(1);
    let Some(idem) = &idempotency else {
        return Ok(Json(outcome).into_response());
    };
    let answer = StoredAnswer {
        status: StatusCode::OK.as_u16(),
        body: serde_json::to_value(&outcome).map_err(anyhow::Error::from)?,
    };
    let kept = idempotency::keep(&state.pool, actor, idem, answer.clone()).await?;
    Ok(match kept == answer {
        true => Json(outcome).into_response(),
        false => replayed(kept),
    })
}

/// The first answer to an import, given again.
fn replayed(first: StoredAnswer) -> Response {
    let status = StatusCode::from_u16(first.status).unwrap_or(StatusCode::OK);
    (status, [("idempotent-replayed", "true")], Json(first.body)).into_response()
}

/// What an import needs of a follow's answer.
struct LineAnswer {
    changed: bool,
    requested: bool,
    position: Option<LogPosition>,
}

impl From<RelationChange> for LineAnswer {
    fn from(answer: RelationChange) -> Self {
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

/// The data lines of an import body: `(line number, user id)`, the header being line 1. Each
/// line is one CSV record (ids and times never hold a line break), so a fault is reported
/// with the line a person sees in the file, blank lines counted.
fn parse(body: &[u8]) -> Result<Vec<(usize, i64)>, ApiError> {
    let bad = |line: usize, message: String| ApiError::BadCsv {
        code: "INVALID_CSV",
        line,
        message,
    };
    let record = |line: usize, text: &[u8]| -> Result<Vec<String>, ApiError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text);
        match reader.records().next() {
            None => Ok(Vec::new()),
            Some(Ok(fields)) => Ok(fields.iter().map(str::to_owned).collect()),
            Some(Err(e)) => Err(bad(line, e.to_string())),
        }
    };
    let mut numbered = body
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let header = match numbered.next() {
        // Spreadsheets often begin a UTF-8 file with a byte-order mark.
        Some((_, text)) => record(1, text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text))?,
        None => Vec::new(),
    };
    if header != HEADER && header != HEADER[..1] {
        return Err(bad(
            1,
            format!("expected the header user_id,since (or user_id), got {header:?}"),
        ));
    }
    let mut lines = Vec::new();
    for (line, text) in numbered {
        let fields = record(line, text)?;
        if fields.iter().all(String::is_empty) {
            continue;
        }
        if lines.len() == MAX_IMPORT_LINES {
            return Err(ApiError::BadCsv {
                code: "TOO_MANY_LINES",
                line,
                message: format!("at most {MAX_IMPORT_LINES} lines after the header"),
            });
        }
        if fields.len() > header.len() {
            return Err(bad(line, format!("expected {} fields", header.len())));
        }
        let id = &fields[0];
        let user: UserId = id
            .parse()
            .map_err(|_| bad(line, format!("user_id {id:?} is not a user id")))?;
        if let Some(since) = fields.get(1).filter(|s| !s.is_empty()) {
            DateTime::parse_from_rfc3339(since)
                .map_err(|_| bad(line, format!("since {since:?} is not an RFC 3339 time")))?;
        }
        lines.push((line, user.get()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(body: &str) -> (String, usize) {
        match parse(body.as_bytes()) {
            Err(ApiError::BadCsv { code, line, .. }) => (code.to_owned(), line),
            other => panic!("{body:?}: {other:?}"),
        }
    }

    #[test]
    fn reads_the_exports_shape_and_names_the_line_at_fault() {
        let lines = parse(b"user_id,since\n3,2026-11-23T10:00:00Z\n\n4,\r\n5\n").unwrap();
        assert_eq!(lines, vec![(2, 3), (4, 4), (5, 5)]);
        assert_eq!(parse(b"user_id\n7\n").unwrap(), vec![(2, 7)]);
        assert_eq!(
            parse("\u{feff}user_id\n7".as_bytes()).unwrap(),
            vec![(2, 7)]
        );
        assert_eq!(failure(""), ("INVALID_CSV".into(), 1));
        assert_eq!(failure("id,since\n3\n"), ("INVALID_CSV".into(), 1));
        assert_eq!(
            failure("user_id,since\n3\nabc\n"),
            ("INVALID_CSV".into(), 3)
        );
        assert_eq!(failure("user_id,since\n0\n"), ("INVALID_CSV".into(), 2));
        assert_eq!(
            failure("user_id,since\n3,yesterday\n"),
            ("INVALID_CSV".into(), 2)
        );
        assert_eq!(failure("user_id\n3,4\n"), ("INVALID_CSV".into(), 2));
        let many: String = std::iter::once("user_id".to_owned())
            .chain((1..=1001).map(|i| i.to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(failure(&many), ("TOO_MANY_LINES".into(), 1002));
        assert_eq!(csv_line(["1", "a,b"]), b"1,\"a,b\"\n".to_vec());
    }
}
