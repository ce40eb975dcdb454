//! The history checked against the log. The log is a total order, so every check is a walk of
//! it (and of the history sorted by time), not a search over interleavings: each answer is
//! judged against the states the log's prefixes give, folded here independently of the
//! service's own folds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::history::{Facts, Op, Outcome, Position, Verb, LOCKED};

/// One relation event as the log holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Follow(i64, i64),
    Unfollow(i64, i64),
    Block(i64, i64),
    Unblock(i64, i64),
    /// A follow request (of a locked user), counted toward the requester's limit.
    Request(i64, i64),
    /// A request approved (a `Follow` of the pair follows in its transaction), rejected or
    /// withdrawn.
    RequestEnded(i64, i64),
    /// Any other event (a post, a like, a repost): its request and place are checked, not its
    /// content.
    Other,
}

/// An event at its place, with the request that appended it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub at: Position,
    pub request: String,
    pub change: Change,
}

/// Every anomaly found, by kind, with a few examples each.
#[derive(Debug, Default)]
pub struct Anomalies {
    pub kinds: BTreeMap<&'static str, (usize, Vec<String>)>,
}

/// Kafka's topic against the log (found after the run, not by [`check`]).
pub const TOPIC: &str = "Kafka record out of order per key, missing or foreign";
/// `relations verify` against the read models (found after the run).
pub const VERIFY: &str = "read model unlike a fresh fold of the log";
/// A relay frozen while publishing kept its lock past its idle limit.
pub const TAKEOVER: &str = "frozen relay's lock not taken over";
/// A fault that broke nothing (a partition that dropped no packet): the trial's own defect.
pub const IDLE_FAULT: &str = "fault that broke nothing (the trial's own defect)";
/// A reader never caught up with the log after the run.
pub const LAGGING: &str = "reader not caught up 60 s after the run";

/// The kinds the checker counts, in the report's order.
pub const KINDS: [&str; 14] = [
    "acknowledged write missing from the log",
    "one Idempotency-Key in two transactions, or two answers",
    "real-time order violated",
    "read with min_position missing an event at or below it, or no prefix's state",
    "write's answer unlike the log after it",
    "rule 3 exceeded at a prefix",
    "refusal the log contradicts",
    "outcome never settled",
    "like or repost accepted where no prefix allows it",
    TOPIC,
    VERIFY,
    TAKEOVER,
    LAGGING,
    IDLE_FAULT,
];

impl Anomalies {
    pub fn found(&mut self, kind: &'static str, example: String) {
        debug_assert!(KINDS.contains(&kind));
        let entry = self.kinds.entry(kind).or_default();
        entry.0 += 1;
        if entry.1.len() < 3 {
            entry.1.push(example);
        }
    }

    /// How many of `kind`.
    pub fn count(&self, kind: &str) -> usize {
        self.kinds.get(kind).map_or(0, |e| e.0)
    }

    /// How many in all.
    pub fn total(&self) -> usize {
        self.kinds.values().map(|e| e.0).sum()
    }
}

/// The relations after some prefix of the log.
#[derive(Debug, Default, Clone)]
struct World {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    requests: BTreeSet<(i64, i64)>,
    /// Follows and pending requests: what rule 3 counts.
    following: HashMap<i64, usize>,
}

impl World {
    fn facts(&self, a: i64, b: i64) -> Facts {
        Facts {
            following: self.follows.contains(&(a, b)),
            followed_by: self.follows.contains(&(b, a)),
            blocking: self.blocks.contains(&(a, b)),
            blocked_by: self.blocks.contains(&(b, a)),
            requested: self.requests.contains(&(a, b)),
            requested_by: self.requests.contains(&(b, a)),
        }
    }

    /// Applies `change`; the users whose following count it changed.
    fn apply(&mut self, change: Change) -> Option<i64> {
        match change {
            Change::Follow(a, b) if self.follows.insert((a, b)) => {
                *self.following.entry(a).or_default() += 1;
                Some(a)
            }
            Change::Request(a, b) if self.requests.insert((a, b)) => {
                *self.following.entry(a).or_default() += 1;
                Some(a)
            }
            Change::Unfollow(a, b) if self.follows.remove(&(a, b)) => {
                *self.following.entry(a).or_default() -= 1;
                Some(a)
            }
            Change::RequestEnded(a, b) if self.requests.remove(&(a, b)) => {
                *self.following.entry(a).or_default() -= 1;
                Some(a)
            }
            Change::Block(a, b) => {
                self.blocks.insert((a, b));
                None
            }
            Change::Unblock(a, b) => {
                self.blocks.remove(&(a, b));
                None
            }
            _ => None,
        }
    }
}

