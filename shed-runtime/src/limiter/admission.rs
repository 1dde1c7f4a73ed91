//! The future a guarded call awaits for its slots.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
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
/// A call that must wait holds a place in the bounded queue from its first
/// poll; dropping this future at any point gives the place, and any slots
/// granted to it, back.
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
    /// Whether the waiter was queued: on the first poll, which stores the
    /// polling task in it under the queue lock that queueing takes anyway
    /// (as tokio's `Semaphore` queues its waiter with its waker).
    queued: bool,
    /// Which task the waiter wakes (its waker's data and vtable, as
    /// `Waker::will_wake` compares them): a poll by the same task takes
    /// no lock to store it again.
    task: (usize, usize),
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
                queued: false,
                task: (0, 0),
                name,
                expected,
                stats,
                done: false,
            }),
        }
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

/// What `Waker::will_wake` compares: whether two wakers wake the same task.
fn task_of(waker: &Waker) -> (usize, usize) {
    (
        waker.data() as usize,
        std::ptr::from_ref(waker.vtable()) as usize,
    )
}

impl super::Decision {
    /// The decision as an admission to poll (for [`Held::decide`], whose
    /// caller polls).
    pub(crate) fn into_admission(self) -> Admission {
        match self {
            super::Decision::Admitted(permit) => Admission::ready(Ok(permit)),
            super::Decision::Refused(rejected) => Admission::ready(Err(rejected)),
            super::Decision::Wait(admission) => admission,
        }
    }
}

