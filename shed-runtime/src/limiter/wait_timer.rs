//! A waiting call's budget timer, kept inside its waiter's allocation, and
//! a spare waiter per thread: in the steady state a call that waits
//! allocates nothing, while its future stays `Unpin` and the queue goes on
//! sharing waiters by `Arc` (the dispatcher holds them while it serves).
//!
//! The spare keeps its timer, still registered with the runtime's timer
//! wheel, for the next wait on the thread, rather than dropping one timer
//! and registering another (which takes the wheel's lock twice, to insert
//! it and to remove it). Its deadline is then the last wait's budget,
//! most often earlier than the new one's: it is left so, and moved on to
//! the new budget ([`Sleep::reset`]) only if it fires while the call
//! still waits; a wait that ends first costs the timer nothing but the
//! poll that stores its task's waker in it. A deadline later than the new
//! budget is moved at once. A timer is reused only in the runtime it was
//! made in (its [`Id`](tokio::runtime::Id) is kept beside it); in any
//! other, it is dropped and a new one made. Left registered, a spare's
//! timer keeps the waker of the task that last waited on it until the
//! next wait's poll replaces it, and may fire meanwhile: it then wakes
//! that task once, spuriously (allowed of any waker). So a thread keeps
//! one timer entry in its runtime's wheel, at most one task's waker, and
//! a handle to the runtime that made the timer (its drivers included,
//! after the runtime itself is dropped), for as long as it keeps its
//! spare: until its next wait in another runtime, or its exit.
//!
//! # Safety of the timer slot
//!
//! A [`Waiter`] is shared (`Arc`) by its future, the queue and a
//! dispatcher, so its timer sits in an `UnsafeCell`. What makes the shared
//! access sound:
//! - the slot is written (a timer made, or a spare's reset) only through
//!   `&mut Waiter`, i.e. while the `Arc` is not shared ([`new_waiter`],
//!   before the waiter is queued, on a new waiter or a spare that
//!   [`recycle`] kept after `Arc::get_mut` proved it unique);
//! - through `&Waiter` only [`TimerSlot::poll`] reaches the `Sleep` (to
//!   poll it, and reset it if it fired early), and its contract gives that
//!   to the waiter's own future alone, which polls it from its own `poll`
//!   (`&mut self`), so two accesses never overlap. The queue and the
//!   dispatchers never touch the slot;
//! - the `Sleep` is pinned from its first poll on: it lives in the `Arc`'s
//!   heap allocation, which never moves (from one waiter's call to the
//!   next, for a spare), and it leaves only by being dropped in place
//!   (overwritten, or with the waiter), never moved out;
//! - whoever drops the last `Arc` drops the `Sleep`, on any thread:
//!   `Sleep` is `Send`.

use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::queue::{Call, Waiter};
use crate::sync::Arc;

/// The timer of a waiter's budget (see the module docs), and the runtime
/// it was made in.
#[derive(Default)]
pub(crate) struct TimerSlot(UnsafeCell<Option<Sleep>>, Option<tokio::runtime::Id>);

// SAFETY: shared access reaches the `Sleep` only through `poll`, whose
// caller is the one future owning the waiter (module docs); every other
// access takes `&mut`.
unsafe impl Sync for TimerSlot {}

impl std::fmt::Debug for TimerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimerSlot")
    }
}

impl TimerSlot {
    /// Polls the timer of a budget that ends at `until`; `Pending`
    /// forever if there is none. A kept timer may be set to end earlier
    /// (see [`TimerSlot::start`]): when it does, it is moved on to `until`
    /// and polled again, so this is ready at `until`, never before.
    ///
    /// # Safety
    ///
    /// Only the future that owns the waiter may call this, from its own
    /// `poll` (see the module docs).
    pub(crate) unsafe fn poll(&self, cx: &mut Context<'_>, until: Instant) -> Poll<()> {
        // SAFETY: no other access overlaps (the caller's contract).
        let slot = unsafe { &mut *self.0.get() };
        let Some(sleep) = slot else {
            return Poll::Pending;
        };
        // SAFETY: never moved out of the `Arc`'s allocation, only dropped
        // in place (module docs).
        let mut sleep = unsafe { Pin::new_unchecked(sleep) };
        loop {
            std::task::ready!(sleep.as_mut().poll(cx));
            if sleep.deadline() >= until {
                return Poll::Ready(());
            }
            sleep.as_mut().reset(until);
        }
    }

