//! The limiter's admission word: in-flight weight, a "somebody is
//! waiting" flag and a running count of admissions packed into one atomic,
//! so that the fast path is one compare-and-swap and counting an admission
//! costs nothing extra. The capacity lives beside it. Each tracked class
//! has a word of the same layout.
//!
//! # Layout and why no field ever spills into another
//!
//! ```text
//!  63                    25   24   23                     0
//! +------------------------+----+------------------------+
//! | admissions (wrapping)  |flag|  in-flight weight      |
//! +------------------------+----+------------------------+
//! ```
//!
//! Every write to a word is one of these, and none carries or borrows
//! across a field boundary:
//!
//! 1. *Admit* (fast path, dispatcher): a compare-and-swap that adds
//!    `ADMIT_ONE + weight` only if `in_flight + weight <= limit`, where the
//!    limit is at most [`MAX_CAPACITY`] `< 2^24`. The in-flight field stays
//!    below `2^24`; the admission count wraps off the top of the `u64`.
//!    Nothing is added and then taken back, so there is no transient
//!    overshoot for concurrent calls to pile up (an earlier `fetch_add`
//!    fast path had one, and at capacities in the millions a few failed
//!    adds at once carried into the flag).
//! 2. *Admit unchecked* (observe mode): the same compare-and-swap, bounded
//!    by the field itself (`IN_FLIGHT_MASK`); a call that would not fit is
//!    admitted without being counted in flight.
//! 3. *Give back*: a `fetch_sub` of a weight that a matching admission
//!    added, so the field holds at least that much: no borrow.
//! 4. *Flag*: `fetch_or` / `fetch_and` of the flag bit alone.
//!
//! Weights are at most `u32::MAX` and every comparison is made in `u64`,
//! so `in_flight + weight` itself cannot overflow.

use crate::sync::{AtomicU64, Ordering};

const IN_FLIGHT_BITS: u32 = 24;
const IN_FLIGHT_MASK: u64 = (1 << IN_FLIGHT_BITS) - 1;
/// The flag bit: in the limiter's word, "a waiter may be blocked by the
/// limiter's capacity, so the fast path must not overtake it"; in a class's
/// word, "this class has waiters".
const WAITERS: u64 = 1 << IN_FLIGHT_BITS;
const ADMITTED_SHIFT: u32 = IN_FLIGHT_BITS + 1;
/// One admission, as added to the word.
const ADMIT_ONE: u64 = 1 << ADMITTED_SHIFT;

/// The largest capacity. Any value below `2^24` would keep the fields
/// apart (see the module docs); half of it leaves observe mode room to
/// count concurrency of twice the largest capacity.
pub(crate) const MAX_CAPACITY: u64 = IN_FLIGHT_MASK >> 1;
/// Admission counts wrap at this many bits; readers accumulate deltas.
pub(crate) const ADMITTED_BITS: u32 = 64 - ADMITTED_SHIFT;
/// Class admission counts wrap at this many bits (the same layout).
pub(crate) const CLASS_ADMITTED_BITS: u32 = ADMITTED_BITS;

/// The outcome of the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastTake {
    /// Taken; `admitted` counts admissions so far (wrapping).
    Taken { admitted: u64 },
    /// Not taken: the limiter is full or somebody waits. Nothing was
    /// changed.
    Full,
}

