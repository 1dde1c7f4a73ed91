//! The slots an admitted call holds, given back when it is dropped.

use tokio::time::Instant;

use super::Held;
use crate::policy::PolicyStats;

/// Slots held by an admitted call. Dropping it gives them back: when the
/// call completes, when it panics (unwinding drops it), and when the
/// call's future is dropped at any await point.
#[must_use = "the slots are given back as soon as the permit is dropped"]
pub struct Permit {
    held: Option<Held>,
    class: usize,
    weight: u64,
    /// When the call started, if its service time is measured.
    start: Option<Instant>,
    stats: Option<&'static PolicyStats>,
    /// The caller's deadline: the call is counted as served in time or
    /// late when it ends.
    deadline: Option<Instant>,
}

impl Permit {
    pub(crate) fn new(
        held: Held,
        class: usize,
        weight: u64,
        start: Option<Instant>,
        stats: Option<&'static PolicyStats>,
    ) -> Self {
        Self {
            held: Some(held),
            class,
            weight,
            start,
            stats,
            deadline: None,
        }
    }

    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// A permit that holds nothing (mode `off`).
    pub(crate) fn bypass() -> Self {
        Self {
            held: None,
            class: 0,
            weight: 0,
            start: None,
            stats: None,
            deadline: None,
        }
    }

    /// Gives the slots back, counting the request as answered in time or
    /// late after `latency` from its arrival (for integrations that see
    /// the response end, such as the HTTP layer's response bodies).
    pub fn finish(mut self, latency: std::time::Duration, in_time: bool) {
        self.deadline = None;
        if let Some(held) = &self.held {
            held.core.classes[self.class]
                .counters
                .count_served(Some(latency), in_time);
        }
    }

    /// Records the call's service time now rather than when the permit is
    /// dropped, for integrations whose work ends before the slots are
    /// given back: the HTTP layer marks a response served at its head, so
    /// a slow reader draining the body does not inflate the learned
    /// service time. The drop then records nothing more.
    pub fn mark_served(&mut self) {
        if let (Some(held), Some(start)) = (&self.held, self.start.take()) {
            let now = Instant::now();
            let took = now.saturating_duration_since(start);
            let in_flight = held.core.snapshot().in_flight;
            record_service(held, self.class, self.stats, took, now, in_flight);
        }
    }

    /// The slots this permit holds (0 when the limiter is bypassed).
    pub fn weight(&self) -> u64 {
        self.weight
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("class", &self.class)
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

impl Drop for Permit {
    /// Inline for the common case, a call neither timed nor under a
    /// deadline: the slots go back with one `fetch_sub` (two for a class
    /// with counters of its own). The rest is out of line.
    #[inline]
    fn drop(&mut self) {
        // By reference: the field's own drop lets a scoped limiter go.
        let Some(held) = &self.held else {
            return;
        };
        if self.start.is_none() && self.deadline.is_none() {
            held.core.release_at(self.class, self.weight, None);
        } else {
            self.release_measured();
        }
    }
}

impl Permit {
    /// [`Permit::drop`] of a call that is timed or has a deadline: reads
    /// the clock once for the release, the served-in-time count and the
    /// service time.
    #[inline(never)]
    fn release_measured(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let measured = self.deadline.is_some() || self.start.is_some();
        let now = measured.then(Instant::now);
        // Read before the release, recorded after it.
        let in_flight = self.start.map(|_| held.core.snapshot().in_flight);
        // The slots go back first: what follows calls into the metrics
        // recorder, which is user code and may panic.
        held.core.release_at(self.class, self.weight, now);
        if let (Some(deadline), Some(now)) = (self.deadline, now) {
            held.core.classes[self.class]
                .counters
                .count_served(None, now <= deadline);
        }
        if let (Some(start), Some(now), Some(in_flight)) = (self.start, now, in_flight) {
            let took = now.saturating_duration_since(start);
            record_service(&held, self.class, self.stats, took, now, in_flight);
        }
    }
}

/// Records a call of `class` that took `took`, ending at `now` with
/// `in_flight` weight held: the fn's learned service time, the adaptive
/// limit's window and the service-time histogram.
fn record_service(
    held: &Held,
    class: usize,
    stats: Option<&'static PolicyStats>,
    took: std::time::Duration,
    now: Instant,
    in_flight: u64,
) {
    if let Some(stats) = stats {
        held.learned.with(stats, |e| e.observe(took, now));
    }
    held.window.record(took, in_flight);
    if let Some(auto) = &held.auto {
        auto.completed(held, now);
    }
    // Not while unwinding: a recorder that panics again would abort.
    if !std::thread::panicking() {
        held.core.classes[class].counters.record_service(took);
    }
}
