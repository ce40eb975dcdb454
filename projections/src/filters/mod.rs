//! Filters (issue 47): muted words applied at read time. So far the matching alone
//! ([`matching`]); the filters' stream, read model and contexts come next (SPEC.md, "Reply
//! controls, filters, notification policy").

pub mod matching;
