//! `GET /openapi.json`: the HTTP contract as OpenAPI 3.1. Its head is here; utoipa generates its
//! paths from the handlers' own `#[utoipa::path]` annotations and the types they return,
//! collected as each route is registered (`crate::routes::router`). A test checks real answers
//! against it, route by route.

use axum::http::header;
use axum::routing::get;
use axum::Router;
use utoipa::{Modify, OpenApi};

use crate::error::ErrorBody;
use crate::state::AppState;

/// The route serving `contract` (written once, as it never changes while serving).
pub fn router(contract: &utoipa::openapi::OpenApi) -> Router<AppState> {
    let json = contract.to_json().expect("an OpenAPI document serialises");
    let answer = ([(header::CONTENT_TYPE, "application/json")], json);
    Router::new().route("/openapi.json", get(move || async move { answer.clone() }))
}

/// The document's head: the title and security scheme, and the error body every route answers
/// with (the routes add their paths and the rest of the schemas).
pub fn head() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document's head.
#[derive(OpenApi)]
#[openapi(
    info(title = "relations", description = "Follows, blocks and the follow feed, event-sourced."),
    // A quote's shapes (issue 44): `QuoteView` refers back to `Post` without recursing
    // (`no_recursion`), so its parts are named here.
    components(schemas(
        ErrorBody,
        relations_projections::views::QuoteView,
        relations_projections::views::QuoteState,
        relations_projections::views::PostView
    )),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}