/// What each prefix of the log gave: per ordered pair and per user, the states after each
/// transaction that changed them, at the transaction's first position (a reader sees whole
/// transactions only: within one, a group's events are in stream order, not decision order);
/// and per pair the state after each event (what a command's own decision left, as its answer
/// shows it). The first entry of each is the empty log's.
#[derive(Default)]
struct Timelines {
    pairs: HashMap<(i64, i64), Vec<(Position, Facts)>>,
    decided: HashMap<(i64, i64), Vec<(Position, Facts)>>,
    following: HashMap<i64, Vec<(Position, usize)>>,
    /// Each transaction's changes.
    transactions: HashMap<i64, Vec<Change>>,
    /// Each request's transactions.
    requests: HashMap<String, BTreeSet<i64>>,
    positions: BTreeSet<Position>,
}

const START: Position = (i64::MIN, i64::MIN);

fn users(change: Change) -> Option<(i64, i64)> {
    match change {
        Change::Follow(a, b) | Change::Unfollow(a, b) => Some((a, b)),
        Change::Block(a, b) | Change::Unblock(a, b) => Some((a, b)),
        Change::Request(a, b) | Change::RequestEnded(a, b) => Some((a, b)),
        Change::Other => None,
    }
}

fn push<T>(
    line: &mut HashMap<(i64, i64), Vec<(Position, T)>>,
    key: (i64, i64),
    at: Position,
    state: T,
    empty: T,
) {
    line.entry(key)
        .or_insert_with(|| vec![(START, empty)])
        .push((at, state));
}

impl Timelines {
    fn fold(log: &[Logged], limit: usize, anomalies: &mut Anomalies) -> Self {
        let mut world = World::default();
        let mut timelines = Self::default();
        for transaction in log.chunk_by(|a, b| a.at.0 == b.at.0) {
            let first = transaction[0].at;
            let (mut pairs, mut users_changed) = (BTreeSet::new(), BTreeSet::new());
            for logged in transaction {
                users_changed.extend(world.apply(logged.change));
                let pair = users(logged.change);
                for (x, y) in pair.into_iter().flat_map(|(a, b)| [(a, b), (b, a)]) {
                    push(
                        &mut timelines.decided,
                        (x, y),
                        logged.at,
                        world.facts(x, y),
                        Facts::default(),
                    );
                    pairs.insert((x, y));
                }
                timelines
                    .transactions
                    .entry(logged.at.0)
                    .or_default()
                    .push(logged.change);
                let request = timelines
                    .requests
                    .entry(logged.request.clone())
                    .or_default();
                request.insert(logged.at.0);
                timelines.positions.insert(logged.at);
            }
            for (x, y) in pairs {
                push(
                    &mut timelines.pairs,
                    (x, y),
                    first,
                    world.facts(x, y),
                    Facts::default(),
                );
            }
            for user in users_changed {
                let count = world.following[&user];
                let line = timelines
                    .following
                    .entry(user)
                    .or_insert_with(|| vec![(START, 0)]);
                line.push((first, count));
                if count > limit {
                    let follows: Vec<_> = world
                        .follows
                        .iter()
                        .chain(&world.requests)
                        .filter(|f| f.0 == user)
                        .map(|f| f.1)
                        .collect();
                    let changes: Vec<_> = transaction
                        .iter()
                        .map(|l| (l.at.1, &l.request, l.change))
                        .collect();
                    let example = format!(
                        "user {user} follows or asks {count} ({follows:?}) after transaction {}: {changes:?}",
                        first.0
                    );
                    anomalies.found("rule 3 exceeded at a prefix", example);
                }
            }
        }
        timelines
    }

    /// The pair's states, from the empty log's on.
    fn pair(&self, a: i64, b: i64) -> &[(Position, Facts)] {
        const NEVER: &[(Position, Facts)] = &[(
            START,
            Facts {
                following: false,
                followed_by: false,
                blocking: false,
                blocked_by: false,
                requested: false,
                requested_by: false,
            },
        )];
        self.pairs.get(&(a, b)).map_or(NEVER, Vec::as_slice)
    }

    /// What each of the pair's own events left (none when no event touched it).
    fn decided(&self, a: i64, b: i64) -> &[(Position, Facts)] {
        self.decided.get(&(a, b)).map_or(&[], Vec::as_slice)
    }

