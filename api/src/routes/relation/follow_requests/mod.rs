//! `/api/v1/relation/follow_requests/*`: a locked account's answers to requests to follow it.

pub mod approve;
pub mod reject;
