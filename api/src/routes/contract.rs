//! Error answers that groups of routes share, documented once: each set is a type a route's
//! `#[utoipa::path(responses(...))]` names beside its own success answer. Every error body is
//! [`ErrorBody`].

use std::collections::BTreeMap;

use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::IntoResponses;

/// `(status, description)` answers, each with an [`ErrorBody`](crate::error::ErrorBody).
fn errors(answers: &[(u16, &str)]) -> BTreeMap<String, RefOr<Response>> {
    answers
        .iter()
        .map(|&(status, description)| {
            let content = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build();
            let response = ResponseBuilder::new()
                .description(description)
                .content("application/json", content)
                .build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

macro_rules! error_sets {
    ($($(#[$doc:meta])* $name:ident = [$(($status:literal, $description:literal)),* $(,)?];)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                errors(&[$(($status, $description)),*])
            }
        }
    )*};
}

error_sets! {
    /// What a route that needs no token answers when one is sent anyway: every routed request
    /// has its token checked (a malformed, expired or revoked token is 401, a banned user's 403).
    TokenErrors = [
        (401, "UNAUTHENTICATED, TOKEN_REVOKED, ACCOUNT_ERASED: a token was sent, and it is refused"),
        (403, "USER_BANNED: a token was sent, and its user is banned"),
    ];
    /// A query's errors when it needs a bearer token.
    BearerQueryErrors = [
        (400, ""),
        (401, ""),
        (403, "USER_BANNED"),
        (503, "NOT_CAUGHT_UP"),
    ];
    /// A query's errors about a user (`/users/{id}/...`), which needs no token.
    UserQueryErrors = [
        (400, ""),
        (401, "a token was sent, and it is refused"),
        (403, "USER_BANNED: a token was sent, and its user is banned"),
        (404, ""),
        (503, "NOT_CAUGHT_UP"),
    ];
    /// A query of a user's graph (following, followers, friends), which needs no token.
    GraphListErrors = [
        (400, ""),
        (401, "a token was sent, and it is refused"),
        (403, "USER_BANNED: a token was sent, and its user is banned; HIDDEN: the user hides their graph from the caller (or is locked and not followed by them)"),
        (404, ""),
        (503, "NOT_CAUGHT_UP"),
    ];
    /// A relation query's errors (status, batch), which needs no token.
    RelationQueryErrors = [
        (400, ""),
        (401, "a token was sent, and it is refused"),
        (403, "USER_BANNED: a token was sent, and its user is banned; HIDDEN: a user asked about hides their graph, and the caller is not one of the pair"),
        (503, "NOT_CAUGHT_UP"),
    ];
    /// A relation command's errors (`{"target"}` commands).
    RelationCommandErrors = [
        (400, "INVALID_INPUT, SELF_RELATION"),
        (401, "UNAUTHENTICATED"),
        (403, "BLOCKED"),
        (409, "BLOCKING_TARGET, FOLLOW_LIMIT_REACHED"),
        (413, ""),
        (415, ""),
        (422, "IDEMPOTENCY_KEY_REUSED"),
        (429, "RATE_LIMITED, with Retry-After"),
        (503, "UNAVAILABLE, with Retry-After"),
    ];
    /// A list command's errors (issue 46).
    ListCommandErrors = [
        (400, "INVALID_INPUT: a bad title, no user or more than 100"),
        (401, ""),
        (403, "USER_BANNED"),
        (404, "not a list of the caller's, or an erased user named"),
        (409, "LIST_LIMIT_REACHED, NOT_FOLLOWING"),
        (413, ""),
        (415, ""),
        (422, "IDEMPOTENCY_KEY_REUSED"),
        (429, "RATE_LIMITED, with Retry-After"),
        (503, "UNAVAILABLE, with Retry-After"),
    ];
    /// A filter command's errors (issue 47).
    FilterCommandErrors = [
        (400, "INVALID_INPUT: a bad phrase, no context, an unknown one, or no time left"),
        (401, ""),
        (403, "USER_BANNED"),
        (404, "not a live filter of the caller's"),
        (409, "FILTER_LIMIT_REACHED"),
        (413, ""),
        (415, ""),
        (422, "IDEMPOTENCY_KEY_REUSED"),
        (429, "RATE_LIMITED, with Retry-After"),
        (503, "UNAVAILABLE, with Retry-After"),
    ];
    /// A dismissed suggestion's errors (issue 46).
    DismissErrors = [
        (400, "SELF_RELATION"),
        (401, ""),
        (403, "USER_BANNED"),
        (404, "malformed or erased user id"),
        (422, "IDEMPOTENCY_KEY_REUSED"),
        (429, "RATE_LIMITED, with Retry-After"),
        (503, "UNAVAILABLE, with Retry-After"),
    ];
    /// A like's or an unlike's errors (posts and comments), and a bookmark's or an
    /// unbookmark's (issue 46: the same refusals).
    LikeErrors = [
        (400, ""),
        (401, ""),
        (403, "BLOCKED: a block either way"),
        (404, "unknown, deleted or malformed id, or a post the caller may not read"),
        (422, ""),
        (429, ""),
        (503, ""),
    ];
    /// A repost's or an unrepost's errors (issue 44), judged in this order.
    RepostErrors = [
        (400, ""),
        (401, ""),
        (403, "BLOCKED: a block either way; NOT_REPOSTABLE: a followers-only post, or its author is locked (a repost only)"),
        (404, "unknown, deleted or malformed id, or a post the caller may not read"),
        (422, ""),
        (429, ""),
        (503, ""),
    ];
    /// A pin's or an unpin's errors.
    PinErrors = [
        (400, ""),
        (401, ""),
        (403, "NOT_ALLOWED: not the post's author"),
        (404, ""),
        (422, ""),
        (429, ""),
        (503, ""),
    ];
    /// An erasure's errors (`DELETE /me`, and the admin's).
    EraseErrors = [
        (401, "UNAUTHENTICATED, TOKEN_REVOKED, ACCOUNT_ERASED"),
        (403, "USER_BANNED; not an admin"),
        (404, ""),
        (422, ""),
        (429, ""),
        (503, ""),
    ];
    /// A ban's or an unban's errors.
    BanErrors = [
        (401, ""),
        (403, "not an admin"),
        (404, ""),
        (422, ""),
        (429, ""),
        (503, ""),
    ];
}

#[cfg(test)]
mod tests {
    /// Every routed request has a token sent with it checked, whether the route needs one or
    /// not: every operation documents the refusals (401) and a banned user's 403.
    #[test]
    fn every_operation_documents_a_refused_token() {
        let document = super::super::document();
        let mut missing = Vec::new();
        for (path, item) in &document.paths.paths {
            let operations = [
                ("get", &item.get),
                ("post", &item.post),
                ("put", &item.put),
                ("patch", &item.patch),
                ("delete", &item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                for status in ["401", "403"] {
                    if !operation.responses.responses.contains_key(status) {
                        missing.push(format!("{method} {path}: {status}"));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }
}