    /// The user's following counts (none when nothing changed them).
    fn following(&self, user: i64) -> &[(Position, usize)] {
        self.following.get(&user).map_or(&[], Vec::as_slice)
    }

    /// The states a timeline gives at the prefixes from `low` (included) to `high` (not).
    fn between<T: Copy>(line: &[(Position, T)], low: Position, high: Position) -> Vec<T> {
        let at_low = line.iter().rev().find(|(p, _)| *p <= low).map(|(_, s)| *s);
        let after = line
            .iter()
            .filter(|(p, _)| *p > low && *p < high)
            .map(|(_, s)| *s);
        at_low.into_iter().chain(after).collect()
    }
}

/// Where in the log an operation may have been decided: after every write acknowledged before
/// it was sent, before every write sent after it was answered (each found by a binary search
/// of the writes sorted by time).
struct Windows {
    /// Acknowledgements by time, with the latest position so far.
    completed: Vec<(std::time::Duration, Position)>,
    /// Sends by time, with the earliest position from there on.
    invoked: Vec<(std::time::Duration, Position)>,
    /// Each written transaction's first acknowledgement.
    acked: HashMap<Position, std::time::Duration>,
}

const END: Position = (i64::MAX, i64::MAX);

impl Windows {
    fn new(ops: &[Op]) -> Self {
        let written: Vec<(&Op, Position)> =
            ops.iter().filter_map(|o| Some((o, o.written()?))).collect();
        let mut completed: Vec<_> = written.iter().map(|(o, p)| (o.completed, *p)).collect();
        completed.sort();
        let mut latest = START;
        for entry in &mut completed {
            latest = latest.max(entry.1);
            entry.1 = latest;
        }
        let mut acked = HashMap::new();
        for (o, p) in &written {
            let first = acked.entry(*p).or_insert(o.completed);
            *first = (*first).min(o.completed);
        }
        let mut invoked: Vec<_> = written.iter().map(|(o, p)| (o.invoked, *p)).collect();
        invoked.sort();
        let mut earliest = END;
        for entry in invoked.iter_mut().rev() {
            earliest = earliest.min(entry.1);
            entry.1 = earliest;
        }
        Self {
            completed,
            invoked,
            acked,
        }
    }

    /// The lower end of `op`'s window on one stream's `line` (a pair's facts, or an actor's
    /// count under their guard: changes that commit in the line's order): its last change
    /// acknowledged before `op` was sent. The window's own `low` bounds the log, not a
    /// stream: the log orders transactions by xid, taken at a transaction's first write, not
    /// at its commit, so a change below `low` that nobody had acknowledged may still have been
    /// in flight, and committed after `op` was judged (the 3,000 s run found such a follow).
    fn low_on<T>(&self, op: &Op, line: &[(Position, T)]) -> Position {
        line.iter()
            .rev()
            .find(|(p, _)| self.acked.get(p).is_some_and(|t| *t < op.invoked))
            .map_or(START, |(p, _)| *p)
    }

    /// `(low, high)`: the prefixes from `low` (included) to `high` (not).
    fn of(&self, op: &Op) -> (Position, Position) {
        let before = self.completed.partition_point(|(t, _)| *t < op.invoked);
        let low = before.checked_sub(1).map_or(START, |i| self.completed[i].1);
        let after = self.invoked.partition_point(|(t, _)| *t <= op.completed);
        let high = self.invoked.get(after).map_or(END, |e| e.1);
        (low, high)
    }
}

/// Checks `ops` against `log` (the relation events in log order), under rule 3's `limit`.
pub fn check(ops: &[Op], log: &[Logged], limit: usize) -> Anomalies {
    let ops = &first_sent(ops);
    let mut anomalies = Anomalies::default();
    let timelines = Timelines::fold(log, limit, &mut anomalies);
    writes_are_in_the_log(ops, &timelines, &mut anomalies);
    keys_are_once(ops, &timelines, &mut anomalies);
    let windows = Windows::new(ops);
    real_time_order(ops, &windows, &mut anomalies);
    answers_match_prefixes(ops, &timelines, &windows, &mut anomalies);
    refusals_hold(ops, &timelines, &windows, limit, &mut anomalies);
    posts_accepted_where_allowed(ops, &timelines, &windows, &mut anomalies);
    anomalies
}

