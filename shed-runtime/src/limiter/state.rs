//! The limiter's admission word: in-flight weight, a "somebody is
//! waiting" flag and a running count of admissions packed into one atomic,
//! so that the fast path is a single compare-and-swap and counting an
//! admission costs nothing extra. The capacity lives beside it.

use crate::sync::{AtomicU64, Ordering};

const IN_FLIGHT_BITS: u32 = 24;
const IN_FLIGHT_MASK: u64 = (1 << IN_FLIGHT_BITS) - 1;
const WAITERS: u64 = 1 << IN_FLIGHT_BITS;
const ADMITTED_SHIFT: u32 = IN_FLIGHT_BITS + 1;
/// One admission, as added to the word.
const ADMIT_ONE: u64 = 1 << ADMITTED_SHIFT;

/// The largest capacity: half of what the in-flight field holds, so that
/// the fast path's transient over-adds (undone at once) can never carry
/// into the flag or the counter.
pub(crate) const MAX_CAPACITY: u64 = IN_FLIGHT_MASK >> 1;
/// Admission counts wrap at this many bits; readers accumulate deltas.
pub(crate) const ADMITTED_BITS: u32 = 64 - ADMITTED_SHIFT;

/// The outcome of the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastTake {
    /// Taken; `admitted` counts admissions so far (wrapping).
    Taken { admitted: u64 },
    /// Not taken. If somebody waits, a dispatcher that saw the transient
    /// take may have stopped short, so the caller must dispatch.
    Full { waiters: bool },
}

impl FastTake {
    #[cfg(test)]
    fn admitted(self) -> Option<u64> {
        match self {
            FastTake::Taken { admitted } => Some(admitted),
            FastTake::Full { .. } => None,
        }
    }
}

/// A decoded snapshot of the admission word and the capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) in_flight: u64,
    pub(crate) capacity: u64,
    pub(crate) waiters: bool,
    /// Admissions so far, modulo 2^[`ADMITTED_BITS`].
    pub(crate) admitted: u64,
}

/// How many admissions happened between two readings of the (wrapping)
/// admission count.
pub(crate) fn admissions_between(earlier: u64, later: u64) -> u64 {
    later.wrapping_sub(earlier) & ((1 << ADMITTED_BITS) - 1)
}

fn in_flight(word: u64) -> u64 {
    word & IN_FLIGHT_MASK
}

#[derive(Debug)]
pub(crate) struct AdmissionWord {
    word: AtomicU64,
    capacity: AtomicU64,
}

impl AdmissionWord {
    pub(crate) fn new(capacity: u64) -> Self {
        assert!(capacity <= MAX_CAPACITY);
        Self {
            word: AtomicU64::new(0),
            capacity: AtomicU64::new(capacity),
        }
    }

    pub(crate) fn load(&self) -> Snapshot {
        let word = self.word.load(Ordering::SeqCst);
        Snapshot {
            in_flight: in_flight(word),
            capacity: self.capacity(),
            waiters: word & WAITERS != 0,
            admitted: word >> ADMITTED_SHIFT,
        }
    }

