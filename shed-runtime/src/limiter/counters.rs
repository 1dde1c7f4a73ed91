//! The limiter's counters: per class, on the hot path with relaxed
//! atomics, and the exact admission totals. The reporter
//! ([`crate::metrics`]) reads them and publishes them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::state::{ADMITTED_BITS, CLASS_ADMITTED_BITS};
use crate::rejected::Reason;

/// How many refusal reasons there are.
pub(crate) const REASONS: usize = Reason::ALL.len();

/// Per-class counters, incremented on the hot path with relaxed atomics.
///
/// Admissions are not counted here: the limiter's admission word and each
/// tracked class's word count them in the same atomic operation that takes
/// the slots (see [`AdmittedTotals`]).
#[derive(Debug, Default)]
pub(crate) struct ClassCounters {
    refused: [AtomicU64; REASONS],
    observed: [AtomicU64; REASONS],
    /// Requests answered before their deadline, and after it (integrations).
    served_in_time: AtomicU64,
    late: AtomicU64,
    /// Refusals answered by a `fallback` instead.
    fallbacks: AtomicU64,
    /// Histogram handles of the current recorder, registered again on
    /// every publication (a recorder installed late replaces the no-op
    /// handles). Written once per interval, read on the recording paths,
    /// which are off the admission fast path: queue waits (calls that
    /// waited), sampled service times, HTTP latencies.
    handles: RwLock<Option<ClassHandles>>,
    /// Whether `handles` was ever set: until a reporter registers the
    /// histograms (without one, always), the recording paths skip the lock.
    has_handles: AtomicBool,
}

/// The histograms a class records to, registered by the reporter.
#[derive(Debug)]
pub(crate) struct ClassHandles {
    pub(crate) queue_wait: metrics::Histogram,
    pub(crate) service: metrics::Histogram,
    pub(crate) latency: metrics::Histogram,
}

impl ClassCounters {
    #[inline]
    pub(crate) fn count_refusal(&self, reason: Reason) {
        self.refused[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn count_observed(&self, reason: Reason) {
        self.observed[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Gives the class the histograms registered with the current
    /// recorder; the recording paths use them from then on.
    pub(crate) fn set_handles(&self, handles: ClassHandles) {
        *self.handles.write().unwrap_or_else(PoisonError::into_inner) = Some(handles);
        self.has_handles.store(true, Ordering::Release);
    }

    #[inline]
    fn with_handles(&self, record: impl FnOnce(&ClassHandles)) {
        // A record racing the first registration may be missed, as one
        // made just before it would be.
        if !self.has_handles.load(Ordering::Relaxed) {
            return;
        }
        let handles = self.handles.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(handles) = handles.as_ref() {
            record(handles);
        }
    }

    /// Records the queue wait of a call that arrived at `arrived` and was
    /// granted at `granted` (worked out only if there is a histogram).
    #[inline]
    pub(crate) fn record_queue_wait(&self, arrived: Instant, granted: Instant) {
        self.with_handles(|h| {
            let waited = granted.saturating_duration_since(arrived);
            h.queue_wait.record(waited.as_secs_f64());
        });
    }

    #[inline]
    pub(crate) fn record_service(&self, took: Duration) {
        self.with_handles(|h| h.service.record(took.as_secs_f64()));
    }

    pub(crate) fn count_served(&self, latency: Option<Duration>, in_time: bool) {
        let counter = if in_time {
            &self.served_in_time
        } else {
            &self.late
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if let Some(latency) = latency {
            self.with_handles(|h| h.latency.record(latency.as_secs_f64()));
        }
    }

    pub(crate) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn outcomes(&self) -> (u64, u64, u64) {
        (
            self.served_in_time.load(Ordering::Relaxed),
            self.late.load(Ordering::Relaxed),
            self.fallbacks.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn snapshot(&self) -> ([u64; REASONS], [u64; REASONS]) {
        let read = |a: &[AtomicU64; REASONS]| std::array::from_fn(|i| a[i].load(Ordering::Relaxed));
        (read(&self.refused), read(&self.observed))
    }
}

/// Turns the wrapping admission counts of the admission words into exact
/// 64-bit totals. Each read adds the distance travelled since the last
/// one, so totals stay exact as long as they are read at least once per
/// 2^39 admissions (the reporter reads them every interval).
#[derive(Debug)]
pub(crate) struct AdmittedTotals(Mutex<Totals>);

#[derive(Debug)]
struct Totals {
    /// `(last raw count, total)` of the limiter.
    all: (u64, u64),
    /// `(last raw count, total)` per class (unused for the residual class).
    classes: Vec<(u64, u64)>,
}

fn advance(counter: &mut (u64, u64), raw: u64, bits: u32) {
    let mask = (1u64 << bits) - 1;
    counter.1 += raw.wrapping_sub(counter.0) & mask;
    counter.0 = raw;
}

impl AdmittedTotals {
    pub(crate) fn new(classes: usize) -> Self {
        Self(Mutex::new(Totals {
            all: (0, 0),
            classes: vec![(0, 0); classes],
        }))
    }

    /// Exact admissions of the limiter, and of each class in order.
    pub(crate) fn read(&self, core: &Core) -> (u64, Vec<u64>) {
        let mut totals = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let totals = &mut *totals;
        advance(&mut totals.all, core.snapshot().admitted, ADMITTED_BITS);
        let mut per_class = Vec::with_capacity(core.classes.len());
        let mut residual = None;
        for (i, class) in core.classes.iter().enumerate() {
            match class.tracked_counts() {
                Some((_, raw)) => {
                    advance(&mut totals.classes[i], raw, CLASS_ADMITTED_BITS);
                    per_class.push(totals.classes[i].1);
                }
                None => {
                    residual = Some(i);
                    per_class.push(0);
                }
            }
        }
        if let Some(i) = residual {
            let tracked: u64 = per_class.iter().sum();
            per_class[i] = totals.all.1.saturating_sub(tracked);
        }
        (totals.all.1, per_class)
    }
}