/// An accepted like or repost is allowed at some prefix between the last write acknowledged
/// before it was sent and the first write sent after it was answered.
fn posts_accepted_where_allowed(
    ops: &[Op],
    timelines: &Timelines,
    windows: &Windows,
    anomalies: &mut Anomalies,
) {
    for op in ops
        .iter()
        .filter(|o| matches!(o.verb, Verb::Like | Verb::Repost))
    {
        if !matches!(op.outcome, Outcome::Ok { .. }) {
            continue;
        }
        let (_, high) = windows.of(op);
        let line = timelines.pair(op.actor, op.target);
        let low = windows.low_on(op, line);
        let pair = Timelines::between(line, low, high);
        if !pair.iter().any(|f| post_decision(op, *f) == "OK") {
            let example = format!("{op:?}; window {low:?}..{high:?}; the pair's states {pair:?}");
            anomalies.found("like or repost accepted where no prefix allows it", example);
        }
    }
}

/// Each attempt of a key as sent when its first attempt was: a retry that settles an unknown
/// outcome replays (or makes) the one command, which may have taken effect any time after the
/// first attempt was sent.
fn first_sent(ops: &[Op]) -> Vec<Op> {
    let mut first: HashMap<&str, std::time::Duration> = HashMap::new();
    for op in ops {
        if let Some(key) = &op.key {
            let at = first.entry(key).or_insert(op.invoked);
            *at = (*at).min(op.invoked);
        }
    }
    let mut ops = ops.to_vec();
    for op in &mut ops {
        if let Some(key) = &op.key {
            op.invoked = first[key.as_str()];
        }
    }
    ops
}

/// The change a relation command that changed something leaves in its transaction (a follow
/// of a locked user: a request, of anyone else: a follow; an unfollow: the follow's or the
/// request's end).
fn expected(op: &Op) -> Option<Vec<Change>> {
    let (a, t) = (op.actor, op.target);
    Some(match op.verb {
        Verb::Follow if LOCKED.contains(&t) => vec![Change::Request(a, t)],
        Verb::Follow => vec![Change::Follow(a, t)],
        Verb::Unfollow => vec![Change::Unfollow(a, t), Change::RequestEnded(a, t)],
        Verb::Block => vec![Change::Block(a, t)],
        Verb::Unblock => vec![Change::Unblock(a, t)],
        Verb::Approve => vec![Change::Follow(t, a)],
        Verb::Status | Verb::Publish | Verb::Like | Verb::Repost => return None,
    })
}

/// How a like or a repost of `op`'s post is judged at a state of the pair (actor, author), in
/// SPEC's order: a post the actor may not read is `NOT_FOUND`, then a block either way is
/// `BLOCKED`, then a repost of a `followers` post is `NOT_REPOSTABLE`; else it is accepted
/// (`"OK"`).
fn post_decision(op: &Op, pair: Facts) -> &'static str {
    let followers_only = op.post.as_ref().is_some_and(|p| p.followers_only);
    // A locked author's posts are for their followers, whatever their visibility.
    let followers_only = followers_only || LOCKED.contains(&op.target);
    let readable = op.actor == op.target || !followers_only || pair.following;
    if !readable {
        "NOT_FOUND"
    } else if pair.blocking || pair.blocked_by {
        "BLOCKED"
    } else if op.verb == Verb::Repost && followers_only {
        "NOT_REPOSTABLE"
    } else {
        "OK"
    }
}

fn writes_are_in_the_log(ops: &[Op], timelines: &Timelines, anomalies: &mut Anomalies) {
    for op in ops {
        let Some(at) = op.written() else {
            continue;
        };
        // A relation command's own change in its transaction; any other command's request.
        let logged = timelines.positions.contains(&at)
            && match expected(op) {
                Some(changes) => timelines
                    .transactions
                    .get(&at.0)
                    .is_some_and(|t| changes.iter().any(|c| t.contains(c))),
                None => op
                    .key
                    .as_ref()
                    .and_then(|key| timelines.requests.get(key))
                    .is_some_and(|t| t.contains(&at.0)),
            };
        if !logged {
            let example = format!("{op:?}");
            anomalies.found("acknowledged write missing from the log", example);
        }
    }
}

