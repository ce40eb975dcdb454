//! Moving a following list between accounts (or services) as CSV, `user_id,since`:
//! `GET /api/v1/me/following.csv` streams it ([`export`]); `POST /api/v1/me/following/import`
//! follows each listed user as a follow command would ([`import`]); [`csv`] is the file's shape.

pub mod csv;
pub mod export;
pub mod import;
