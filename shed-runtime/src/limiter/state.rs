//! The limiter's admission word: in-flight weight, capacity and a
//! "somebody is waiting" flag packed into one atomic, so that the fast path
//! is a single compare-and-swap and a capacity change can never race with
//! an admission.

use crate::sync::{AtomicU64, Ordering};

const FIELD_BITS: u32 = 31;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const CAPACITY_SHIFT: u32 = FIELD_BITS;
const WAITERS: u64 = 1 << (2 * FIELD_BITS);

/// The largest capacity (and in-flight weight) the packed word can hold.
pub(crate) const MAX_CAPACITY: u64 = FIELD_MASK;

/// A decoded snapshot of the admission word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) in_flight: u64,
    pub(crate) capacity: u64,
    pub(crate) waiters: bool,
}

impl Snapshot {
    fn decode(word: u64) -> Self {
        Self {
            in_flight: word & FIELD_MASK,
            capacity: (word >> CAPACITY_SHIFT) & FIELD_MASK,
            waiters: word & WAITERS != 0,
        }
    }
}

#[derive(Debug)]
pub(crate) struct AdmissionWord(AtomicU64);

impl AdmissionWord {
    pub(crate) fn new(capacity: u64) -> Self {
        assert!(capacity <= MAX_CAPACITY);
        Self(AtomicU64::new(capacity << CAPACITY_SHIFT))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot::decode(self.0.load(Ordering::SeqCst))
    }

    /// Takes `weight` if nobody waits and it fits: the fast path.
    #[inline]
    pub(crate) fn try_take_uncontended(&self, weight: u64) -> bool {
        self.try_take_where(weight, |s| !s.waiters)
    }

    /// Takes `weight` if it fits, waiters or not: used by the dispatcher,
    /// which runs under the queue lock and serves waiters in order.
    pub(crate) fn try_take_queued(&self, weight: u64) -> bool {
        self.try_take_where(weight, |_| true)
    }

    #[inline]
    fn try_take_where(&self, weight: u64, allowed: impl Fn(Snapshot) -> bool) -> bool {
        let mut word = self.0.load(Ordering::SeqCst);
        loop {
            let s = Snapshot::decode(word);
            if !allowed(s) || s.in_flight + weight > s.capacity {
                return false;
            }
            match self.0.compare_exchange_weak(
                word,
                word + weight,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    /// Takes `weight` whatever the capacity (observe mode counts real
    /// concurrency above the limit).
    pub(crate) fn take_unchecked(&self, weight: u64) {
        let previous = Snapshot::decode(self.0.fetch_add(weight, Ordering::SeqCst));
        debug_assert!(previous.in_flight + weight <= FIELD_MASK);
    }

    /// Gives `weight` back; returns whether somebody is waiting.
    #[inline]
    pub(crate) fn give_back(&self, weight: u64) -> bool {
        let previous = Snapshot::decode(self.0.fetch_sub(weight, Ordering::SeqCst));
        debug_assert!(previous.in_flight >= weight, "released more than was taken");
        previous.waiters
    }

    pub(crate) fn set_waiters(&self, waiters: bool) {
        if waiters {
            self.0.fetch_or(WAITERS, Ordering::SeqCst);
        } else {
            self.0.fetch_and(!WAITERS, Ordering::SeqCst);
        }
    }

    /// Replaces the capacity; returns the new snapshot.
    pub(crate) fn set_capacity(&self, capacity: u64) -> Snapshot {
        let capacity = capacity.min(MAX_CAPACITY);
        let mut word = self.0.load(Ordering::SeqCst);
        loop {
            let new = (word & !(FIELD_MASK << CAPACITY_SHIFT)) | (capacity << CAPACITY_SHIFT);
            match self
                .0
                .compare_exchange_weak(word, new, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Snapshot::decode(new),
                Err(actual) => word = actual,
            }
        }
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fast_path_respects_capacity_and_waiters() {
        let word = AdmissionWord::new(3);
        assert!(word.try_take_uncontended(2));
        assert!(!word.try_take_uncontended(2));
        assert!(word.try_take_uncontended(1));
        assert!(!word.give_back(1));
        word.set_waiters(true);
        assert!(
            !word.try_take_uncontended(1),
            "fast path must yield to waiters"
        );
        assert!(word.try_take_queued(1));
        assert!(word.give_back(3));
        assert_eq!(
            word.load(),
            Snapshot {
                in_flight: 0,
                capacity: 3,
                waiters: true
            }
        );
    }

    #[test]
    fn capacity_changes_keep_in_flight() {
        let word = AdmissionWord::new(4);
        assert!(word.try_take_uncontended(4));
        let s = word.set_capacity(2);
        assert_eq!((s.in_flight, s.capacity), (4, 2));
        word.give_back(3);
        assert!(!word.try_take_uncontended(2));
        assert!(word.try_take_uncontended(1));
    }
}
