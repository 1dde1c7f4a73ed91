//! A tonic `WorkClient` through shed's client layer, with
//! `shed::client::grpc::layered`: deadline propagation as `grpc-timeout`,
//! retries of shed's refusals after their pushback, a retry budget.

use bytes::Bytes;
use http::{Request, Response};
use shed::client::grpc::{self, Buffered, Unbuffered};
use shed::client::{BoxError, Client, ClientLayer};
use tower::Service;

use crate::proto::work_client::WorkClient;

/// A `WorkClient` whose calls go through `layer` to `channel` (a
/// `tonic::transport::Channel`; the tests put a recorder in front of it).
pub fn work_client<S, B>(
    layer: &ClientLayer,
    channel: S,
) -> WorkClient<Buffered<Client<Unbuffered<S>>>>
where
    S: Service<Request<tonic::body::Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError> + Send,
{
    WorkClient::new(grpc::layered(layer, channel))
}
