//! shed in front of a gRPC service, end to end: a tonic service whose
//! handler is admitted by `#[shed]` under the server layer's deadline
//! (from `grpc-timeout`), and tonic clients that go through shed's client
//! layer (deadline propagation, retries after the pushback, a retry
//! budget).
//!
//! - [`server`]: the `Work` service and [`server::serve`], which runs it
//!   on a listener behind `ShedLayer` (and, opt-in, the ORCA load-report
//!   trailer).
//! - [`client`]: a tonic `WorkClient` over a channel through
//!   `ClientLayer`; tonic's request bodies are read into memory first, so
//!   that the layer can send them again.

pub mod client;
pub mod server;

/// The messages and the tonic client and server generated from
/// `proto/work.proto` (checked in; `codegen/` regenerates them and
/// `scripts/deep-checks` checks that they are current).
pub mod proto {
    include!("generated/shed.example.work.rs");
}

/// ORCA's `OrcaLoadReport`, generated from `proto/orca_load_report.proto`,
/// to decode the `endpoint-load-metrics-bin` trailer.
pub mod orca {
    include!("generated/xds.data.orca.v3.rs");
}
