//! The response body the client layer returns.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

pin_project_lite::pin_project! {
    /// A response body as the server sent it or, for a `503` problem
    /// answer the layer had to read to decide whether to retry, the bytes
    /// it read. Other responses stream through untouched.
    #[derive(Debug)]
    pub struct ClientBody<B> {
        // `None` once the layer has read the body into `buffered`.
        #[pin]
        inner: Option<B>,
        buffered: Option<Bytes>,
    }
}

impl<B> ClientBody<B> {
    pub(crate) fn streaming(inner: B) -> Self {
        Self {
            inner: Some(inner),
            buffered: None,
        }
    }

    pub(crate) fn buffered(data: Bytes) -> Self {
        Self {
            inner: None,
            buffered: (!data.is_empty()).then_some(data),
        }
    }

    /// Whether the layer read this body (a refusal it decided on).
    pub fn is_buffered(&self) -> bool {
        self.inner.is_none()
    }
}

impl<B: Body<Data = Bytes>> Body for ClientBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        match this.inner.as_pin_mut() {
            Some(inner) => inner.poll_frame(cx),
            None => Poll::Ready(this.buffered.take().map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Some(inner) => inner.is_end_stream(),
            None => self.buffered.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Some(inner) => inner.size_hint(),
            None => SizeHint::with_exact(self.buffered.as_ref().map_or(0, |d| d.len() as u64)),
        }
    }
}
