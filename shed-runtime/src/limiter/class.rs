//! A class's live state inside a limiter: its share of the slots, its
//! switch, the overload controller's admitted fraction, its counters.

use super::counters::ClassCounters;
use super::gate::Gate;
use super::state::{ClassTake, ClassWord};
use crate::class::ClassSpec;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// One part per million: shares are stored as integers so the hot path
/// computes a class's limit with one multiply and one divide.
const PPM: u64 = 1_000_000;

/// Admission fractions are stored in parts per million.
pub(crate) const FULL: u32 = 1_000_000;

/// A class's live state inside a limiter.
///
/// A class whose share or floor must be enforced keeps its own word of
/// in-flight weight and admissions (*tracked*). The first class with a
/// full share and no floor needs neither, so it keeps none: it is the
/// *residual* class, whose figures are the limiter's totals minus the
/// tracked classes'. With the default classes that is `critical`, whose
/// calls then cost one atomic operation to admit and one to release.
#[derive(Debug)]
pub(crate) struct ClassState {
    pub(crate) spec: ClassSpec,
    share_ppm: u64,
    tracked: bool,
    /// The fast path's one look at the class: its switch, and copies of
    /// the limiter's mode, of whether the controller holds it back and of
    /// `tracked` (see `gate.rs`).
    pub(crate) gate: Gate,
    /// The share of this class's calls the overload controller admits,
    /// in parts per million, and the running sum that thins them evenly;
    /// `gate` keeps a copy of whether it is below the full share.
    admit_fraction: AtomicU32,
    thinning: AtomicU64,
    /// Where tenant cohorts start in the admitted range: moved by an
    /// eighth of it at each new episode of partial shedding.
    cohort_offset: AtomicU32,
    word: ClassWord,
    pub(crate) counters: ClassCounters,
}

impl ClassState {
    /// Builds the live states of `specs`, choosing the residual class.
    pub(crate) fn all(specs: Vec<ClassSpec>) -> Vec<ClassState> {
        let residual = specs
            .iter()
            .position(|s| s.share_of_capacity() >= 1.0 && s.floor_slots() == 0);
        specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| ClassState::new(spec, Some(i) != residual))
            .collect()
    }

    pub(crate) fn new(spec: ClassSpec, tracked: bool) -> Self {
        let share_ppm = ((spec.share_of_capacity() * PPM as f64).round() as u64).clamp(1, PPM);
        Self {
            gate: Gate::new(spec.is_enabled(), tracked),
            admit_fraction: AtomicU32::new(FULL),
            thinning: AtomicU64::new(0),
            cohort_offset: AtomicU32::new(0),
            share_ppm,
            tracked,
            spec,
            word: ClassWord::new(),
            counters: ClassCounters::default(),
        }
    }

    /// The most weight this class may hold when the capacity is `capacity`:
    /// its share, rounded down, but never below its floor or one slot.
    #[inline]
    pub(crate) fn limit(&self, capacity: u64) -> u64 {
        if self.share_ppm == PPM {
            return capacity;
        }
        (capacity * self.share_ppm / PPM)
            .max(u64::from(self.spec.floor_slots()).min(capacity))
            .max(1)
    }

    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        !self.gate.has(Gate::DISABLED)
    }

    /// Switches the class on or off (the gate's bit is the switch).
    pub(crate) fn set_enabled(&self, enabled: bool) {
        self.gate.set(Gate::DISABLED, !enabled);
    }

    pub(crate) fn set_admit_fraction(&self, ppm: u32) {
        let full = FULL;
        let before = self.admit_fraction.swap(ppm.min(full), Ordering::SeqCst);
        self.gate.follow(Gate::HELD_BACK, || {
            self.admit_fraction.load(Ordering::SeqCst) < full
        });
        if before >= full && ppm < full {
            // A new episode: rotate the cohorts a little.
            let offset = self.cohort_offset.load(Ordering::Relaxed);
            self.cohort_offset
                .store((offset + full / 8) % full, Ordering::Relaxed);
        }
    }

    /// Whether the overload controller holds nothing of this class back.
    #[inline]
    pub(crate) fn admits_everything(&self) -> bool {
        self.admit_fraction.load(Ordering::Relaxed) >= FULL
    }

    /// Whether the overload controller lets this call of the class in:
    /// always unless it holds the class back; then, for a call with a
    /// `tenant`, whether its cohort is among the admitted fraction (see
    /// [`crate::with_tenant`]), and without one, evenly spaced calls making
    /// up the admitted fraction.
    #[inline]
    pub(crate) fn admitted_by_controller(&self, tenant: Option<u64>) -> bool {
        let fraction = self.admit_fraction.load(Ordering::Relaxed);
        if fraction >= FULL {
            return true;
        }
        if let Some(tenant) = tenant {
            let offset = self.cohort_offset.load(Ordering::Relaxed);
            return crate::tenant::cohort_admitted(tenant, fraction, FULL, offset);
        }
        let full = u64::from(FULL);
        let before = self
            .thinning
            .fetch_add(u64::from(fraction), Ordering::Relaxed);
        (before + u64::from(fraction)) / full > before / full
    }

    /// Takes `weight` from the class's share of `capacity`, if it has room
    /// and, when `yield_to_waiters`, no waiters of its own to yield to.
    /// The residual class has no share to enforce and no waiters flag: its
    /// waiters are held back by the limiter's own flag.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn try_take(&self, weight: u64, capacity: u64, yield_to_waiters: bool) -> ClassTake {
        self.try_take_as(self.tracked, weight, capacity, yield_to_waiters)
    }

    /// [`ClassState::try_take`] by a caller that knows whether the class
    /// is tracked (the fast path reads it from the gate).
    // Always: as `try_take`.
    #[inline(always)]
    pub(crate) fn try_take_as(
        &self,
        tracked: bool,
        weight: u64,
        capacity: u64,
        yield_to_waiters: bool,
    ) -> ClassTake {
        debug_assert_eq!(tracked, self.tracked);
        if tracked {
            self.word
                .try_take(weight, self.limit(capacity), yield_to_waiters)
        } else {
            ClassTake::Taken
        }
    }

    /// Undoes a `try_take` whose admission did not go through; returns
    /// whether the class has waiters (whom the undone take may have kept
    /// out).
    #[inline]
    pub(crate) fn untake(&self, weight: u64) -> bool {
        self.tracked && self.word.untake(weight)
    }

    /// Counts `weight` whatever the share (observe mode); returns whether
    /// it was counted (see [`ClassWord::take_unchecked`]).
    pub(crate) fn take_unchecked(&self, weight: u64) -> bool {
        !self.tracked || self.word.take_unchecked(weight)
    }

    /// Gives `weight` back; returns whether the class has waiters.
    #[inline]
    pub(crate) fn give_back(&self, weight: u64) -> bool {
        self.tracked && self.word.give_back(weight)
    }

    /// Sets or clears the class's waiters flag (tracked classes only; under
    /// the queue lock).
    pub(crate) fn set_waiters(&self, waiters: bool) {
        if self.tracked {
            self.word.set_waiters(waiters);
        }
    }

    /// Whether the class's waiters flag is set.
    #[cfg(test)]
    pub(crate) fn has_waiters_flag(&self) -> bool {
        self.tracked && self.word.has_waiters()
    }

    /// Whether this class can be held back by its own share.
    #[inline]
    pub(crate) fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// `(in_flight, admitted modulo 2^CLASS_ADMITTED_BITS)` of a tracked
    /// class; `None` for the residual class.
    pub(crate) fn tracked_counts(&self) -> Option<(u64, u64)> {
        self.tracked.then(|| self.word.load())
    }
}
