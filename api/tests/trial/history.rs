//! A trial's history: every operation a client invoked, when, and how it ended.

use std::time::Duration;

/// A place in the log: `(transaction, position)`, ordered as the log is read.
pub type Position = (i64, i64);

/// Reads a position as answers carry it (`"tx.gp"`).
pub fn position(text: &str) -> Option<Position> {
    let (tx, gp) = text.split_once('.')?;
    Some((tx.parse().ok()?, gp.parse().ok()?))
}

/// What an operation asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Follow,
    Unfollow,
    Block,
    Unblock,
    /// `GET /relation/status`: a read.
    Status,
    /// `POST /posts`: the actor publishes a post (`followers` or `public`).
    Publish,
    /// The actor likes a post of the target's.
    Like,
    /// The actor reposts a post of the target's.
    Repost,
    /// The actor (a locked user) approves the target's follow request.
    Approve,
}

/// The users whose accounts are locked all through the trial: a follow of them is a request
/// (counted toward rule 3 until it ends) that they approve, and their posts are for their
/// followers alone.
pub const LOCKED: [i64; 2] = [11, 12];

impl Verb {
    /// Whether it is a command (sent under a key), not a read.
    pub fn writes(self) -> bool {
        self != Verb::Status
    }

    /// A relation command's path segment.
    pub fn relation_command(self) -> Option<&'static str> {
        match self {
            Verb::Follow => Some("follow"),
            Verb::Unfollow => Some("unfollow"),
            Verb::Block => Some("block"),
            Verb::Unblock => Some("unblock"),
            Verb::Approve => Some("follow_requests/approve"),
            _ => None,
        }
    }
}

/// A post the trial published and its clients like and repost: its author is the operation's
/// target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostRef {
    pub id: String,
    /// `followers` (else `public`).
    pub followers_only: bool,
}

/// The facts of a pair seen from one side: its follows, blocks and pending requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    pub following: bool,
    pub followed_by: bool,
    pub blocking: bool,
    pub blocked_by: bool,
    pub requested: bool,
    pub requested_by: bool,
}

impl Facts {
    /// From an answer's `Relation`.
    pub fn of(relation: &serde_json::Value) -> Option<Self> {
        let flag = |name: &str| relation[name].as_bool();
        Some(Self {
            following: flag("following")?,
            followed_by: flag("followed_by")?,
            blocking: flag("blocking")?,
            blocked_by: flag("blocked_by")?,
            requested: flag("requested")?,
            requested_by: flag("requested_by")?,
        })
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx: a write's `changed` and `position`, and the relation the answer shows.
    Ok {
        changed: bool,
        position: Option<Position>,
        facts: Option<Facts>,
    },
    /// A definite refusal (4xx) and its code.
    Refused(String),
    /// No definite answer (503, a timeout, a connection lost after sending): it may or may
    /// not have happened; a retry under its key settles it.
    Unknown,
    /// Never reached a server (the connection was refused): it did not happen.
    NotSent,
}

/// One operation of one client.
#[derive(Debug, Clone)]
pub struct Op {
    pub client: usize,
    /// The instance it was sent to.
    pub instance: usize,
    pub verb: Verb,
    pub actor: i64,
    pub target: i64,
    /// A write's `Idempotency-Key`, also its `x-request-id` (so its events name it).
    pub key: Option<String>,
    /// A read's `min_position`.
    pub min_position: Option<Position>,
    /// The post a publication made (once answered), or the one a like or repost names.
    pub post: Option<PostRef>,
    /// Since the trial began.
    pub invoked: Duration,
    pub completed: Duration,
    pub outcome: Outcome,
}

impl Op {
    /// A write's position in the log, when it changed something.
    pub fn written(&self) -> Option<Position> {
        match self.outcome {
            Outcome::Ok {
                position: Some(p), ..
            } if self.verb.writes() => Some(p),
            _ => None,
        }
    }
}
