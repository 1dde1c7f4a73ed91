//! When a waiting call was woken: the first wake after its last pending
//! poll, which for a granted call is the grant itself (made under the
//! queue lock).

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

/// Runs `F`; resolves to its output and, if it was ever pending, the
/// first wake after its last pending poll (microseconds since `base`).
pub struct FirstWake<F> {
    inner: Pin<Box<F>>,
    base: Instant,
    last: Option<Arc<Clock>>,
}

impl<F: Future> FirstWake<F> {
    pub fn new(future: F, base: Instant) -> Self {
        Self {
            inner: Box::pin(future),
            base,
            last: None,
        }
    }
}

impl<F: Future> Future for FirstWake<F> {
    type Output = (F::Output, Option<u64>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let clock = Arc::new(Clock {
            base: self.base,
            woke_us: AtomicU64::new(NOT_WOKEN),
            inner: cx.waker().clone(),
        });
        let waker = Waker::from(Arc::clone(&clock));
        match self.inner.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(output) => {
                let woke = self.last.take().map(|c| c.woke_us.load(Ordering::SeqCst));
                Poll::Ready((output, woke))
            }
            Poll::Pending => {
                self.last = Some(clock);
                Poll::Pending
            }
        }
    }
}
