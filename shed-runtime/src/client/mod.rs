//! The caller's side (feature `client`): a tower layer for outgoing HTTP
//! and gRPC calls that propagates the caller's deadline, retries only what
//! is safe to retry and only as much as a budget allows, and backs off as
//! a whole when the backend sheds.
//!
//! Shedding alone is half the loop: if every refused caller retries at
//! once, shedding creates more traffic than it removes. [`ClientLayer`]
//! wraps any `tower::Service<http::Request<B>>` with a `Clone` body
//! (hyper-util's client with `Full<Bytes>`, for one; tonic's `Channel`
//! takes `tonic::body::Body`, which is not `Clone`: with feature `tonic`,
//! [`grpc::layered`] buffers its requests for the layer):
//!
//! ```
//! use std::time::Duration;
//! use shed_runtime::client::{AdaptiveThrottle, Backoff, ClientLayer, RetryBudget};
//!
//! let layer = ClientLayer::new()
//!     .name("orders")
//!     .max_attempts(3)
//!     .deadline_margin(Duration::from_millis(10))
//!     .backoff(Backoff::new(Duration::from_millis(50), Duration::from_secs(5)))
//!     .budget(Some(RetryBudget::new().ratio(0.1)))
//!     .throttle(Some(AdaptiveThrottle::new().k(2.0)));
//! // let client = tower::ServiceBuilder::new().layer(layer).service(hyper_client);
//! # let _ = layer;
//! ```
//!
//! See [`ClientLayer`] for what it does, and the server's side in
//! [`crate::http`] (`ShedLayer` counts first attempts and retries).

mod backoff;
mod body;
mod budget;
mod classify;
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub mod grpc;
mod headers;
mod layer;
mod throttle;
mod window;

#[cfg(test)]
mod tests;

pub use backoff::Backoff;
pub use body::ClientBody;
pub use budget::{Reservation, RetryBudget};
pub use headers::grpc_timeout;
pub use layer::{BoxError, Client, ClientLayer, ClientStats, Idempotent, LocalRefusal};
pub use throttle::AdaptiveThrottle;
