//! How many live streams each user holds open on this instance (SPEC, "Hardening"): at most
//! `RELATIONS_STREAMS_PER_USER`, the feed's and the notifications' together. A slot is taken
//! when a stream opens and given back when its connection drops, whatever ends it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use relations_domain::UserId;

use crate::error::ApiError;

/// Each user's open streams, and the most each may hold.
#[derive(Debug, Clone)]
pub struct StreamSlots {
    open: Arc<Mutex<HashMap<UserId, usize>>>,
    per_user: usize,
}

impl StreamSlots {
    /// At most `per_user` open streams per user.
    pub fn new(per_user: usize) -> Self {
        Self {
            open: Arc::default(),
            per_user,
        }
    }

    /// A slot for one more stream of `user`, or 429 `TOO_MANY_STREAMS` (the open ones stay).
    pub fn take(&self, user: UserId) -> Result<StreamSlot, ApiError> {
        let mut open = self
            .open
            .lock()
            .expect("never poisoned: no panic while held");
        let count = open.entry(user).or_insert(0);
        if *count >= self.per_user {
            return Err(ApiError::TooManyStreams(self.per_user));
        }
        *count += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            user,
        })
    }

    /// How many streams `user` holds open here.
    pub fn open(&self, user: UserId) -> usize {
        let open = self
            .open
            .lock()
            .expect("never poisoned: no panic while held");
        open.get(&user).copied().unwrap_or(0)
    }
}

/// One open stream's slot, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    slots: StreamSlots,
    user: UserId,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .open
            .lock()
            .expect("never poisoned: no panic while held");
        if let Some(count) = open.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_user_and_given_back_on_drop() {
        let slots = StreamSlots::new(2);
        let (a, b) = (UserId::try_from(1).unwrap(), UserId::try_from(2).unwrap());
        let first = slots.take(a).unwrap();
        let _second = slots.take(a).unwrap();
        assert!(matches!(slots.take(a), Err(ApiError::TooManyStreams(2))));
        let _other = slots.take(b).unwrap();
        drop(first);
        let _again = slots.take(a).unwrap();
        assert!(matches!(slots.take(a), Err(ApiError::TooManyStreams(2))));
    }
}
