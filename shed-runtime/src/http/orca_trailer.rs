//! A tower layer that ends every gRPC response with this instance's load
//! report, in the `endpoint-load-metrics-bin` trailer that gRPC's weighted
//! round robin and Envoy read (ORCA, per-call reporting). See
//! [`LoadReport`](crate::LoadReport) for what is reported.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use http::{HeaderMap, Response};
use http_body::{Body, Frame, SizeHint};
use tonic::metadata::{BinaryMetadataValue, MetadataMap};
use tower_layer::Layer;
use tower_service::Service;

use crate::LoadReporter;

/// The gRPC trailer carrying an `xds.data.orca.v3.OrcaLoadReport`.
pub const ORCA_TRAILER: &str = "endpoint-load-metrics-bin";

/// The status header of a gRPC answer: in the headers, it marks a
/// trailers-only answer (a refusal, an error), whose headers are its
/// trailers.
const GRPC_STATUS: &str = "grpc-status";

/// Adds the `endpoint-load-metrics-bin` trailer to every gRPC response
/// (feature `tonic`): to the trailers that end the body, or to the headers
/// of a trailers-only answer such as a refusal (gRPC reads those as the
/// trailers). The report is taken as the trailer is written, so it counts
/// the call it ends.
///
/// ```
/// use std::sync::Arc;
/// use shed_runtime::http::OrcaTrailerLayer;
/// use shed_runtime::{Limiter, LoadReporter};
///
/// let limiter = Limiter::builder().build().unwrap();
/// let layer = OrcaTrailerLayer::new(Arc::new(LoadReporter::new(limiter)));
/// // tonic::transport::Server::builder().layer(layer).add_service(...)
/// # let _ = layer;
/// ```
#[derive(Debug, Clone)]
pub struct OrcaTrailerLayer {
    reporter: Arc<LoadReporter>,
}

impl OrcaTrailerLayer {
    /// Reports from `reporter`.
    pub fn new(reporter: Arc<LoadReporter>) -> Self {
        Self { reporter }
    }
}

impl<S> Layer<S> for OrcaTrailerLayer {
    type Service = OrcaTrailer<S>;

    fn layer(&self, inner: S) -> OrcaTrailer<S> {
        OrcaTrailer {
            inner,
            reporter: Arc::clone(&self.reporter),
        }
    }
}

/// The service [`OrcaTrailerLayer`] makes.
#[derive(Debug, Clone)]
pub struct OrcaTrailer<S> {
    inner: S,
    reporter: Arc<LoadReporter>,
}

impl<S, R, B> Service<R> for OrcaTrailer<S>
where
    S: Service<R, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<OrcaTrailerBody<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let response = self.inner.call(request);
        let reporter = Arc::clone(&self.reporter);
        Box::pin(async move {
            let mut response = response.await?;
            if response.headers().contains_key(GRPC_STATUS) {
                // Trailers-only: the headers are the trailers.
                insert_report(response.headers_mut(), &reporter);
                return Ok(response.map(|inner| OrcaTrailerBody {
                    inner,
                    reporter: None,
                }));
            }
            Ok(response.map(|inner| OrcaTrailerBody {
                inner,
                reporter: Some(reporter),
            }))
        })
    }
}

/// Writes the current report into `headers`, encoded as gRPC encodes
/// binary metadata (base64).
fn insert_report(headers: &mut HeaderMap, reporter: &LoadReporter) {
    let mut metadata = MetadataMap::new();
    metadata.insert_bin(
        ORCA_TRAILER,
        BinaryMetadataValue::from_bytes(&reporter.report().orca_proto()),
    );
    if let Some(value) = metadata.into_headers().remove(ORCA_TRAILER) {
        headers.insert(ORCA_TRAILER, value);
    }
}

pin_project_lite::pin_project! {
    /// A response body whose trailers get the load report: added to the
    /// trailers frame that ends a gRPC body, or sent as a trailers frame
    /// of its own if the body ends without one.
    #[derive(Debug)]
    pub struct OrcaTrailerBody<B> {
        #[pin]
        inner: B,
        // `Some` until the report is written.
        reporter: Option<Arc<LoadReporter>>,
    }
}

