//! tonic clients through the client layer (features `client` and
//! `tonic`).
//!
//! [`ClientLayer`] sends a request again on a retry, so it needs a `Clone`
//! body; tonic encodes its messages into a streaming body that is not.
//! [`layered`] puts the layer between a tonic client and its channel:
//! [`Buffered`] reads each encoded request into memory (a unary call's one
//! message) and hands the layer a `Full<Bytes>`; below the layer,
//! [`Unbuffered`] gives the channel tonic's body again. With a generated
//! client (the repository's `examples/grpc` crate runs this):
//!
//! ```text
//! let channel = tonic::transport::Channel::from_static("http://127.0.0.1:50051").connect().await?;
//! let layer = shed::client::ClientLayer::new().max_attempts(3);
//! let mut client = GreeterClient::new(shed::client::grpc::layered(&layer, channel));
//! let mut request = tonic::Request::new(HelloRequest::default());
//! request.extensions_mut().insert(shed::client::Idempotent); // gRPC calls are POSTs
//! let reply = shed::with_deadline_in(Duration::from_millis(300), client.say_hello(request)).await?;
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use tonic::Status;
use tower_layer::Layer;
use tower_service::Service;

use super::layer::{BoxError, Client, ClientLayer, LocalRefusal};

/// `layer` between a tonic client and `channel` (a
/// `tonic::transport::Channel`, or any service of tonic's requests): give
/// the result to the generated client's `new`.
pub fn layered<S>(layer: &ClientLayer, channel: S) -> Buffered<Client<Unbuffered<S>>> {
    Buffered::new(layer.layer(Unbuffered::new(channel)))
}

/// Makes tonic's requests resendable for [`ClientLayer`]: reads each
/// request body into memory, then calls the inner service with it. For
/// unary (and small client-streaming) calls: a long stream would be held
/// in memory whole. Errors are [`Status`]es (see [`status`]).
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

/// The service under the layer: turns the buffered requests back into
/// tonic's body for `S` (a channel).
#[derive(Debug, Clone)]
pub struct Unbuffered<S> {
    inner: S,
}

impl<S> Unbuffered<S> {
    /// Sends the buffered requests to `inner`.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S> Service<Request<Full<Bytes>>> for Unbuffered<S>
where
    S: Service<Request<tonic::body::Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Full<Bytes>>) -> S::Future {
        self.inner.call(request.map(tonic::body::Body::new))
    }
}

/// The status a caller sees for an error of the client layer: a call it
/// refused without sending is `DEADLINE_EXCEEDED` (no time left) or
/// `UNAVAILABLE` without a pushback (throttled locally: the backend is
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

/// The [`LocalRefusal`] a status carries, if the client layer refused the
/// call without sending it.
pub fn local_refusal(status: &Status) -> Option<LocalRefusal> {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(refusal) = error.downcast_ref::<LocalRefusal>() {
            return Some(*refusal);
        }
        source = error.source();
    }
    None
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn local_refusals_become_grpc_codes_and_stay_findable() {
        let expired = status(LocalRefusal::DeadlineExpired.into());
        assert_eq!(expired.code(), tonic::Code::DeadlineExceeded);
        assert_eq!(local_refusal(&expired), Some(LocalRefusal::DeadlineExpired));
        let throttled = status(LocalRefusal::Throttled.into());
        assert_eq!(throttled.code(), tonic::Code::Unavailable);
        assert!(throttled.metadata().get("grpc-retry-pushback-ms").is_none());
        assert_eq!(local_refusal(&throttled), Some(LocalRefusal::Throttled));
        let other = status("connection reset".into());
        assert_eq!(local_refusal(&other), None);
    }
}
