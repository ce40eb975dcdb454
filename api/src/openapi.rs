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
    let mut document = serde_json::to_value(contract).expect("an OpenAPI document serialises");
    camel_case_links(&mut document);
    let json = document.to_string();
    let answer = ([(header::CONTENT_TYPE, "application/json")], json);
    Router::new().route("/openapi.json", get(move || async move { answer.clone() }))
}

/// utoipa 5.5 writes a Link Object's fields in snake case (`operation_id`), which OpenAPI
/// names in camel case (`operationId`, `operationRef`, `requestBody`); without them a link
/// names no operation and schemathesis's stateful phase cannot follow it.
fn camel_case_links(document: &mut serde_json::Value) {
    const METHODS: [&str; 8] = [
        "get", "put", "post", "delete", "options", "head", "patch", "trace",
    ];
    let operations = document["paths"].as_object_mut().into_iter().flatten();
    let operations = operations.flat_map(|(_, item)| item.as_object_mut().into_iter().flatten());
    // A path item's other fields (its parameters, a summary) hold no answers.
    let operations = operations.filter(|(key, _)| METHODS.contains(&key.as_str()));
    for (_, operation) in operations {
        let answers = operation["responses"].as_object_mut().into_iter().flatten();
        for (_, answer) in answers {
            let links = answer.get_mut("links").and_then(|l| l.as_object_mut());
            for (_, link) in links.into_iter().flatten() {
                let Some(link) = link.as_object_mut() else {
                    continue;
                };
                for (snake, camel) in [
                    ("operation_id", "operationId"),
                    ("operation_ref", "operationRef"),
                    ("request_body", "requestBody"),
                ] {
                    if let Some(value) = link.remove(snake) {
                        link.insert(camel.to_owned(), value);
                    }
                }
            }
        }
    }
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
