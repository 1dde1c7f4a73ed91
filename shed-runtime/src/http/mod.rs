//! HTTP services (feature `http`): a tower layer that admits requests
//! through the limiter, `503` + `Retry-After` + problem JSON refusals,
//! deadlines from request headers, and response bodies that hold their
//! slots until they end.
//!
//! ```
//! use shed_runtime::http::{Routes, ShedLayer};
//!
//! let layer = ShedLayer::new(
//!     Routes::new("critical")
//!         .exempt("/healthz")                    // never shed
//!         .route("/recommendations", "optional", 1)
//!         .route("/reports", "background", 3),
//! );
//! # let _ = layer;
//! ```

mod attempt;
mod body;
mod counters;
mod deadline;
mod degraded;
mod grpc;
mod layer;
mod orca;
#[cfg(feature = "tonic")]
mod orca_trailer;
mod problem;
pub(crate) mod wire;

pub use attempt::{AttemptCounts, AttemptHeaders, RetryStats};
pub use body::{BoxError, GuardedBody, HoldExpired, MaxHold};
pub use counters::HttpCounters;
pub use deadline::{parse_grpc_timeout, parse_timeout, DeadlineHeaders};
pub(crate) use degraded::note_fallback;
pub use degraded::{DEGRADED_FALLBACK, DEGRADED_HEADER};
pub use grpc::grpc_refusal_response;
pub use layer::{Classification, Classify, Routes, Shed, ShedLayer};
pub use orca::{Orca, OrcaFormat, OrcaLayer, ORCA_HEADER};
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub use orca_trailer::{OrcaTrailer, OrcaTrailerBody, OrcaTrailerLayer, ORCA_TRAILER};
pub use problem::{
    problem_json, reason_label, refusal_response, refusal_status, retry_after_secs, PROBLEM_TYPE,
    PROBLEM_TYPE_DEADLINE,
};