    /// When the timer is set to fire (the tests' look).
    #[cfg(all(test, not(shed_loom)))]
    fn deadline(&self) -> Option<Instant> {
        // SAFETY: the tests read it while nothing polls the timer.
        unsafe { &*self.0.get() }.as_ref().map(Sleep::deadline)
    }

    /// Starts the timer of a budget that ends at `gives_up`, in place:
    /// the spare's own if it was made in `runtime` (the current one), else
    /// a new one, without a copy of the `Sleep` through the stack. The
    /// spare's is left as it is if it ends no later than `gives_up` (the
    /// common case, a wait begun after the last one ended): if it fires
    /// while the call still waits, [`TimerSlot::poll`] moves it on then,
    /// so a wait that ends before costs the timer nothing more.
    #[inline(always)]
    fn start(&mut self, gives_up: Instant, runtime: tokio::runtime::Id) {
        let slot = self.0.get_mut();
        match slot {
            Some(sleep) if self.1 == Some(runtime) => {
                if sleep.deadline() > gives_up {
                    // SAFETY: pinned where it lies, in the `Arc`'s
                    // allocation, and never moved out (module docs).
                    unsafe { Pin::new_unchecked(sleep) }.reset(gives_up);
                }
            }
            _ => {
                *slot = Some(super::Admission::timer(gives_up));
                self.1 = Some(runtime);
            }
        }
    }
}

#[cfg(not(shed_loom))]
thread_local! {
    /// A waiter whose call is over, kept for the next call on this thread
    /// that waits.
    static SPARE: std::cell::Cell<Option<Unique>> = const { std::cell::Cell::new(None) };
}

/// A waiter that nobody else holds: made only by [`recycle`], after
/// `Arc::get_mut` proved it unique, and never cloned while it is one. No
/// `Weak` of a waiter is ever made either, so it stays unique until it is
/// handed out again, and reaching it needs no second check (a
/// compare-and-swap of the weak count).
#[cfg(not(shed_loom))]
struct Unique(Arc<Waiter>);

#[cfg(not(shed_loom))]
impl Unique {
    /// The waiter, to renew in place.
    fn get_mut(&mut self) -> &mut Waiter {
        // SAFETY: no other `Arc` or `Weak` of this waiter exists (see the
        // type), so this `&mut` is the only reference to it; the pointer
        // comes from the `Arc`'s own (`as_ptr` keeps the right to write,
        // as `Arc::get_mut` does).
        unsafe { &mut *Arc::as_ptr(&self.0).cast_mut() }
    }
}

/// The shared waiter of a call that must wait: `call` with the timer of
/// its budget (which ends at `gives_up`), started here, in place, before
/// anything is queued (creating a timer panics outside a runtime with
/// timers; see [`Admission::timer`]), in `runtime`, the current one.
/// Reuses this thread's spare if any, renewed in place, and its timer.
///
/// [`Admission::timer`]: super::Admission::timer
// Always: inlined into the way into the queue (itself out of line), the
// call's fields are written into the waiter rather than built on the
// stack and copied.
#[inline(always)]
pub(crate) fn new_waiter(
    call: Call,
    gives_up: Instant,
    runtime: tokio::runtime::Id,
) -> Arc<Waiter> {
    #[cfg(not(shed_loom))]
    if let Some(mut spare) = SPARE.try_with(std::cell::Cell::take).ok().flatten() {
        let reused = spare.get_mut();
        reused.renew(call);
        reused.timer.start(gives_up, runtime);
        return spare.0;
    }
    let mut fresh = Waiter::of(call);
    fresh.timer.start(gives_up, runtime);
    Arc::new(fresh)
}

