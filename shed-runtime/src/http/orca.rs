//! A tower layer that attaches this instance's load report to every
//! response, in the `endpoint-load-metrics` header that Envoy's
//! client-side weighted round robin reads (ORCA). See
//! [`LoadReport`](crate::LoadReport) for what is reported.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderValue, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::LoadReporter;

/// The response header Envoy reads ORCA load reports from.
pub const ORCA_HEADER: &str = "endpoint-load-metrics";

/// The form of the ORCA header's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OrcaFormat {
    /// `TEXT key=value,...`: the cheapest to write and to read.
    #[default]
    Text,
    /// `JSON {...}`.
    Json,
}

/// Adds the `endpoint-load-metrics` header to every response.
///
/// ```
/// use std::sync::Arc;
/// use shed_runtime::http::{OrcaFormat, OrcaLayer};
/// use shed_runtime::{Limiter, LoadReporter};
///
/// let limiter = Limiter::builder().build().unwrap();
/// let layer = OrcaLayer::new(Arc::new(LoadReporter::new(limiter)), OrcaFormat::Text);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone)]
pub struct OrcaLayer {
    reporter: Arc<LoadReporter>,
    format: OrcaFormat,
}

impl OrcaLayer {
    /// Reports from `reporter`, in `format`.
    pub fn new(reporter: Arc<LoadReporter>, format: OrcaFormat) -> Self {
        Self { reporter, format }
    }
}

impl<S> Layer<S> for OrcaLayer {
    type Service = Orca<S>;

    fn layer(&self, inner: S) -> Orca<S> {
        Orca {
            inner,
            reporter: Arc::clone(&self.reporter),
            format: self.format,
        }
    }
}

/// The service [`OrcaLayer`] makes.
#[derive(Debug, Clone)]
pub struct Orca<S> {
    inner: S,
    reporter: Arc<LoadReporter>,
    format: OrcaFormat,
}

impl<S, R, B> Service<R> for Orca<S>
where
    S: Service<R, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let response = self.inner.call(request);
        let reporter = Arc::clone(&self.reporter);
        let format = self.format;
        Box::pin(async move {
            let mut response = response.await?;
            // Reported as the response leaves, so it includes this call.
            let report = reporter.report();
            let value = match format {
                OrcaFormat::Text => report.orca_text(),
                OrcaFormat::Json => report.orca_json(),
            };
            if let Ok(value) = HeaderValue::try_from(value) {
                response.headers_mut().insert(ORCA_HEADER, value);
            }
            Ok(response)
        })
    }
}