    #[inline]
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::SeqCst)
    }

    /// The fast path: takes `weight` if nobody waits and it fits under
    /// `capacity`, with one `fetch_add` that never retries under
    /// contention. A take that does not fit is undone at once; while it
    /// stands, others see the word fuller than it is, which can only send
    /// them to the slow path, never admit too much.
    #[inline]
    pub(crate) fn try_take_uncontended(&self, weight: u64, capacity: u64) -> FastTake {
        if weight > capacity {
            // Never add what could not fit: a huge weight would carry
            // out of the in-flight field.
            return FastTake::Full { waiters: false };
        }
        let previous = self.word.fetch_add(ADMIT_ONE + weight, Ordering::SeqCst);
        if previous & WAITERS == 0 && in_flight(previous) + weight <= capacity {
            return FastTake::Taken {
                admitted: ((previous >> ADMITTED_SHIFT) + 1) & ((1 << ADMITTED_BITS) - 1),
            };
        }
        let before_undo = self.word.fetch_sub(ADMIT_ONE + weight, Ordering::SeqCst);
        FastTake::Full {
            waiters: before_undo & WAITERS != 0,
        }
    }

    /// Takes `weight` if it fits, waiters or not: used by the dispatcher,
    /// which runs under the queue lock and serves waiters in order.
    pub(crate) fn try_take_queued(&self, weight: u64) -> bool {
        let capacity = self.capacity();
        let mut word = self.word.load(Ordering::SeqCst);
        loop {
            if in_flight(word) + weight > capacity {
                return false;
            }
            let new = word.wrapping_add(ADMIT_ONE + weight);
            match self
                .word
                .compare_exchange_weak(word, new, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    /// Takes `weight` whatever the capacity (observe mode counts real
    /// concurrency above the limit).
    pub(crate) fn take_unchecked(&self, weight: u64) {
        let previous = self.word.fetch_add(ADMIT_ONE + weight, Ordering::SeqCst);
        debug_assert!(in_flight(previous) + weight <= IN_FLIGHT_MASK);
    }

    /// Gives `weight` back; returns whether somebody is waiting.
    #[inline]
    pub(crate) fn give_back(&self, weight: u64) -> bool {
        let previous = self.word.fetch_sub(weight, Ordering::SeqCst);
        debug_assert!(
            in_flight(previous) >= weight,
            "released more than was taken"
        );
        previous & WAITERS != 0
    }

    pub(crate) fn set_waiters(&self, waiters: bool) {
        if waiters {
            self.word.fetch_or(WAITERS, Ordering::SeqCst);
        } else {
            self.word.fetch_and(!WAITERS, Ordering::SeqCst);
        }
    }

    /// Replaces the capacity; returns whether somebody is waiting (who
    /// may now fit).
    pub(crate) fn set_capacity(&self, capacity: u64) -> bool {
        self.capacity
            .store(capacity.clamp(1, MAX_CAPACITY), Ordering::SeqCst);
        self.word.load(Ordering::SeqCst) & WAITERS != 0
    }
}

/// A class's own word: its in-flight weight and its admissions, for
/// classes whose share or floor must be enforced.
#[derive(Debug)]
pub(crate) struct ClassWord(AtomicU64);

const CLASS_ADMITTED_SHIFT: u32 = IN_FLIGHT_BITS;
const CLASS_ADMIT_ONE: u64 = 1 << CLASS_ADMITTED_SHIFT;
/// Class admission counts wrap at this many bits.
pub(crate) const CLASS_ADMITTED_BITS: u32 = 64 - CLASS_ADMITTED_SHIFT;

impl ClassWord {
    pub(crate) fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// `(in_flight, admitted modulo 2^CLASS_ADMITTED_BITS)`.
    pub(crate) fn load(&self) -> (u64, u64) {
        let word = self.0.load(Ordering::SeqCst);
        (in_flight(word), word >> CLASS_ADMITTED_SHIFT)
    }

    /// Takes `weight` if the class stays within `limit`.
    #[inline]
    pub(crate) fn try_take(&self, weight: u64, limit: u64) -> bool {
        let mut word = self.0.load(Ordering::SeqCst);
        loop {
            if in_flight(word) + weight > limit {
                return false;
            }
            match self.0.compare_exchange_weak(
                word,
                word.wrapping_add(CLASS_ADMIT_ONE + weight),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    pub(crate) fn take_unchecked(&self, weight: u64) {
        self.0.fetch_add(CLASS_ADMIT_ONE + weight, Ordering::SeqCst);
    }

    /// Undoes a `try_take` whose admission did not go through.
    pub(crate) fn untake(&self, weight: u64) {
        self.0.fetch_sub(CLASS_ADMIT_ONE + weight, Ordering::SeqCst);
    }

    #[inline]
    pub(crate) fn give_back(&self, weight: u64) {
        self.0.fetch_sub(weight, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fast_path_respects_capacity_and_waiters() {
        let word = AdmissionWord::new(3);
        assert_eq!(word.try_take_uncontended(2, 3).admitted(), Some(1));
        assert_eq!(
            word.try_take_uncontended(2, 3),
            FastTake::Full { waiters: false }
        );
        assert_eq!(word.try_take_uncontended(1, 3).admitted(), Some(2));
        assert!(!word.give_back(1));
        word.set_waiters(true);
        assert_eq!(
            word.try_take_uncontended(1, 3),
            FastTake::Full { waiters: true },
            "fast path must yield to waiters"
        );
        assert!(word.try_take_queued(1));
        assert!(word.give_back(3));
        let s = word.load();
        assert_eq!(
            (s.in_flight, s.capacity, s.waiters, s.admitted),
            (0, 3, true, 3)
        );
    }

    #[test]
    fn capacity_changes_keep_in_flight() {
        let word = AdmissionWord::new(4);
        assert!(word.try_take_uncontended(4, 4).admitted().is_some());
        assert!(!word.set_capacity(2));
        word.give_back(3);
        assert!(!word.try_take_queued(2));
        assert!(word.try_take_queued(1));
        assert_eq!(word.load().in_flight, 2);
    }

    #[test]
    fn admission_counts_wrap_without_touching_in_flight() {
        let word = AdmissionWord::new(4);
        word.word.store(
            (u64::MAX >> ADMITTED_SHIFT) << ADMITTED_SHIFT,
            Ordering::SeqCst,
        );
        assert_eq!(
            word.try_take_uncontended(1, 4).admitted(),
            Some(0),
            "wrapped"
        );
        assert_eq!(word.load().in_flight, 1);
    }

    #[test]
    fn class_words_count_and_bound() {
        let class = ClassWord::new();
        assert!(class.try_take(2, 2));
        assert!(!class.try_take(1, 2));
        class.untake(2);
        assert_eq!(class.load(), (0, 0));
        assert!(class.try_take(1, 2));
        class.give_back(1);
        assert_eq!(class.load(), (0, 1));
    }
}
