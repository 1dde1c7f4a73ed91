//! A response body that holds the request's slots until it ends, or until
//! it has held them for the longest time allowed.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use super::counters::HttpCounters;
use crate::Permit;

/// The error type of [`GuardedBody`]: the inner body's error, or
/// [`HoldExpired`] when the body was cut.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The longest a response body may hold its request's slots, counted from
/// the admission. A handler can set it for its own responses by inserting
/// it in the response's extensions; otherwise the layer's
/// [`max_hold`](super::ShedLayer::max_hold) applies.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::http::MaxHold;
///
/// let mut response = http::Response::new("a long export");
/// response.extensions_mut().insert(MaxHold(Duration::from_secs(120)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxHold(pub Duration);

/// The error a body ends with when it was cut at its maximum hold time
/// (see [`ShedLayer::cut_at_max_hold`](super::ShedLayer::cut_at_max_hold)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the response body held its slots past the maximum hold time and was cut")]
pub struct HoldExpired;

pin_project_lite::pin_project! {
    /// The body of a response whose request was admitted: the slots are
    /// given back when the body has been sent to its end or is dropped
    /// (the client went away), not when the handler returned, so streaming
    /// responses count against the limit while they stream.
    ///
    /// A body never holds them longer than its maximum hold time: a client
    /// reading slowly cannot keep slots away from everybody else. When the
    /// time is up the slots are given back and counted
    /// ([`HttpCounters::hold_expired`]); the body goes on streaming, or,
    /// if the layer says so, ends with [`HoldExpired`].
    pub struct GuardedBody<B> {
        #[pin]
        inner: B,
        slots: Slots,
    }
}

/// Where the slots of a body are.
enum Slots {
    /// None: exempt routes, refusals, or a body that already ended.
    Free,
    /// Held by the body itself; nothing watches the clock yet.
    Here(BodyPermit),
    /// Shared with a watchdog task that gives them back at the deadline,
    /// even if the connection stopped polling the body (a slow reader
    /// fills the socket buffer, and then nobody polls).
    Watched(Watchdog),
}

struct Watchdog {
    shared: Arc<Shared>,
    task: tokio::task::AbortHandle,
}

impl Drop for Watchdog {
    /// The body is dropped (the client went away) or ended: the slots go
    /// back now, not when the aborted task is next looked at.
    fn drop(&mut self) {
        self.task.abort();
        let held = lock(&self.shared).held.take();
        drop(held);
    }
}

/// The permit a response body holds until it ends, with what its end is
/// measured against.
pub(crate) struct BodyPermit {
    pub(crate) permit: Permit,
    pub(crate) arrived: Instant,
    pub(crate) deadline: Instant,
    /// When the slots must be given back at the latest.
    pub(crate) hold_until: Instant,
    /// Whether the body ends with an error when the hold time is up.
    pub(crate) cut: bool,
    pub(crate) class: &'static str,
    pub(crate) counters: Arc<HttpCounters>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<Watch>,
}

#[derive(Default)]
struct Watch {
    held: Option<BodyPermit>,
    /// Set when the watchdog gave the slots back and the body must end.
    cut: bool,
    /// The body's task, if it is waiting on the inner body.
    waker: Option<Waker>,
}

impl BodyPermit {
    /// The body ended (or failed): slots back, served in time or late.
    fn finish(self) {
        let now = Instant::now();
        self.permit.finish(
            now.saturating_duration_since(self.arrived),
            now <= self.deadline,
        );
    }

    /// The hold time is up: slots back, counted. Returns whether the body
    /// must be cut.
    fn expire(self) -> bool {
        self.counters.count_hold_expired(self.class);
        let cut = self.cut;
        self.finish();
        cut
    }
}

impl<B> GuardedBody<B> {
    pub(crate) fn guarded(inner: B, held: BodyPermit) -> Self {
        Self {
            inner,
            slots: Slots::Here(held),
        }
    }

    /// A body that holds nothing (exempt routes, refusals).
    pub fn unguarded(inner: B) -> Self {
        Self {
            inner,
            slots: Slots::Free,
        }
    }

    /// Whether the body still holds slots.
    pub fn holds_slots(&self) -> bool {
        match &self.slots {
            Slots::Free => false,
            Slots::Here(_) => true,
            Slots::Watched(w) => lock(&w.shared).held.is_some(),
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Watch> {
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slots {
    /// The body ended: gives the slots back if still held.
    fn finish(&mut self) {
        match std::mem::replace(self, Slots::Free) {
            Slots::Free => {}
            Slots::Here(held) => held.finish(),
            Slots::Watched(w) => {
                let held = lock(&w.shared).held.take();
                if let Some(held) = held {
                    held.finish();
                }
            }
        }
    }

    /// The body goes on: makes sure somebody gives the slots back at the
    /// hold deadline. Returns whether the body must be cut now.
    fn watch(&mut self, cx: &Context<'_>, pending: bool) -> bool {
        match self {
            Slots::Free => false,
            Slots::Here(held) => {
                if Instant::now() >= held.hold_until {
                    let Slots::Here(held) = std::mem::replace(self, Slots::Free) else {
                        unreachable!()
                    };
                    return held.expire();
                }
                // Outside a runtime nothing can watch the clock; the body
                // then gives the slots back when it ends, as before.
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return false;
                };
                let Slots::Here(held) = std::mem::replace(self, Slots::Free) else {
                    unreachable!()
                };
                let until = held.hold_until;
                let shared = Arc::new(Shared::default());
                lock(&shared).held = Some(held);
                let watched = Arc::clone(&shared);
                let task = runtime
                    .spawn(async move {
                        tokio::time::sleep_until(until).await;
                        let (cut, waker) = {
                            let mut state = lock(&watched);
                            let Some(held) = state.held.take() else {
                                return;
                            };
                            let cut = held.expire();
                            state.cut = cut;
                            (cut, state.waker.take())
                        };
                        if let (true, Some(waker)) = (cut, waker) {
                            waker.wake();
                        }
                    })
                    .abort_handle();
                if pending {
                    lock(&shared).waker = Some(cx.waker().clone());
                }
                *self = Slots::Watched(Watchdog { shared, task });
                false
            }
            Slots::Watched(w) => {
                let mut state = lock(&w.shared);
                if pending && state.held.is_some() {
                    state.waker = Some(cx.waker().clone());
                }
                std::mem::take(&mut state.cut)
            }
        }
    }
}

impl<B> Body for GuardedBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        if let Slots::Watched(w) = this.slots
            && lock(&w.shared).cut
        {
            *this.slots = Slots::Free;
            return Poll::Ready(Some(Err(HoldExpired.into())));
        }
        let frame = this.inner.as_mut().poll_frame(cx);
        let ended = match &frame {
            Poll::Ready(None | Some(Err(_))) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Pending => false,
        };
        if ended {
            this.slots.finish();
        } else if this.slots.watch(cx, frame.is_pending()) {
            *this.slots = Slots::Free;
            return Poll::Ready(Some(Err(HoldExpired.into())));
        }
        frame.map(|f| f.map(|f| f.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Default> Default for GuardedBody<B> {
    fn default() -> Self {
        Self::unguarded(B::default())
    }
}

impl<B: From<String>> From<String> for GuardedBody<B> {
    fn from(text: String) -> Self {
        Self::unguarded(B::from(text))
    }
}
