//! The slots an admitted call holds, given back when it is dropped.

use std::mem::ManuallyDrop;

use tokio::time::Instant;

use super::Held;
use crate::policy::PolicyStats;

/// Slots held by an admitted call. Dropping it gives them back: when the
/// call completes, when it panics (unwinding drops it), and when the
/// call's future is dropped at any await point.
#[must_use = "the slots are given back as soon as the permit is dropped"]
pub struct Permit {
    /// Let go of by `drop` alone (`release_slow`), so that the
    /// permit's drop glue is its `drop`, small enough to be inlined.
    held: ManuallyDrop<Option<Held>>,
    /// Set when giving the slots back is one `fetch_sub` on the limiter's
    /// word and nothing else: a limiter held without a reference count
    /// (the process-wide one), a class without a word of its own, a call
    /// neither timed nor under a deadline. Kept in step by every builder:
    /// what it leaves out can only be added by `with_deadline`, and
    /// `finish` and `mark_served` only take away.
    quick: bool,
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
    /// The permit of `weight` slots of `class` (`tracked`: whether the
    /// class keeps a word of its own, read by the caller, who looked the
    /// class up already) on `held`.
    // Always: on the fast path that `guard::try_admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn new(
        held: Held,
        (class, tracked): (usize, bool),
        weight: u64,
        start: Option<Instant>,
        stats: Option<&'static PolicyStats>,
    ) -> Self {
        let quick = start.is_none() && held._owner.is_none() && !tracked;
        Self {
            held: ManuallyDrop::new(Some(held)),
            quick,
            class,
            weight,
            start,
            stats,
            deadline: None,
        }
    }

    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self.quick &= deadline.is_none();
        self
    }

    /// A permit that holds nothing (mode `off`).
    pub(crate) fn bypass() -> Self {
        Self {
            held: ManuallyDrop::new(None),
            quick: false,
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
        if let Some(held) = &*self.held {
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
        if let (Some(held), Some(start)) = (&*self.held, self.start.take()) {
            let now = Instant::now();
            let in_flight = held.core.snapshot().in_flight;
            record_service(held, self.class, self.stats, start, now, in_flight);
        }
    }

    /// The slots this permit holds (0 when the limiter is bypassed).
    pub fn weight(&self) -> u64 {
        self.weight
    }

    /// Whether the call's service time is measured (the tests' look).
    #[cfg(all(test, not(shed_loom)))]
    pub(crate) fn is_timed(&self) -> bool {
        self.start.is_some()
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
    /// Inline for the common case (see `quick`): the slots go back with
    /// one `fetch_sub`. The rest is out of line.
    // Always: the permit's drop glue is this fn alone (`held` is let go
    // of here), which every guarded fn then inlines.
    #[inline(always)]
    fn drop(&mut self) {
        match &*self.held {
            Some(held) if self.quick => held.core.release_untracked(self.weight),
            _ => self.release_slow(),
        }
    }
}

impl Permit {
    /// [`Permit::drop`] of any permit but a quick one (its only caller):
    /// gives the slots back, reading the clock once, for the release, the
    /// served-in-time count and the service time, if the call is timed or
    /// has a deadline; then lets go of the limiter.
    #[inline(never)]
    fn release_slow(&mut self) {
        // SAFETY: `drop` calls this once, and nothing uses the field after.
        let Some(held) = (unsafe { ManuallyDrop::take(&mut self.held) }) else {
            return;
        };
        let measured = self.deadline.is_some() || self.start.is_some();
        let now = measured.then(Instant::now);
        // Read before the release, recorded after it.
        let in_flight = self.start.map(|_| held.core.snapshot().in_flight);
        // The slots go back first: what follows calls into the metrics
        // recorder, which is user code and may panic (`held` is a local
        // then, let go of while unwinding).
        held.core.release_at(self.class, self.weight, now);
        if let (Some(deadline), Some(now)) = (self.deadline, now) {
            held.core.classes[self.class]
                .counters
                .count_served(None, now <= deadline);
        }
        if let (Some(start), Some(now), Some(in_flight)) = (self.start, now, in_flight) {
            record_service(&held, self.class, self.stats, start, now, in_flight);
        }
    }
}

/// Records a call of `class` admitted at `start` and ending at `now` with
/// `in_flight` weight held: the fn's learned service time, the adaptive
/// limit's window and the service-time histogram.
fn record_service(
    held: &Held,
    class: usize,
    stats: Option<&'static PolicyStats>,
    start: Instant,
    now: Instant,
    in_flight: u64,
) {
    let took = now.saturating_duration_since(start);
    if let Some(stats) = stats {
        held.learned.with(stats, |e| e.observe(took, now));
    }
    held.window.record(start, took, in_flight);
    if let Some(auto) = &held.auto {
        auto.completed(held, now, took);
    }
    // Not while unwinding: a recorder that panics again would abort.
    if !std::thread::panicking() {
        held.core.classes[class].counters.record_service(took);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;
    use crate::{Limiter, Policy};

    /// A limiter held as `#[shed]` holds the process-wide one, without a
    /// reference count (`Held::global`): the only one whose permits can
    /// be quick.
    fn process_wide(capacity: u32) -> (&'static Limiter, Held) {
        let limiter = Limiter::builder().capacity(capacity).build().unwrap();
        let limiter: &'static Limiter = Box::leak(Box::new(limiter));
        (limiter, Held::global(&limiter.inner))
    }

    /// What the guard's fast path admits `policy` with.
    fn at_once(held: &Held, policy: &'static Policy) -> Permit {
        let class = held.policy_class(policy).unwrap();
        let permit = held.clone().admit_at_once(class, 1, &policy.stats);
        permit.ok().expect("a free slot")
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_release_gives_the_slot_to_the_call_waiting_for_it() {
        let (limiter, held) = process_wide(1);
        let permit = at_once(&held, Policy::leak("quick::first", "critical", None, 1));
        assert!(
            permit.quick,
            "untimed, of the untracked class, process-wide"
        );
        let waiting = tokio::spawn(async move {
            let permit = limiter.acquire("critical", 1, "quick::second").await;
            permit.map(drop)
        });
        tokio::task::yield_now().await;
        assert_eq!(held.core.queued().0, 1, "waits behind the quick permit");
        drop(permit);
        waiting.await.unwrap().expect("granted the slot given back");
        assert_eq!(limiter.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn only_untimed_calls_of_the_untracked_class_on_the_process_wide_limiter_are_quick() {
        let (limiter, held) = process_wide(100);
        let critical = Policy::leak("quick::critical", "critical", None, 1);
        let mut permits = vec![at_once(
            &held,
            Policy::leak("quick::optional", "optional", None, 1),
        )];
        assert!(!permits[0].quick, "a class with a word of its own");
        permits.push(
            limiter
                .acquire("critical", 1, "quick::scoped")
                .await
                .unwrap(),
        );
        assert!(!permits[1].quick, "a limiter held with a reference count");
        // One admission in 64 (the default sampling) is timed.
        while permits.last().unwrap().start.is_none() {
            let permit = at_once(&held, critical);
            assert!(permit.start.is_some() || permit.quick);
            permits.push(permit);
        }
        assert!(!permits.last().unwrap().quick, "a timed call");
        let class = held.policy_class(critical).unwrap();
        assert!(held.core.try_acquire(class, 1).is_some());
        let permit = Permit::new(held.clone(), (class, false), 1, None, None);
        permits.push(permit.with_deadline(Some(Instant::now())));
        assert!(!permits.last().unwrap().quick, "a call with a deadline");
        assert_eq!(limiter.in_flight(), permits.len() as u64);
        drop(permits);
        assert_eq!(limiter.in_flight(), 0, "every kind gives its slot back");
    }
}
