//! `/api/v1/me/suggestions`: whom the caller might follow, and dismissing one (issue 46).

pub mod dismiss;
pub mod list;