fn keys_are_once(ops: &[Op], timelines: &Timelines, anomalies: &mut Anomalies) {
    const KIND: &str = "one Idempotency-Key in two transactions, or two answers";
    for (request, transactions) in &timelines.requests {
        if transactions.len() > 1 {
            anomalies.found(KIND, format!("{request}: transactions {transactions:?}"));
        }
    }
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        if let Some(key) = &op.key {
            by_key.entry(key).or_default().push(op);
        }
    }
    for (key, attempts) in by_key {
        let answers: BTreeSet<_> = attempts.iter().filter_map(|op| op.written()).collect();
        if answers.len() > 1 {
            anomalies.found(KIND, format!("{key}: answered {answers:?}"));
        }
        // Its transaction in the log, yet every definite answer says it changed nothing (a
        // retry that decided again instead of replaying).
        let logged = timelines.requests.get(key).and_then(|t| t.first());
        let definite: Vec<_> = attempts
            .iter()
            .filter(|op| matches!(op.outcome, Outcome::Ok { .. } | Outcome::Refused(_)))
            .collect();
        let answered_there = answers.iter().any(|p| Some(&p.0) == logged);
        if logged.is_some() && !definite.is_empty() && !answered_there {
            anomalies.found(
                KIND,
                format!("{key}: in the log, answered {:?}", definite[0].outcome),
            );
        }
        let settled = attempts
            .iter()
            .any(|op| matches!(op.outcome, Outcome::Ok { .. } | Outcome::Refused(_)));
        let open = attempts.iter().any(|op| op.outcome == Outcome::Unknown);
        if open && !settled {
            anomalies.found("outcome never settled", key.to_owned());
        }
    }
}

/// A write acknowledged before another was invoked is earlier in the log.
fn real_time_order(ops: &[Op], windows: &Windows, anomalies: &mut Anomalies) {
    for (op, at) in ops.iter().filter_map(|o| Some((o, o.written()?))) {
        let (latest, _) = windows.of(op);
        if latest > at {
            let example = format!("{op:?} at {at:?} after an acknowledged {latest:?}");
            anomalies.found("real-time order violated", example);
        }
    }
}

fn answers_match_prefixes(
    ops: &[Op],
    timelines: &Timelines,
    windows: &Windows,
    anomalies: &mut Anomalies,
) {
    for op in ops {
        let Outcome::Ok {
            facts: Some(facts),
            changed,
            position,
        } = op.outcome
        else {
            continue;
        };
        let line = timelines.pair(op.actor, op.target);
        if op.verb == Verb::Status {
            // No later than its window allows; no earlier than its min_position.
            let (_, high) = windows.of(op);
            let low = op.min_position.unwrap_or(START);
            if !Timelines::between(line, low, high.max(low)).contains(&facts) {
                let kind =
                    "read with min_position missing an event at or below it, or no prefix's state";
                anomalies.found(kind, format!("{op:?}"));
            }
        } else if let (true, Some(at)) = (changed, position) {
            let decided = timelines.decided(op.actor, op.target);
            if Timelines::between(decided, at, at) != vec![facts] {
                anomalies.found("write's answer unlike the log after it", format!("{op:?}"));
            }
        }
    }
}

/// A refused command's reason holds at some prefix between the last write acknowledged before
/// it was sent and the first write sent after it was answered.
fn refusals_hold(
    ops: &[Op],
    timelines: &Timelines,
    windows: &Windows,
    limit: usize,
    anomalies: &mut Anomalies,
) {
    for op in ops {
        let Outcome::Refused(code) = &op.outcome else {
            continue;
        };
        let (low, high) = windows.of(op);
        let line = timelines.pair(op.actor, op.target);
        let pair = Timelines::between(line, windows.low_on(op, line), high);
        let following = timelines.following(op.actor);
        let holds = match code.as_str() {
            code if matches!(op.verb, Verb::Like | Verb::Repost) => {
                pair.iter().any(|f| post_decision(op, *f) == code)
            }
            "BLOCKED" => pair.iter().any(|f| f.blocked_by),
            "BLOCKING_TARGET" => pair.iter().any(|f| f.blocking),
            "FOLLOW_LIMIT_REACHED" => {
                Timelines::between(following, windows.low_on(op, following), high)
                    .iter()
                    .any(|n| *n >= limit)
            }
            _ => false,
        };
        if !holds {
            // The evidence: the window, and the actor's following count around it.
            let near: Vec<_> = timelines
                .following(op.actor)
                .iter()
                .filter(|(p, _)| p.0 >= low.0 - 50 && p.0 <= high.0.saturating_add(50))
                .collect();
            let example =
                format!("{op:?}; window {low:?}..{high:?}; the actor's count near it {near:?}");
            anomalies.found("refusal the log contradicts", example);
        }
    }
}
