//! Priority classes: what a class is configured with, and its live state.

use std::time::Duration;

use crate::metrics::ClassCounters;
use crate::sync::{AtomicBool, AtomicU64, Ordering};

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
            enabled: true,
        }
    }

    /// The most this class may hold, as a fraction of the capacity (0, 1].
    pub fn share(mut self, share: f64) -> Self {
        self.share = share;
        self
    }

    /// Slots reserved for this class whenever it has demand, so that higher
    /// classes cannot starve it forever.
    pub fn floor(mut self, slots: u32) -> Self {
        self.floor = slots;
        self
    }

    /// How long a call of this class may wait for slots unless its
    /// `#[shed(max_wait = ...)]` says otherwise.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
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

    /// The reserved floor in slots.
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
        vec![
            ClassSpec::new("critical", 0)
                .share(1.0)
                .max_wait(Duration::from_millis(50)),
            ClassSpec::new("optional", 1)
                .share(0.8)
                .max_wait(Duration::from_millis(20)),
            ClassSpec::new("background", 2)
                .share(0.6)
                .max_wait(Duration::from_millis(5)),
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
#[derive(Debug)]
pub(crate) struct ClassState {
    pub(crate) spec: ClassSpec,
    share_ppm: u64,
    pub(crate) enabled: AtomicBool,
    /// Weight currently held by calls of this class.
    pub(crate) in_flight: AtomicU64,
    pub(crate) counters: ClassCounters,
}

impl ClassState {
    pub(crate) fn new(spec: ClassSpec) -> Self {
        let share_ppm = ((spec.share * PPM as f64).round() as u64).clamp(1, PPM);
        Self {
            enabled: AtomicBool::new(spec.enabled),
            share_ppm,
            spec,
            in_flight: AtomicU64::new(0),
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

    /// Adds `weight` to the class's in-flight weight if that keeps it within
    /// its share of `capacity`.
    #[inline]
    pub(crate) fn try_take(&self, weight: u64, capacity: u64) -> bool {
        let limit = self.limit(capacity);
        let mut current = self.in_flight.load(Ordering::SeqCst);
        loop {
            if current + weight > limit {
                return false;
            }
            match self.in_flight.compare_exchange_weak(
                current,
                current + weight,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    #[inline]
    pub(crate) fn give_back(&self, weight: u64) {
        self.in_flight.fetch_sub(weight, Ordering::SeqCst);
    }
}