impl<B: Body> Body for OrcaTrailerBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = match ready!(this.inner.poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            None => {
                return Poll::Ready(this.reporter.take().map(|reporter| {
                    let mut trailers = HeaderMap::new();
                    insert_report(&mut trailers, &reporter);
                    Ok(Frame::trailers(trailers))
                }))
            }
            error => return Poll::Ready(error),
        };
        match frame.into_trailers() {
            Ok(mut trailers) => {
                if let Some(reporter) = this.reporter.take() {
                    insert_report(&mut trailers, &reporter);
                }
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
            Err(frame) => Poll::Ready(Some(Ok(frame))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.reporter.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;
    use crate::Limiter;

    /// A body of one data frame then trailers, as a gRPC answer ends.
    struct Grpc(Vec<Frame<bytes::Bytes>>);

    impl Body for Grpc {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<bytes::Bytes>, Self::Error>>> {
            Poll::Ready((!self.0.is_empty()).then(|| Ok(self.0.remove(0))))
        }
    }

    fn reporter() -> Arc<LoadReporter> {
        Arc::new(LoadReporter::new(Limiter::builder().build().unwrap()))
    }

    async fn frames<B: Body>(body: B) -> Vec<Frame<B::Data>>
    where
        B::Error: std::fmt::Debug,
    {
        let mut body = std::pin::pin!(body);
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            out.push(frame.unwrap());
        }
        out
    }

    fn decoded(headers: &HeaderMap) -> Vec<u8> {
        MetadataMap::from_headers(headers.clone())
            .get_bin(ORCA_TRAILER)
            .expect("the report is there")
            .to_bytes()
            .expect("valid base64")
            .to_vec()
    }

    #[tokio::test]
    async fn the_report_joins_the_trailers_that_end_the_body() {
        let reporter = reporter();
        let mut trailers = HeaderMap::new();
        trailers.insert(GRPC_STATUS, "0".parse().unwrap());
        let body = OrcaTrailerBody {
            inner: Grpc(vec![
                Frame::data(bytes::Bytes::from_static(b"message")),
                Frame::trailers(trailers),
            ]),
            reporter: Some(Arc::clone(&reporter)),
        };
        let frames = frames(body).await;
        assert_eq!(frames.len(), 2, "no extra frame");
        let trailers = frames[1].trailers_ref().unwrap();
        assert_eq!(trailers[GRPC_STATUS], "0");
        assert_eq!(decoded(trailers), reporter.report().orca_proto());
    }

    #[tokio::test]
    async fn a_body_without_trailers_gets_a_trailers_frame() {
        let body = OrcaTrailerBody {
            inner: Grpc(vec![Frame::data(bytes::Bytes::from_static(b"m"))]),
            reporter: Some(reporter()),
        };
        assert!(!body.is_end_stream());
        let frames = frames(body).await;
        assert_eq!(frames.len(), 2);
        assert!(frames[1].trailers_ref().unwrap().contains_key(ORCA_TRAILER));
    }

    #[tokio::test]
    async fn a_trailers_only_answer_carries_the_report_in_its_headers() {
        let service = tower_service_fn(|| {
            let mut response = Response::new(Grpc(Vec::new()));
            response
                .headers_mut()
                .insert(GRPC_STATUS, "14".parse().unwrap());
            response
        });
        let mut service = OrcaTrailerLayer::new(reporter()).layer(service);
        let response = service.call(()).await.unwrap();
        assert!(response.headers().contains_key(ORCA_TRAILER));
        assert!(
            frames(response.into_body()).await.is_empty(),
            "no body, no trailers frame"
        );
    }

    /// A service answering every request with `make()`.
    fn tower_service_fn<B>(
        make: impl Fn() -> Response<B> + Clone,
    ) -> impl Service<
        (),
        Response = Response<B>,
        Error = (),
        Future = std::future::Ready<Result<Response<B>, ()>>,
    > {
        struct Make<F>(F);
        impl<F: Fn() -> Response<B>, B> Service<()> for Make<F> {
            type Response = Response<B>;
            type Error = ();
            type Future = std::future::Ready<Result<Response<B>, ()>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: ()) -> Self::Future {
                std::future::ready(Ok((self.0)()))
            }
        }
        Make(make)
    }
}