/// Takes back the waiter of a call that is over: if nobody else holds it
/// any more, it lets go of the waker of the task that waited and of its
/// tenant's name, and it becomes this thread's spare, its timer kept for
/// the next wait (see the module docs).
pub(crate) fn recycle(mut waiter: Arc<Waiter>) {
    let Some(done) = Arc::get_mut(&mut waiter) else {
        return;
    };
    done.clear();
    #[cfg(not(shed_loom))]
    let _ = SPARE.try_with(|spare| spare.set(Some(Unique(waiter))));
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::limiter::queue::Status;
    use crate::rejected::Reason;

    fn waiter(now: Instant) -> Arc<Waiter> {
        let gives_up = now + Duration::from_millis(50);
        let call = Call {
            class: 0,
            weight: 1,
            arrived: now,
            gives_up: Some((gives_up, Reason::MaxWait)),
            deadline: None,
            retry: false,
            tenant: crate::limiter::fair::TenantTag::new(None, 0),
            default_budget: false,
        };
        let runtime = tokio::runtime::Handle::current().id();
        new_waiter(call, gives_up, runtime)
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_waiter_is_reused_fresh_and_a_shared_one_is_not() {
        let now = Instant::now();
        let first = waiter(now);
        first.grant(now);
        let address = Arc::as_ptr(&first);
        recycle(first);
        let second = waiter(now);
        assert_eq!(Arc::as_ptr(&second), address, "the spare was reused");
        assert_eq!(second.status(), Status::Pending, "as new");
        let held_elsewhere = Arc::clone(&second);
        recycle(second);
        let third = waiter(now);
        assert_ne!(Arc::as_ptr(&third), address, "still held: not reused");
        assert_eq!(held_elsewhere.status(), Status::Pending);
    }

    /// Waits for `waiter`'s timer: it must fire in 50 ms (its budget from
    /// now), not before.
    async fn fires_in_its_budget(waiter: &Waiter) {
        // SAFETY: the test is the waiter's only future.
        let until = waiter.gives_up.expect("a budget").0;
        let fired = || std::future::poll_fn(|cx| unsafe { waiter.timer.poll(cx, until) });
        tokio::time::timeout(Duration::from_millis(49), fired())
            .await
            .expect_err("not before its budget");
        tokio::time::timeout(Duration::from_millis(2), fired())
            .await
            .expect("at its budget");
    }

    #[tokio::test(start_paused = true)]
    async fn the_timer_in_the_waiter_fires_at_the_budget() {
        fires_in_its_budget(&waiter(Instant::now())).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_spare_keeps_its_timer_and_moves_it_to_the_next_budget() {
        let first = waiter(Instant::now());
        // SAFETY: the test is the waiter's only future.
        let until = first.gives_up.expect("a budget").0;
        let pending =
            std::future::poll_fn(|cx| Poll::Ready(unsafe { first.timer.poll(cx, until) }));
        assert!(pending.await.is_pending(), "registered, 50 ms to go");
        first.grant(Instant::now());
        // Only its address to compare with: recycling needs the last `Arc`.
        let address = Arc::as_ptr(&first);
        recycle(first);
        // The next wait on this thread, 30 ms later: the same waiter and
        // the same timer, still set for the first budget (50 ms), and
        // moved on to the new one (80 ms) only when it fires early.
        tokio::time::advance(Duration::from_millis(30)).await;
        let next = waiter(Instant::now());
        assert_eq!(Arc::as_ptr(&next), address, "the spare");
        assert_eq!(next.timer.deadline(), Some(until), "its timer, kept");
        fires_in_its_budget(&next).await;
    }

    #[test]
    fn a_spare_made_in_a_runtime_since_dropped_gets_a_new_timer() {
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap()
        };
        runtime().block_on(async {
            let first = waiter(Instant::now());
            // SAFETY: the test is the waiter's only future.
            let until = first.gives_up.expect("a budget").0;
            let poll =
                std::future::poll_fn(|cx| Poll::Ready(unsafe { first.timer.poll(cx, until) }));
            assert!(poll.await.is_pending());
            first.grant(Instant::now());
            recycle(first);
        });
        // Its timer belongs to a runtime that is gone (polling it would
        // panic): the spare gets one of this runtime.
        runtime().block_on(async { fires_in_its_budget(&waiter(Instant::now())).await });
    }
}