impl FastTake {
    #[cfg(all(test, not(shed_loom)))]
    fn admitted(self) -> Option<u64> {
        match self {
            FastTake::Taken { admitted } => Some(admitted),
            FastTake::Full => None,
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

fn admitted(word: u64) -> u64 {
    word >> ADMITTED_SHIFT
}

/// One packed word: the operations both the limiter and the classes use.
#[derive(Debug)]
struct Word(AtomicU64);

/// What an admission attempt on a [`Word`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// Taken; the word as it was before.
    Taken(u64),
    /// Not taken, because the flag was set (and the caller yields to it).
    Flagged,
    /// Not taken: it would not fit.
    NoRoom,
}

impl Word {
    fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Rule 1 and 2 of the module docs: adds `weight` and one admission if
    /// the in-flight weight stays within `limit` (at most the field), and,
    /// when `yield_to_flag`, only while the flag is clear.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    fn try_take(&self, weight: u64, limit: u64, yield_to_flag: bool) -> Take {
        debug_assert!(limit <= IN_FLIGHT_MASK);
        let mut word = self.0.load(Ordering::SeqCst);
        loop {
            if yield_to_flag && word & WAITERS != 0 {
                return Take::Flagged;
            }
            if in_flight(word) + weight > limit {
                return Take::NoRoom;
            }
            match self.0.compare_exchange_weak(
                word,
                word.wrapping_add(ADMIT_ONE + weight),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(previous) => return Take::Taken(previous),
                Err(actual) => word = actual,
            }
        }
    }

    /// Rule 3: gives back `weight` (one admission's), without touching the
    /// admission count. Returns the word as it was before.
    #[inline]
    fn give_back(&self, weight: u64) -> u64 {
        let previous = self.0.fetch_sub(weight, Ordering::SeqCst);
        debug_assert!(
            in_flight(previous) >= weight,
            "released more than was taken"
        );
        previous
    }

    /// Undoes a [`Word::try_take`] whose admission did not go through, the
    /// admission count included. Returns the word as it was before.
    fn untake(&self, weight: u64) -> u64 {
        let previous = self.0.fetch_sub(ADMIT_ONE + weight, Ordering::SeqCst);
        debug_assert!(in_flight(previous) >= weight, "undid more than was taken");
        previous
    }

    /// Rule 4.
    fn set_flag(&self, on: bool) {
        if on {
            self.0.fetch_or(WAITERS, Ordering::SeqCst);
        } else {
            self.0.fetch_and(!WAITERS, Ordering::SeqCst);
        }
    }
}

/// The limiter's word and its capacity.
#[derive(Debug)]
pub(crate) struct AdmissionWord {
    word: Word,
    capacity: AtomicU64,
}

impl AdmissionWord {
    pub(crate) fn new(capacity: u64) -> Self {
        assert!((1..=MAX_CAPACITY).contains(&capacity));
        Self {
            word: Word::new(),
            capacity: AtomicU64::new(capacity),
        }
    }

    pub(crate) fn load(&self) -> Snapshot {
        let word = self.word.load();
        Snapshot {
            in_flight: in_flight(word),
            capacity: self.capacity(),
            waiters: word & WAITERS != 0,
            admitted: admitted(word),
        }
    }

    #[inline]
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::SeqCst)
    }

    /// The fast path: takes `weight` if nobody waits and it fits under
    /// `capacity`. A call that does not get in changes nothing.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn try_take_uncontended(&self, weight: u64, capacity: u64) -> FastTake {
        match self.word.try_take(weight, capacity, true) {
            Take::Taken(previous) => FastTake::Taken {
                admitted: (admitted(previous) + 1) & ((1 << ADMITTED_BITS) - 1),
            },
            Take::Flagged | Take::NoRoom => FastTake::Full,
        }
    }

    /// Takes `weight` if it fits, waiters or not: used by the dispatcher,
    /// which runs under the queue lock and serves waiters in order.
    pub(crate) fn try_take_queued(&self, weight: u64) -> bool {
        matches!(
            self.word.try_take(weight, self.capacity(), false),
            Take::Taken(_)
        )
    }

    /// Takes `weight` whatever the capacity (observe mode counts real
    /// concurrency above the limit), if the in-flight field can hold it.
    /// Returns whether it was counted.
    pub(crate) fn take_unchecked(&self, weight: u64) -> bool {
        matches!(
            self.word.try_take(weight, IN_FLIGHT_MASK, false),
            Take::Taken(_)
        )
    }

    /// Gives `weight` back; returns whether a waiter may be blocked by the
    /// limiter's capacity.
    #[inline]
    pub(crate) fn give_back(&self, weight: u64) -> bool {
        self.word.give_back(weight) & WAITERS != 0
    }

    pub(crate) fn set_waiters(&self, waiters: bool) {
        self.word.set_flag(waiters);
    }

    /// Replaces the capacity, clamped to `1..=MAX_CAPACITY`.
    pub(crate) fn set_capacity(&self, capacity: u64) {
        self.capacity
            .store(capacity.clamp(1, MAX_CAPACITY), Ordering::SeqCst);
    }
}

/// A class's own word: its in-flight weight, whether it has waiters, and
/// its admissions, for classes whose share or floor must be enforced.
#[derive(Debug)]
pub(crate) struct ClassWord(Word);

/// What [`ClassWord::try_take`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClassTake {
    Taken,
    /// The class has waiters: a new call must not overtake them.
    Waiters,
    /// The class is at its share.
    NoRoom,
}

impl ClassWord {
    pub(crate) fn new() -> Self {
        Self(Word::new())
    }

    /// `(in_flight, admitted modulo 2^CLASS_ADMITTED_BITS)`.
    pub(crate) fn load(&self) -> (u64, u64) {
        let word = self.0.load();
        (in_flight(word), admitted(word))
    }

    /// Whether the class's waiters flag is set.
    #[cfg(test)]
    pub(crate) fn has_waiters(&self) -> bool {
        self.0.load() & WAITERS != 0
    }

