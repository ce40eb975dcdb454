//! The executor's streams as last committed by this process, bounded in two generations.
//!
//! A stream is cached so that a command does not reload it: the group's lock-and-load brings a
//! cached stream up to date from its version, and an uncached one from the start (a few events
//! for a pair, a post or a like). Most streams are written once or twice and never again (a
//! post's, a like's), so a cache that keeps everything grows with the log. The soak of issue 48
//! measured it: 89,100 streams after five minutes of a steady mix, on the way to a bound of
//! 200,000 per kind, then emptied at once.
//!
//! Here new and used streams go to the young generation; when it is full the old generation is
//! dropped and the young one takes its place. A stream used in either generation is kept, so
//! the streams in use stay cached, and at most two generations of entries are ever held: 16,384
//! streams of each kind, about 3 MiB (a stream id, a small aggregate and the table's room). A
//! miss costs little: the group's lock-and-load reads the stream's few events in the statement
//! it runs anyway.

use std::collections::HashMap;

use crate::append::Loaded;

/// Streams per generation: at most twice this many are held per kind of aggregate.
pub(crate) const GENERATION: usize = 8_192;

/// Streams by id, in two generations (see the module docs).
pub(crate) struct StreamCache<A> {
    young: HashMap<String, Loaded<A>>,
    old: HashMap<String, Loaded<A>>,
    generation: usize,
}

impl<A: Clone> StreamCache<A> {
    /// An empty cache of `generation` streams per generation.
    pub fn new(generation: usize) -> Self {
        Self {
            young: HashMap::new(),
            old: HashMap::new(),
            generation: generation.max(1),
        }
    }

    /// The stream as last committed by this process, if cached; a stream found in the old
    /// generation moves to the young one.
    pub fn get(&mut self, stream: &str) -> Option<Loaded<A>> {
        if let Some(loaded) = self.young.get(stream) {
            return Some(loaded.clone());
        }
        let (id, loaded) = self.old.remove_entry(stream)?;
        self.insert(id, loaded.clone());
        Some(loaded)
    }

    /// The version cached of `stream` (0 when it is not).
    pub fn version(&self, stream: &str) -> usize {
        self.young
            .get(stream)
            .or_else(|| self.old.get(stream))
            .map_or(0, |loaded| loaded.version)
    }

    /// Keeps `loaded` as `stream`, in the young generation.
    pub fn insert(&mut self, stream: String, loaded: Loaded<A>) {
        self.old.remove(&stream);
        self.young.insert(stream, loaded);
        if self.young.len() >= self.generation {
            self.old = std::mem::take(&mut self.young);
        }
    }

    /// Forgets `stream`.
    pub fn remove(&mut self, stream: &str) {
        self.young.remove(stream);
        self.old.remove(stream);
    }

    /// Streams held.
    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(version: usize) -> Loaded<u32> {
        Loaded {
            aggregate: version as u32,
            version,
        }
    }

    #[test]
    fn it_holds_at_most_two_generations_and_keeps_what_is_used() {
        let mut cache = StreamCache::new(3);
        for n in 0..3 {
            cache.insert(format!("s{n}"), loaded(n + 1));
        }
        // The young generation filled and became the old one.
        assert_eq!(cache.len(), 3);
        // s0 is used: it moves back to the young generation.
        assert_eq!(cache.get("s0").map(|l| l.version), Some(1));
        for n in 3..5 {
            cache.insert(format!("s{n}"), loaded(n + 1));
        }
        // The young generation (s0, s3, s4) filled: s1 and s2, never used again, are gone.
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.version("s0"), 1);
        assert_eq!(cache.version("s1"), 0);
        assert!(cache.get("s2").is_none());
        for n in 0..100 {
            cache.insert(format!("t{n}"), loaded(1));
            assert!(cache.len() <= 2 * 3);
        }
        cache.remove("t99");
        assert_eq!(cache.version("t99"), 0);
    }
}