impl Wait {
    /// The waiter's status, with `task` left to be woken while it is
    /// pending: queued on the first poll (the waker stored under the lock
    /// that queueing takes); on a later poll the lock is taken only when
    /// another task polls (a waker moved, as `select!` or a join may do).
    fn status(&mut self, task: &Waker) -> Status {
        if !self.queued {
            self.queued = true;
            self.task = task_of(task);
            return self.held.core.enqueue(&self.waiter, task);
        }
        match self.waiter.status() {
            Status::Pending if task_of(task) != self.task => {
                self.task = task_of(task);
                self.held.core.register(&self.waiter, task)
            }
            status => status,
        }
    }

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
            // Timed from its grant if it has a deadline (its release reads
            // the clock anyway) or an adaptive limit may read the
            // measurements (see `Inner::window_readers`), else one in
            // `sample_mask + 1` by its place in the queue, as the fast
            // path samples by admission.
            let timed = waiter.deadline.is_some()
                || held.window_is_read()
                || waiter.seq() & held.sampled_mask == 0;
            // The permit first: if recording panics, dropping it gives the
            // granted slots back.
            let state = &held.core.classes[class];
            let class = (class, state.is_tracked());
            let start = timed.then_some(granted);
            let permit = Permit::new(held.clone(), class, waiter.weight, start, stats)
                .with_deadline(waiter.deadline);
            let counters = &state.counters;
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

impl Admission {
    /// The decision of an admission started by `Limiter::acquire` (a
    /// guarded call's is made before its first poll): out of line, so
    /// that polling a waiting call keeps a small frame.
    #[inline(never)]
    fn decide(&mut self) {
        if let State::Start(request) = &mut self.state {
            let r = request.take().expect("admission polled after completion");
            let deadline = crate::context::current_deadline();
            *self = Held::decide(r, deadline);
        }
    }
}

impl Future for Admission {
    type Output = Result<Permit, Rejected>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let State::Start(_) = this.state {
            this.decide();
        }
        match &mut this.state {
            State::Start(_) => unreachable!("decided above"),
            State::Ready(result) => {
                Poll::Ready(result.take().expect("admission polled after completion"))
            }
            State::Waiting(wait) => {
                assert!(!wait.done, "admission polled after completion");
                let status = wait.status(cx.waker());
                if status != Status::Pending {
                    return Poll::Ready(wait.outcome(status));
                }
                let Some((until, reason)) = wait.waiter.gives_up else {
                    return Poll::Pending;
                };
                // SAFETY: this future owns the waiter, and polls its timer
                // only here, through `&mut self` (see `wait_timer`).
                if unsafe { wait.waiter.timer.poll(cx, until) }.is_ready() {
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
        // A waiter never queued (dropped before its first poll) has
        // nothing to take back.
        if !self.done && self.queued {
            self.held.core.abandon(&self.waiter);
        }
        // SAFETY: `drop` runs once, and nothing uses the field after it.
        let waiter = unsafe { ManuallyDrop::take(&mut self.waiter) };
        wait_timer::recycle(waiter);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Task(AtomicUsize);

    impl std::task::Wake for Task {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task() -> (Waker, std::sync::Arc<Task>) {
        let task = std::sync::Arc::new(Task(AtomicUsize::new(0)));
        (Waker::from(task.clone()), task)
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_polled_by_another_task_wakes_that_task_when_granted() {
        let limiter = crate::Limiter::builder().capacity(1).build().unwrap();
        let held = limiter.acquire("critical", 1, "held").await.unwrap();
        let mut waiting = Box::pin(limiter.acquire("critical", 1, "waiting"));
        let (first, first_task) = task();
        let (second, second_task) = task();
        let mut poll = |waker: &Waker| waiting.as_mut().poll(&mut Context::from_waker(waker));
        assert!(poll(&first).is_pending(), "queued behind the held slot");
        assert!(poll(&first).is_pending(), "polled again by the same task");
        assert!(poll(&second).is_pending(), "moved to another task");
        drop(held);
        let woken = |t: &Task| t.0.load(Ordering::SeqCst);
        assert_eq!((woken(&first_task), woken(&second_task)), (0, 1));
        assert!(matches!(poll(&second), Poll::Ready(Ok(_))));
    }

    /// Whether each of `calls` calls that waited for `limiter`'s one slot
    /// (released by the call before) was timed. The slot is set with the
    /// controllers' knob, which pins nothing.
    async fn timed_waits(limiter: &crate::Limiter, calls: usize) -> Vec<bool> {
        limiter.inner.set_limit(1);
        let mut held = limiter.acquire("critical", 1, "held").await.unwrap();
        let mut timed = Vec::new();
        for _ in 0..calls {
            let mut waiting = Box::pin(limiter.acquire("critical", 1, "waiting"));
            let pending = waiting
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
            assert!(pending.is_pending(), "queued behind the held slot");
            drop(held);
            held = waiting.await.unwrap();
            timed.push(held.is_timed());
        }
        timed
    }

    #[tokio::test(start_paused = true)]
    async fn waited_calls_are_all_timed_only_while_an_adaptive_limit_may_read_them() {
        let fixed = crate::Limiter::builder().capacity(1).build().unwrap();
        let timed = timed_waits(&fixed, 65).await;
        let sampled: Vec<usize> = (0..65).filter(|&i| timed[i]).collect();
        assert_eq!(sampled, [0, 64], "one in 64, as on the fast path");
        let deadline = Instant::now() + Duration::from_secs(60);
        let under_deadline = crate::with_deadline(deadline, timed_waits(&fixed, 3)).await;
        assert_eq!(
            under_deadline, [true; 3],
            "their release reads the clock anyway"
        );
        fixed.read_by_adaptive_limit();
        assert_eq!(
            timed_waits(&fixed, 3).await,
            [true; 3],
            "a spawned AdaptiveLimit"
        );
        // The adaptive default: every one (its windows need them), until
        // the application pins the capacity, which stops it for good.
        let adaptive = crate::Limiter::builder().build().unwrap();
        assert_eq!(timed_waits(&adaptive, 3).await, [true; 3]);
        adaptive.set_capacity(1);
        assert_eq!(
            timed_waits(&adaptive, 64)
                .await
                .iter()
                .filter(|&&t| t)
                .count(),
            1
        );
    }

    /// Which of `calls` admissions of `limiter` that found a free slot
    /// were timed, taken one after the other by the guard's path and by
    /// `acquire_as`, in turn.
    async fn timed_at_once(limiter: &crate::Limiter, calls: usize) -> Vec<usize> {
        let policy = crate::Policy::leak("timed::at_once", "critical", None, 1);
        let mut timed = Vec::new();
        for i in 0..calls {
            let permit = if i % 2 == 0 {
                let held = Held::scoped(std::sync::Arc::clone(&limiter.inner));
                let class = held.policy_class(policy).unwrap();
                let admitted = held.admit_at_once(class, 1, &policy.stats);
                admitted.ok().expect("a free slot")
            } else {
                limiter.acquire_as(policy).await.unwrap()
            };
            if permit.is_timed() {
                timed.push(i);
            }
        }
        timed
    }

    #[tokio::test(start_paused = true)]
    async fn the_adaptive_default_times_its_first_admissions_then_one_in_64() {
        let adaptive = crate::Limiter::builder().build().unwrap();
        let first: Vec<usize> = (0..32).chain([63, 127]).collect();
        assert_eq!(timed_at_once(&adaptive, 128).await, first);
        let fixed = crate::Limiter::builder().capacity(4).build().unwrap();
        assert_eq!(timed_at_once(&fixed, 128).await, [63, 127]);
    }
}