    /// Takes `weight` if the class stays within `limit` and, when
    /// `yield_to_waiters`, only while the class has no waiters.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn try_take(&self, weight: u64, limit: u64, yield_to_waiters: bool) -> ClassTake {
        match self.0.try_take(weight, limit, yield_to_waiters) {
            Take::Taken(_) => ClassTake::Taken,
            Take::Flagged => ClassTake::Waiters,
            Take::NoRoom => ClassTake::NoRoom,
        }
    }

    /// Counts `weight` whatever the share (observe mode), if the field can
    /// hold it; returns whether it was counted.
    pub(crate) fn take_unchecked(&self, weight: u64) -> bool {
        matches!(
            self.0.try_take(weight, IN_FLIGHT_MASK, false),
            Take::Taken(_)
        )
    }

    /// Undoes a `try_take` whose admission did not go through; returns
    /// whether the class has waiters (which the take may have held back).
    pub(crate) fn untake(&self, weight: u64) -> bool {
        self.0.untake(weight) & WAITERS != 0
    }

    /// Gives `weight` back; returns whether the class has waiters.
    #[inline]
    pub(crate) fn give_back(&self, weight: u64) -> bool {
        self.0.give_back(weight) & WAITERS != 0
    }

    pub(crate) fn set_waiters(&self, waiters: bool) {
        self.0.set_flag(waiters);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fast_path_respects_capacity_and_waiters() {
        let word = AdmissionWord::new(3);
        assert_eq!(word.try_take_uncontended(2, 3).admitted(), Some(1));
        assert_eq!(word.try_take_uncontended(2, 3), FastTake::Full);
        assert_eq!(word.try_take_uncontended(1, 3).admitted(), Some(2));
        assert!(!word.give_back(1));
        word.set_waiters(true);
        assert_eq!(
            word.try_take_uncontended(1, 3),
            FastTake::Full,
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
    fn a_refused_fast_path_leaves_the_word_as_it_was() {
        let word = AdmissionWord::new(MAX_CAPACITY);
        assert!(word.try_take_queued(MAX_CAPACITY));
        let before = word.word.load();
        for _ in 0..4 {
            assert_eq!(
                word.try_take_uncontended(MAX_CAPACITY, MAX_CAPACITY),
                FastTake::Full
            );
        }
        assert_eq!(word.word.load(), before);
    }

    #[test]
    fn capacity_changes_keep_in_flight() {
        let word = AdmissionWord::new(4);
        assert!(word.try_take_uncontended(4, 4).admitted().is_some());
        word.set_capacity(2);
        word.give_back(3);
        assert!(!word.try_take_queued(2));
        assert!(word.try_take_queued(1));
        assert_eq!(word.load().in_flight, 2);
    }

    #[test]
    fn unchecked_takes_stop_at_the_field_instead_of_carrying() {
        let word = AdmissionWord::new(MAX_CAPACITY);
        assert!(word.take_unchecked(MAX_CAPACITY));
        assert!(word.take_unchecked(MAX_CAPACITY));
        assert!(!word.take_unchecked(MAX_CAPACITY), "would carry");
        let s = word.load();
        assert_eq!(s.in_flight, 2 * MAX_CAPACITY);
        assert!(!s.waiters);
        assert_eq!(s.admitted, 2);
        // The field is over the capacity: enforcing admits nothing more.
        assert_eq!(word.try_take_uncontended(1, MAX_CAPACITY), FastTake::Full);
        assert!(!word.try_take_queued(1));
    }

    #[test]
    fn admission_counts_wrap_without_touching_in_flight() {
        let word = AdmissionWord::new(4);
        word.word.0.store(
            (u64::MAX >> ADMITTED_SHIFT) << ADMITTED_SHIFT,
            Ordering::SeqCst,
        );
        assert_eq!(
            word.try_take_uncontended(1, 4).admitted(),
            Some(0),
            "wrapped"
        );
        assert_eq!(word.load().in_flight, 1);
        assert!(!word.load().waiters);
    }

    #[test]
    fn class_words_count_bound_and_yield_to_their_waiters() {
        let class = ClassWord::new();
        assert_eq!(class.try_take(2, 2, true), ClassTake::Taken);
        assert_eq!(class.try_take(1, 2, true), ClassTake::NoRoom);
        assert!(!class.untake(2));
        assert_eq!(class.load(), (0, 0));
        assert_eq!(class.try_take(1, 2, true), ClassTake::Taken);
        class.set_waiters(true);
        assert_eq!(class.try_take(1, 2, true), ClassTake::Waiters);
        assert_eq!(class.try_take(1, 2, false), ClassTake::Taken);
        assert!(class.give_back(1));
        assert!(class.give_back(1));
        assert_eq!(class.load(), (0, 2));
        assert!(class.has_waiters());
    }
}
