//! A waiting call's budget timer, kept inside its waiter's allocation, and
//! a spare waiter per thread: in the steady state a call that waits
//! allocates nothing, while its future stays `Unpin` and the queue goes on
//! sharing waiters by `Arc` (the dispatcher holds them while it serves).
//!
//! # Safety of the timer slot
//!
//! A [`Waiter`] is shared (`Arc`) by its future, the queue and a
//! dispatcher, so its timer sits in an `UnsafeCell`. What makes the shared
//! access sound:
//! - the slot is written only through `&mut Waiter`, i.e. while the `Arc`
//!   is not shared ([`new_waiter`] before the waiter is queued, [`recycle`]
//!   after `Arc::get_mut` proved it unique);
//! - through `&Waiter` only [`TimerSlot::poll`] reaches the `Sleep`, and
//!   its contract gives that to the waiter's own future alone, which polls
//!   it from its own `poll` (`&mut self`), so two accesses never overlap.
//!   The queue and the dispatchers never touch the slot;
//! - the `Sleep` is pinned from its first poll on: it lives in the `Arc`'s
//!   heap allocation, which never moves, and it leaves only by being
//!   dropped in place (overwritten, or with the waiter), never moved out;
//! - whoever drops the last `Arc` drops the `Sleep`, on any thread:
//!   `Sleep` is `Send`.

use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::queue::{Call, Waiter};
use crate::sync::Arc;

/// The timer of a waiter's budget (see the module docs).
#[derive(Default)]
pub(crate) struct TimerSlot(UnsafeCell<Option<Sleep>>);

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
    /// Polls the timer; `Pending` forever if there is none.
    ///
    /// # Safety
    ///
    /// Only the future that owns the waiter may call this, from its own
    /// `poll` (see the module docs).
    pub(crate) unsafe fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: no other access overlaps (the caller's contract).
        let slot = unsafe { &mut *self.0.get() };
        match slot {
            // SAFETY: never moved out of the `Arc`'s allocation, only
            // dropped in place (module docs).
            Some(sleep) => unsafe { Pin::new_unchecked(sleep) }.poll(cx),
            None => Poll::Pending,
        }
    }

    /// Starts the timer in place (the slot of a new waiter or a spare,
    /// empty), without a copy of the `Sleep` through the stack.
    #[inline(always)]
    fn start(&mut self, gives_up: Instant) {
        let slot = self.0.get_mut();
        debug_assert!(slot.is_none(), "a spare's timer was dropped by recycle");
        let _ = slot.insert(super::Admission::timer(gives_up));
    }

    /// Drops the timer (its entry leaves the runtime's timer wheel).
    fn stop(&mut self) {
        *self.0.get_mut() = None;
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
/// its budget (which ends at `gives_up`), made here, in place, before
/// anything is queued (creating a timer
/// panics outside a runtime with timers; see [`Admission::timer`]). Reuses
/// this thread's spare if any, renewed in place.
///
/// [`Admission::timer`]: super::Admission::timer
// Always: inlined into the way into the queue (itself out of line), the
// call's fields are written into the waiter rather than built on the
// stack and copied.
#[inline(always)]
pub(crate) fn new_waiter(call: Call, gives_up: Instant) -> Arc<Waiter> {
    #[cfg(not(shed_loom))]
    if let Some(mut spare) = SPARE.try_with(std::cell::Cell::take).ok().flatten() {
        let reused = spare.get_mut();
        reused.renew(call);
        reused.timer.start(gives_up);
        return spare.0;
    }
    let mut fresh = Waiter::of(call);
    fresh.timer.start(gives_up);
    Arc::new(fresh)
}

/// Takes back the waiter of a call that is over: if nobody else holds it
/// any more, its timer is dropped now (while its runtime runs), with the
/// waker of the task that waited and its tenant's name, and it becomes
/// this thread's spare.
pub(crate) fn recycle(mut waiter: Arc<Waiter>) {
    let Some(done) = Arc::get_mut(&mut waiter) else {
        return;
    };
    done.timer.stop();
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
        };
        new_waiter(call, gives_up)
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

    #[tokio::test(start_paused = true)]
    async fn the_timer_in_the_waiter_fires_at_the_budget() {
        let now = Instant::now();
        let waiter = waiter(now);
        let fired = std::future::poll_fn(|cx| {
            // SAFETY: this test is the waiter's only future.
            unsafe { waiter.timer.poll(cx) }
        });
        tokio::time::timeout(Duration::from_millis(49), fired)
            .await
            .expect_err("not before its budget");
        let fired = std::future::poll_fn(|cx| unsafe { waiter.timer.poll(cx) });
        tokio::time::timeout(Duration::from_millis(2), fired)
            .await
            .expect("at its budget");
    }
}
