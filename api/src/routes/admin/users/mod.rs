//! `/api/v1/admin/users/{id}/*` (admin): the sign-on service's token revocations and bans
//! (seed 002's single sign-on) and erasures (issue 25), one file each. Each is a command on the user's `account`
//! stream; every instance enforces it within a second (its graph folds the event), with no
//! database round trip per request (see [`crate::auth`]).

pub mod ban;
pub mod erase;
pub mod revoke;
pub mod unban;
