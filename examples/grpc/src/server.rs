//! The `Work` service behind shed's server layer.
//!
//! Admission is shed's, not the example's: `ShedLayer` reads the call's
//! deadline from `grpc-timeout` (and the attempt number from
//! `grpc-previous-rpc-attempts`) into the task, and the handler's work is
//! a `#[shed]` fn, so a refusal is a `tonic::Status` made by shed:
//! `UNAVAILABLE` with `grpc-retry-pushback-ms` when it sheds,
//! `DEADLINE_EXCEEDED` when the deadline is shorter than the work takes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shed::http::{Classification, OrcaTrailerLayer, RetryStats, Routes, ShedLayer};
use shed::{shed, Limiter, LoadReporter};
use tonic::{Request, Response, Status};
use tower::ServiceBuilder;

use crate::proto::work_server::{Work, WorkServer};
use crate::proto::{WorkReply, WorkRequest};

/// How the example server runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The limiter calls are admitted through (its own here, so that tests
    /// running side by side do not share one; a service would use the
    /// process-wide one).
    pub limiter: Limiter,
    /// Whether every answer carries the ORCA `endpoint-load-metrics-bin`
    /// trailer (off by default: balancers opt in).
    pub orca: bool,
    /// The calls the server layer admits itself, by gRPC path
    /// (`/shed.example.work.Work/Do`). Default: none, every call is left
    /// to the handler's `#[shed]`. A path guarded here is admitted twice
    /// (by the layer, then by the handler's `#[shed]`): this is for
    /// showing the layer's own gRPC refusals.
    pub routes: Routes,
}

impl Options {
    /// Calls admitted through `limiter`, no ORCA trailer.
    pub fn new(limiter: Limiter) -> Self {
        Self {
            limiter,
            orca: false,
            routes: Routes::new("critical").otherwise(Classification::ByHandler),
        }
    }

    /// Sends the ORCA trailer on every answer.
    pub fn orca(mut self, orca: bool) -> Self {
        self.orca = orca;
        self
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// First attempts and retries as the server layer counted them.
    pub retries: RetryStats,
}

/// The service: each call does `cost_ms` of work under the limiter.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkService;

#[tonic::async_trait]
impl Work for WorkService {
    async fn r#do(&self, request: Request<WorkRequest>) -> Result<Response<WorkReply>, Status> {
        // What the caller asked for, as it arrived (tonic leaves it in the
        // metadata); the server layer has already made it the deadline.
        let grpc_timeout_us = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(shed::http::parse_grpc_timeout)
            .map_or(0, |t| u64::try_from(t.as_micros()).unwrap_or(u64::MAX));
        let cost = Duration::from_millis(request.get_ref().cost_ms.into());
        work(cost).await?;
        Ok(Response::new(WorkReply {
            grpc_timeout_us,
            attempt: shed::attempt(),
        }))
    }
}

/// The guarded work: refused (as a `Status`) before it starts when the
/// limiter sheds or the deadline cannot be met.
#[shed(class = "critical", name = "work.Work/Do")]
async fn work(cost: Duration) -> Result<(), Status> {
    tokio::time::sleep(cost).await;
    Ok(())
}

/// Serves the `Work` service on `listener` until the runtime stops.
///
/// The layers, outermost first: `ShedLayer` (deadline and attempt number
/// into the task, the limiter scoped for `#[shed]`; the handler admits
/// itself unless [`Options::routes`] says otherwise), then, if asked, the
/// ORCA trailer.
pub async fn serve(listener: tokio::net::TcpListener, options: Options) -> std::io::Result<Server> {
    let addr = listener.local_addr()?;
    let shed = ShedLayer::new(options.routes).limiter(options.limiter.clone());
    let retries = shed.retry_stats();
    let orca = options.orca.then(|| {
        let reporter = Arc::new(LoadReporter::new(options.limiter.clone()));
        ServiceBuilder::new()
            .map_response(|response: http::Response<_>| response.map(tonic::body::Body::new))
            .layer(OrcaTrailerLayer::new(reporter))
            .into_inner()
    });
    let layers = ServiceBuilder::new()
        .layer(shed)
        // The server layer makes its own refusals' bodies from a `String`
        // (empty for gRPC), which tonic's body cannot be made from.
        .map_response(|response: http::Response<tonic::body::Body>| {
            response.map(axum::body::Body::new)
        })
        .option_layer(orca)
        .into_inner();
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let router = tonic::transport::Server::builder()
        .layer(layers)
        .add_service(WorkServer::new(WorkService));
    tokio::spawn(async move {
        if let Err(error) = router.serve_with_incoming(incoming).await {
            eprintln!("the gRPC server stopped: {error}");
        }
    });
    Ok(Server { addr, retries })
}
