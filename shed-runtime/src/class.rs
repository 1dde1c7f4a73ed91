//! Priority classes: what a class is configured with, and its live state.

use std::time::Duration;

use crate::limiter::state::{ClassTake, ClassWord};
use crate::metrics::ClassCounters;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// One part per million: shares are stored as integers so the hot path
/// computes a class's limit with one multiply and one divide.
const PPM: u64 = 1_000_000;

/// The configuration of one priority class.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::ClassSpec;
///
/// let batch = ClassSpec::new("batch", 3)
///     .share(0.3)
///     .floor(2)
///     .max_wait(Duration::from_millis(2));
/// assert_eq!(batch.name(), "batch");
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClassSpec {
    name: &'static str,
    rank: u32,
    share: f64,
    floor: u32,
    max_wait: Duration,
    /// Whether `max_wait` was set explicitly: a default budget follows the
    /// measured service time under the adaptive default limit.
    #[serde(skip)]
    max_wait_set: bool,
    enabled: bool,
}

impl ClassSpec {
    /// A class named `name` with priority `rank` (0 is served first), a full
    /// share of the capacity, no floor and a 50 ms `max_wait`.
    pub fn new(name: &'static str, rank: u32) -> Self {
        Self {
            name,
            rank,
            share: 1.0,
            floor: 0,
            max_wait: Duration::from_millis(50),
            max_wait_set: false,
            enabled: true,
        }
    }

    /// The most this class may hold, as a fraction of the capacity (0, 1].
    pub fn share(mut self, share: f64) -> Self {
        self.share = share;
        self
    }

    /// Slots this class is served first to, whenever it has demand, so
    /// that higher classes cannot starve it: while it holds fewer than
    /// `slots` and has a waiter, every slot given back goes to it before
    /// any other class, and no call of another class overtakes it on the
    /// fast path.
    ///
    /// A floor is a priority, not a reservation: slots are not kept idle
    /// for a class that has no demand. So if other classes hold every slot
    /// for longer than this class's `max_wait`, its call is refused when
    /// its budget runs out, before any slot comes back. Work that needs
    /// capacity held for it even then belongs on a limiter of its own (a
    /// bulkhead), built with [`Limiter::builder`](crate::Limiter::builder).
    pub fn floor(mut self, slots: u32) -> Self {
        self.floor = slots;
        self
    }

    /// How long a call of this class may wait for slots unless its
    /// `#[shed(max_wait = ...)]` says otherwise.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self.max_wait_set = true;
        self
    }

    /// Whether the budget was set with [`max_wait`](ClassSpec::max_wait).
    /// A default budget is scaled to the measured service time while the
    /// limiter's capacity is adaptive (see [`Config`](crate::Config)); a set
    /// one keeps its meaning.
    pub fn max_wait_is_set(&self) -> bool {
        self.max_wait_set
    }

    /// Whether the class starts switched on.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The class's name, as written in `#[shed(class = "...")]`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The priority rank (0 is served first).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The share of the capacity.
    pub fn share_of_capacity(&self) -> f64 {
        self.share
    }

    /// The floor in slots (see [`ClassSpec::floor`]).
    pub fn floor_slots(&self) -> u32 {
        self.floor
    }

    /// The default queue-wait budget.
    pub fn default_max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Whether the class starts switched on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The default classes from the seed: `critical` (rank 0, share 1.0,
    /// 50 ms), `optional` (rank 1, share 0.8, 20 ms) and `background`
    /// (rank 2, share 0.6, 5 ms).
    pub fn defaults() -> Vec<ClassSpec> {
        // Default budgets, not set ones: they follow the measured service
        // time under the adaptive default limit, in these proportions.
        let with_default_wait = |spec: ClassSpec, millis| ClassSpec {
            max_wait: Duration::from_millis(millis),
            ..spec
        };
        vec![
            with_default_wait(ClassSpec::new("critical", 0).share(1.0), 50),
            with_default_wait(ClassSpec::new("optional", 1).share(0.8), 20),
            with_default_wait(ClassSpec::new("background", 2).share(0.6), 5),
        ]
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("a class name must not be empty".into());
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err(format!(
                "class `{}`: share must be in (0, 1], got {}",
                self.name, self.share
            ));
        }
        Ok(())
    }
}

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
    pub(crate) enabled: AtomicBool,
    /// The share of this class's calls the overload controller admits,
    /// in parts per million, and the running sum that thins them evenly.
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
        let residual = specs.iter().position(|s| s.share >= 1.0 && s.floor == 0);
        specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| ClassState::new(spec, Some(i) != residual))
            .collect()
    }

    pub(crate) fn new(spec: ClassSpec, tracked: bool) -> Self {
        let share_ppm = ((spec.share * PPM as f64).round() as u64).clamp(1, PPM);
        Self {
            enabled: AtomicBool::new(spec.enabled),
            admit_fraction: AtomicU32::new(crate::overload::FULL),
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
            .max(u64::from(self.spec.floor).min(capacity))
            .max(1)
    }

    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub(crate) fn set_admit_fraction(&self, ppm: u32) {
        let full = crate::overload::FULL;
        let before = self.admit_fraction.swap(ppm.min(full), Ordering::Relaxed);
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
        self.admit_fraction.load(Ordering::Relaxed) >= crate::overload::FULL
    }

    /// Whether the overload controller lets this call of the class in:
    /// always unless it holds the class back; then, for a call with a
    /// `tenant`, whether its cohort is among the admitted fraction (see
    /// [`crate::with_tenant`]), and without one, evenly spaced calls making
    /// up the admitted fraction.
    #[inline]
    pub(crate) fn admitted_by_controller(&self, tenant: Option<u64>) -> bool {
        let fraction = self.admit_fraction.load(Ordering::Relaxed);
        if fraction >= crate::overload::FULL {
            return true;
        }
        if let Some(tenant) = tenant {
            let offset = self.cohort_offset.load(Ordering::Relaxed);
            return crate::tenant::cohort_admitted(tenant, fraction, crate::overload::FULL, offset);
        }
        let full = u64::from(crate::overload::FULL);
        let before = self
            .thinning
            .fetch_add(u64::from(fraction), Ordering::Relaxed);
        (before + u64::from(fraction)) / full > before / full
    }

    /// Takes `weight` from the class's share of `capacity`, if it has room
    /// and, when `yield_to_waiters`, no waiters of its own to yield to.
    /// The residual class has no share to enforce and no waiters flag: its
    /// waiters are held back by the limiter's own flag.
    #[inline]
    pub(crate) fn try_take(&self, weight: u64, capacity: u64, yield_to_waiters: bool) -> ClassTake {
        if self.tracked {
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
    pub(crate) fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// `(in_flight, admitted modulo 2^CLASS_ADMITTED_BITS)` of a tracked
    /// class; `None` for the residual class.
    pub(crate) fn tracked_counts(&self) -> Option<(u64, u64)> {
        self.tracked.then(|| self.word.load())
    }
}
