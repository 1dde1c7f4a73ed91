//! A response body that holds the request's slots until it ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use crate::Permit;

pin_project_lite::pin_project! {
    /// The body of a response whose request was admitted: the slots are
    /// given back when the body has been sent to its end or is dropped
    /// (the client went away), not when the handler returned. Streaming
    /// responses therefore count against the limit while they stream.
    pub struct GuardedBody<B> {
        #[pin]
        inner: B,
        held: Option<Held>,
    }
}

struct Held {
    permit: Permit,
    arrived: Instant,
    deadline: Instant,
}

impl<B> GuardedBody<B> {
    pub(crate) fn guarded(inner: B, permit: Permit, arrived: Instant, deadline: Instant) -> Self {
        Self {
            inner,
            held: Some(Held {
                permit,
                arrived,
                deadline,
            }),
        }
    }

    /// A body that holds nothing (exempt routes, refusals).
    pub fn unguarded(inner: B) -> Self {
        Self { inner, held: None }
    }

    /// Whether the body still holds slots.
    pub fn holds_slots(&self) -> bool {
        self.held.is_some()
    }
}

fn finish(held: &mut Option<Held>) {
    if let Some(held) = held.take() {
        let now = Instant::now();
        held.permit.finish(
            now.saturating_duration_since(held.arrived),
            now <= held.deadline,
        );
    }
}

impl<B: Body> Body for GuardedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = this.inner.poll_frame(cx);
        if let Poll::Ready(None | Some(Err(_))) = frame {
            finish(this.held);
        }
        frame
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
