//! A tonic client through shed's client layer.
//!
//! `ClientLayer` sends a request again on a retry, so it needs a `Clone`
//! body; tonic encodes its messages into a streaming body that is not.
//! [`Buffered`] reads the encoded request into memory (a unary call's one
//! message) and hands the layer a `Full<Bytes>`; below the layer,
//! [`channel_service`] turns it back into tonic's body for the channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use shed::client::{BoxError, Client, ClientLayer, LocalRefusal};
use tonic::transport::Channel;
use tonic::Status;
use tower::{Layer, Service};

use crate::proto::work_client::WorkClient;

/// Makes tonic's requests resendable for [`ClientLayer`]: reads each
/// request body into memory, then calls the inner service with it. Meant
/// for unary (and small client-streaming) calls; a long stream would be
/// held in memory whole.
#[derive(Debug, Clone)]
pub struct Buffered<S> {
    inner: S,
}

impl<S> Buffered<S> {
    /// Buffers the requests sent to `inner`.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S, ResBody> Service<Request<tonic::body::Body>> for Buffered<S>
where
    S: Service<Request<Full<Bytes>>, Response = Response<ResBody>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = Response<ResBody>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ResBody>, Status>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        self.inner.poll_ready(cx).map_err(status)
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        // The clone takes the place of the service made ready above.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await?.to_bytes();
            // Called in the caller's task, so the client layer reads the
            // caller's deadline.
            inner
                .call(Request::from_parts(parts, Full::new(bytes)))
                .await
                .map_err(status)
        })
    }
}

/// The status a caller sees for an error of the client layer: a call it
/// refused without sending is `DEADLINE_EXCEEDED` (no time left) or
/// `UNAVAILABLE` without pushback (throttled locally: the backend is
/// refusing calls), with the [`LocalRefusal`] as its source; anything else
/// is what tonic makes of it.
pub fn status(error: BoxError) -> Status {
    let mut status = match error.downcast_ref::<LocalRefusal>() {
        Some(LocalRefusal::DeadlineExpired) => Status::deadline_exceeded(error.to_string()),
        Some(_) => Status::unavailable(error.to_string()),
        None => return Status::from_error(error),
    };
    status.set_source(Arc::from(error));
    status
}

/// The channel, taking the buffered bodies the client layer sends.
pub type ChannelService =
    tower::util::MapRequest<Channel, fn(Request<Full<Bytes>>) -> Request<tonic::body::Body>>;

/// `channel` as a service of buffered requests, for under the client
/// layer.
pub fn channel_service(channel: Channel) -> ChannelService {
    tower::util::MapRequest::new(channel, |request: Request<Full<Bytes>>| {
        request.map(tonic::body::Body::new)
    })
}

/// A `WorkClient` whose calls go through `layer` over `inner` (usually
/// [`channel_service`] of a channel; the tests put a recorder between).
pub fn work_client<S, B>(layer: &ClientLayer, inner: S) -> WorkClient<Buffered<Client<S>>>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError> + Send,
{
    WorkClient::new(Buffered::new(layer.layer(inner)))
}
