//! The limiter as the modules around it see it.
//!
//! Metrics, the overload controller and the adaptive limits read the
//! limiter and turn its knobs through this module and nothing else: a
//! [`Load`] reading, the window of measured completions, the late count,
//! the capacity, each class's admitted fraction and its histograms. The
//! state machine behind them (the admission word, the waiter queue, the
//! class words) stays private to `limiter`, so it can change without them.

use std::time::Duration;

use crate::limiter::counters::ClassHandles;
use crate::limiter::state::admissions_between;
use crate::limiter::window::Completions;
use crate::limiter::{class, Inner, Limiter};

/// The limiter's load at one instant, read without a lock. The default
/// is an empty limiter that has admitted nothing.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Load {
    /// Current capacity in slots.
    pub(crate) capacity: u64,
    /// Weight held by admitted calls.
    pub(crate) in_flight: u64,
    /// Whether calls wait for slots.
    pub(crate) waiting: bool,
    /// Admissions so far, wrapping: compare readings with
    /// [`admitted_since`](Load::admitted_since).
    admitted: u64,
}

impl Load {
    /// Admissions between `earlier` and this reading.
    pub(crate) fn admitted_since(&self, earlier: &Load) -> u64 {
        admissions_between(earlier.admitted, self.admitted)
    }
}

impl Inner {
    /// A measured completion, now, of a call that took `took` with
    /// `in_flight` held, as a permit's release records it, for tests that
    /// drive a controller.
    #[cfg(test)]
    pub(crate) fn record_completion(&self, took: std::time::Duration, in_flight: u64) {
        let now = tokio::time::Instant::now();
        self.window
            .record(now.checked_sub(took).unwrap_or(now), took, in_flight);
    }

    pub(crate) fn load(&self) -> Load {
        let s = self.core.snapshot();
        Load {
            capacity: s.capacity,
            in_flight: s.in_flight,
            waiting: s.waiters,
            admitted: s.admitted,
        }
    }

    /// Calls waiting for slots and their weight (takes the queue lock).
    pub(crate) fn queued(&self) -> (usize, u64) {
        self.core.queued()
    }

    /// Calls waiting for slots, and calls queued since the limiter was
    /// made (wrapping; takes the queue lock).
    pub(crate) fn waiting_and_arrivals(&self) -> (usize, u64) {
        self.core.waiting_and_arrivals()
    }

    /// Sets the capacity and hands freed room to waiters. The adaptive
    /// limits' knob; the application's is [`Limiter::set_capacity`], which
    /// also pins the limit.
    pub(crate) fn set_limit(&self, capacity: u64) {
        self.core.set_capacity(capacity);
    }

    /// Completions measured since the last call (the adaptive limits'
    /// window), and starts a new window.
    pub(crate) fn take_completions(&self, now: tokio::time::Instant) -> Completions {
        self.window.take(now)
    }

    /// Completions measured in the current window so far.
    pub(crate) fn completions_so_far(&self) -> u64 {
        self.window.count()
    }

    /// The mean time of the calls measured in the current window so far.
    pub(crate) fn mean_so_far(&self) -> Option<Duration> {
        self.window.mean()
    }

    /// Calls of every class that finished after their deadline, so far.
    pub(crate) fn late_total(&self) -> u64 {
        self.core
            .classes
            .iter()
            .map(|c| c.counters.outcomes().1)
            .sum()
    }
}

impl Limiter {
    /// Each class's rank (0 is never shed by the overload controller), in
    /// configuration order.
    pub(crate) fn class_ranks(&self) -> Vec<u32> {
        self.inner
            .core
            .classes
            .iter()
            .map(|c| c.spec.rank())
            .collect()
    }

    /// Admits only `fraction` (0 to 1) of the `index`th class's calls.
    pub(crate) fn set_admitted_fraction_at(&self, index: usize, fraction: f64) {
        let full = f64::from(class::FULL);
        let ppm = (fraction.clamp(0.0, 1.0) * full).round() as u32;
        self.inner.core.classes[index].set_admit_fraction(ppm);
    }

    /// Gives each class the histograms `handles(class name)` registers with
    /// the current recorder; the recording paths use them from then on.
    pub(crate) fn set_histograms(&self, handles: impl Fn(&'static str) -> ClassHandles) {
        for class in self.inner.core.classes.iter() {
            class.counters.set_handles(handles(class.spec.name()));
        }
    }
}
