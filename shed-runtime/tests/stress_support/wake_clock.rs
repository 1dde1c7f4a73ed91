//! When a call was first polled, when its first pending poll returned,
//! and when a waiting call was woken: the first wake after its last
//! pending poll. A grant is published under the queue lock; a release
//! wakes the task it granted only after letting the lock go (and a timer
//! may wake it first), so the wake can come a little after the grant.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

const NOT_WOKEN: u64 = u64::MAX;

struct Clock {
    base: Instant,
    woke_us: AtomicU64,
    inner: Waker,
}

impl Wake for Clock {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let now = self.base.elapsed().as_micros() as u64;
        let _ = self
            .woke_us
            .compare_exchange(NOT_WOKEN, now, Ordering::SeqCst, Ordering::SeqCst);
        self.inner.wake_by_ref();
    }
}

/// Runs `F`; resolves to its output and its [`Times`].
pub struct FirstWake<F> {
    inner: Pin<Box<F>>,
    base: Instant,
    last: Option<Arc<Clock>>,
    first_poll_us: Option<u64>,
    first_pending_us: Option<u64>,
}

/// When a call was first polled and, if it was ever pending, when its
/// first pending poll returned (it had queued by then) and the first wake
/// after its last pending poll (microseconds since the base).
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub first_poll_us: u64,
    pub first_pending_us: Option<u64>,
    pub woke_us: Option<u64>,
}

impl<F: Future> FirstWake<F> {
    pub fn new(future: F, base: Instant) -> Self {
        Self {
            inner: Box::pin(future),
            base,
            last: None,
            first_poll_us: None,
            first_pending_us: None,
        }
    }
}

impl<F: Future> Future for FirstWake<F> {
    type Output = (F::Output, Times);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let base = self.base;
        let first_poll_us = *self
            .first_poll_us
            .get_or_insert_with(|| base.elapsed().as_micros() as u64);
        let clock = Arc::new(Clock {
            base: self.base,
            woke_us: AtomicU64::new(NOT_WOKEN),
            inner: cx.waker().clone(),
        });
        let waker = Waker::from(Arc::clone(&clock));
        match self.inner.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(output) => {
                let woke_us = self.last.take().map(|c| c.woke_us.load(Ordering::SeqCst));
                Poll::Ready((
                    output,
                    Times {
                        first_poll_us,
                        first_pending_us: self.first_pending_us,
                        woke_us,
                    },
                ))
            }
            Poll::Pending => {
                if self.first_pending_us.is_none() {
                    self.first_pending_us = Some(base.elapsed().as_micros() as u64);
                }
                self.last = Some(clock);
                Poll::Pending
            }
        }
    }
}
