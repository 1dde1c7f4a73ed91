//! The future a guarded call awaits for its slots.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::queue::{Status, Waiter};
use super::wait_timer;
use super::{Held, Permit};
use crate::policy::PolicyStats;
use crate::rejected::Rejected;
use crate::sync::Arc;

/// The admission of one call: resolves to a [`Permit`] (the call may run)
/// or a [`Rejected`] (it must not).
///
/// Most admissions are decided before the first poll and cost nothing more.
/// A call that must wait holds a place in the bounded queue; dropping this
/// future at any point gives the place, and any slots granted to it, back.
#[must_use = "an admission does nothing unless awaited"]
pub struct Admission {
    state: State,
}

enum State {
    Start(Option<Request>),
    Ready(Option<Result<Permit, Rejected>>),
    Waiting(Wait),
}

struct Wait {
    held: Held,
    /// Taken back (recycled) when the wait is dropped.
    waiter: ManuallyDrop<Arc<Waiter>>,
    name: &'static str,
    /// The fn's expected service time, if read already (for a caller with
    /// a deadline); else read only if the call is refused.
    expected: Option<Duration>,
    stats: Option<&'static PolicyStats>,
    /// Set once the waiter's outcome was handed out, so drop does nothing.
    done: bool,
}

/// What a call asks for, kept until the admission is first polled.
pub(crate) struct Request {
    pub(crate) held: Held,
    pub(crate) class: Result<usize, crate::rejected::Reason>,
    pub(crate) weight: u64,
    pub(crate) name: &'static str,
    pub(crate) max_wait: Option<Duration>,
    pub(crate) policy: Option<(&'static PolicyStats, &'static str)>,
    /// Whether the caller may run in a call context (a scope that can
    /// give it a tenant or an attempt number): false only when the guard
    /// found none a moment ago, so that a call that waits does not look
    /// its caller up again.
    pub(crate) in_context: bool,
}

impl Admission {
    pub(crate) fn start(request: Request) -> Self {
        Self {
            state: State::Start(Some(request)),
        }
    }

    pub(crate) fn ready(result: Result<Permit, Rejected>) -> Self {
        Self {
            state: State::Ready(Some(result)),
        }
    }

    /// The timer a waiter needs, made before it is queued: creating one
    /// panics outside a tokio runtime with timers, and a panic after
    /// queueing would leave a waiter that nobody takes its slots from.
    pub(crate) fn timer(gives_up: Instant) -> Sleep {
        tokio::time::sleep_until(gives_up)
    }

    pub(crate) fn waiting(
        held: Held,
        waiter: Arc<Waiter>,
        name: &'static str,
        expected: Option<Duration>,
        stats: Option<&'static PolicyStats>,
    ) -> Self {
        Self {
            state: State::Waiting(Wait {
                held,
                waiter: ManuallyDrop::new(waiter),
                name,
                expected,
                stats,
                done: false,
            }),
        }
    }

    /// A waiter whose fate was decided while it was being queued.
    pub(crate) fn settled(
        held: Held,
        waiter: Arc<Waiter>,
        status: Status,
        name: &'static str,
        expected: Option<Duration>,
        stats: Option<&'static PolicyStats>,
    ) -> Self {
        let result = outcome(&held, &waiter, status, name, expected, stats);
        wait_timer::recycle(waiter);
        Self::ready(result)
    }
}

impl Admission {
    /// What the generated code does next: run, refuse, or await.
    #[inline]
    pub(crate) fn into_decision(mut self) -> super::Decision {
        match &mut self.state {
            State::Ready(result) => match result.take().expect("fresh admission") {
                Ok(permit) => super::Decision::Admitted(permit),
                Err(rejected) => super::Decision::Refused(rejected),
            },
            _ => super::Decision::Wait(self),
        }
    }
}

impl Wait {
    fn outcome(&mut self, status: Status) -> Result<Permit, Rejected> {
        self.done = true;
        outcome(
            &self.held,
            &self.waiter,
            status,
            self.name,
            self.expected,
            self.stats,
        )
    }
}

/// Turns a waiter's final status into the call's result.
fn outcome(
    held: &Held,
    waiter: &Waiter,
    status: Status,
    name: &'static str,
    expected: Option<Duration>,
    stats: Option<&'static PolicyStats>,
) -> Result<Permit, Rejected> {
    let class = waiter.class;
    match status {
        Status::Granted => {
            // The dispatcher's clock: its grant is when the slots became
            // the call's.
            let granted = waiter.granted_at().expect("granted");
            // The permit first: if recording panics, dropping it gives the
            // granted slots back.
            let permit = Permit::new(held.clone(), class, waiter.weight, Some(granted), stats)
                .with_deadline(waiter.deadline);
            let counters = &held.core.classes[class].counters;
            counters.record_queue_wait(waiter.arrived, granted);
            Ok(permit)
        }
        Status::Refused(reason) => {
            let expected = expected.unwrap_or_else(|| held.expected_service(stats));
            Err(held.rejected(class, reason, name, expected))
        }
        Status::Pending => unreachable!("a settled waiter is never pending"),
    }
}

impl Future for Admission {
    type Output = Result<Permit, Rejected>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let State::Start(request) = &mut this.state {
            let r = request.take().expect("admission polled after completion");
            let deadline = crate::context::current_deadline();
            *this = Held::decide(r, deadline);
        }
        match &mut this.state {
            State::Start(_) => unreachable!("decided above"),
            State::Ready(result) => {
                Poll::Ready(result.take().expect("admission polled after completion"))
            }
            State::Waiting(wait) => {
                assert!(!wait.done, "admission polled after completion");
                let status = match wait.waiter.status() {
                    Status::Pending => {
                        wait.waiter.register(cx.waker());
                        wait.waiter.status()
                    }
                    settled => settled,
                };
                if status != Status::Pending {
                    return Poll::Ready(wait.outcome(status));
                }
                // SAFETY: this future owns the waiter, and polls its timer
                // only here, through `&mut self` (see `wait_timer`).
                if unsafe { wait.waiter.timer.poll(cx) }.is_ready() {
                    let (_, reason) = wait.waiter.gives_up.expect("a timer implies a budget");
                    let status = wait.held.core.expire(&wait.waiter, reason);
                    return Poll::Ready(wait.outcome(status));
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if !self.done {
            self.held.core.abandon(&self.waiter);
        }
        // SAFETY: `drop` runs once, and nothing uses the field after it.
        let waiter = unsafe { ManuallyDrop::take(&mut self.waiter) };
        wait_timer::recycle(waiter);
    }
}
