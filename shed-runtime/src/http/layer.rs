//! A tower layer that admits HTTP requests through the limiter.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Method, Request, Response};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use super::attempt::{AttemptHeaders, RetryStats};
use super::body::GuardedBody;
use super::deadline::DeadlineHeaders;
use super::problem::refusal_response;
use crate::{Limiter, Policy};

/// What the layer does with a request, decided by the server from the
/// route, the method or an identity an authentication layer established
/// (in the request's extensions) — never from a header the client chose.
#[derive(Debug, Clone, Copy)]
pub enum Classification {
    /// Never shed, never counted: liveness probes.
    Exempt,
    /// Admit under this policy before the inner service sees the request.
    Guard(&'static Policy),
    /// Let it through: the handler's own `#[shed]` admits it. The
    /// request's deadline still applies.
    ByHandler,
}

/// How the layer classifies requests. Closures
/// `Fn(&http::Request<B>) -> Classification` implement it, and so does
/// [`Routes`].
pub trait Classify<B>: Clone + Send + Sync + 'static {
    /// The classification of `request`.
    fn classify(&self, request: &Request<B>) -> Classification;
}

impl<B, F> Classify<B> for F
where
    F: Fn(&Request<B>) -> Classification + Clone + Send + Sync + 'static,
{
    fn classify(&self, request: &Request<B>) -> Classification {
        self(request)
    }
}

/// A route table: exact paths and path prefixes (the longest match wins),
/// optionally per method, each with a classification.
///
/// ```
/// use shed_runtime::http::{Classification, Classify, Routes};
///
/// let routes = Routes::new("critical")
///     .exempt("/healthz")
///     .route("/recommendations", "optional", 1)
///     .route("/reports", "background", 3);
/// let get = |path: &str| http::Request::get(path).body(()).unwrap();
/// assert!(matches!(routes.classify(&get("/healthz")), Classification::Exempt));
/// match routes.classify(&get("/reports/42")) {
///     Classification::Guard(policy) => assert_eq!((policy.class(), policy.weight()), ("background", 3)),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Routes {
    exact: Vec<(String, Option<Method>, Classification)>,
    prefixes: Vec<(String, Option<Method>, Classification)>,
    fallback: Classification,
}

impl Routes {
    /// Routes whose unmatched requests are guarded in `default_class`.
    pub fn new(default_class: &str) -> Self {
        Self {
            exact: Vec::new(),
            prefixes: Vec::new(),
            fallback: Classification::Guard(Policy::leak("http:*", default_class, None, 1)),
        }
    }

    /// Unmatched requests get `classification` instead.
    pub fn otherwise(mut self, classification: Classification) -> Self {
        self.fallback = classification;
        self
    }

    /// Exempts an exact path (any method): probes are never shed.
    pub fn exempt(mut self, path: &str) -> Self {
        self.exact
            .push((path.to_string(), None, Classification::Exempt));
        self
    }

    /// Guards requests under `prefix` (any method) in `class` with `weight`
    /// slots and the class's default `max_wait`.
    pub fn route(self, prefix: &str, class: &str, weight: u32) -> Self {
        self.route_with(None, prefix, class, weight, None)
    }

    /// Guards requests under `prefix`, of `method` if given, with every
    /// setting of `#[shed]`.
    pub fn route_with(
        mut self,
        method: Option<Method>,
        prefix: &str,
        class: &str,
        weight: u32,
        max_wait: Option<Duration>,
    ) -> Self {
        let name = match &method {
            Some(m) => format!("{m} {prefix}"),
            None => prefix.to_string(),
        };
        let policy = Policy::leak(name, class, max_wait, weight);
        self.prefixes
            .push((prefix.to_string(), method, Classification::Guard(policy)));
        self
    }

    /// Lets requests under `prefix` through to handlers that guard
    /// themselves with `#[shed]`.
    pub fn by_handler(mut self, prefix: &str) -> Self {
        self.prefixes
            .push((prefix.to_string(), None, Classification::ByHandler));
        self
    }
}

impl<B> Classify<B> for Routes {
    fn classify(&self, request: &Request<B>) -> Classification {
        let path = request.uri().path();
        let method_ok = |m: &Option<Method>| m.as_ref().is_none_or(|m| m == request.method());
        if let Some((_, _, c)) = self
            .exact
            .iter()
            .find(|(p, m, _)| p == path && method_ok(m))
        {
            return *c;
        }
        self.prefixes
            .iter()
            .filter(|(p, m, _)| path.starts_with(p.as_str()) && method_ok(m))
            .max_by_key(|(p, _, _)| p.len())
            .map_or(self.fallback, |(_, _, c)| *c)
    }
}

/// The layer: admits each request through the limiter (the process-wide
/// one unless [`ShedLayer::limiter`] says otherwise, so requests and
/// `#[shed]` fns share one budget), refuses with `503` + `Retry-After` +
/// problem JSON without calling the inner service, and holds the slots
/// until the response body ends.
#[derive(Debug, Clone)]
pub struct ShedLayer<C> {
    classify: C,
    deadlines: DeadlineHeaders,
    limiter: Option<Limiter>,
    attempts: AttemptHeaders,
    retries: RetryStats,
}

impl<C> ShedLayer<C> {
    /// A layer classifying requests with `classify`.
    pub fn new(classify: C) -> Self {
        Self {
            classify,
            deadlines: DeadlineHeaders::default(),
            limiter: None,
            attempts: AttemptHeaders::default(),
            retries: RetryStats::default(),
        }
    }

    /// Where request deadlines come from (default: `x-request-timeout` and
    /// `grpc-timeout`, capped at 30 s).
    pub fn deadlines(mut self, deadlines: DeadlineHeaders) -> Self {
        self.deadlines = deadlines;
        self
    }

    /// Where a request's attempt number comes from (default:
    /// `grpc-previous-rpc-attempts`, `x-envoy-attempt-count`,
    /// `x-shed-attempt`). Handlers read it with [`crate::attempt`].
    pub fn attempts(mut self, attempts: AttemptHeaders) -> Self {
        self.attempts = attempts;
        self
    }

    /// First attempts and retries admitted and shed by this layer (and its
    /// clones), per class: the server's measure of retry amplification.
    pub fn retry_stats(&self) -> RetryStats {
        self.retries.clone()
    }

    /// Admits through `limiter` instead of the current one; `#[shed]` fns
    /// called by the handlers use it too.
    pub fn limiter(mut self, limiter: Limiter) -> Self {
        self.limiter = Some(limiter);
        self
    }
}

impl<S, C: Clone> Layer<S> for ShedLayer<C> {
    type Service = Shed<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Shed {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`ShedLayer`].
#[derive(Debug, Clone)]
pub struct Shed<S, C> {
    inner: S,
    layer: ShedLayer<C>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, C, ReqBody, ResBody> Service<Request<ReqBody>> for Shed<S, C>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    C: Classify<ReqBody>,
    ReqBody: Send + 'static,
    ResBody: From<String> + Send + 'static,
{
    type Response = Response<GuardedBody<ResBody>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The clone takes the place of the service made ready above.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let classification = self.layer.classify.classify(&request);
        if let Classification::Exempt = classification {
            return Box::pin(async move {
                let response = inner.call(request).await?;
                Ok(response.map(GuardedBody::unguarded))
            });
        }
        let arrived = Instant::now();
        let deadline = self.layer.deadlines.deadline(request.headers());
        let attempt = self.layer.attempts.attempt(request.headers());
        let retries = self.layer.retries.clone();
        let limiter = self.layer.limiter.clone();
        let work = async move {
            match classification {
                Classification::Guard(policy) => {
                    let current = limiter.clone().unwrap_or_else(Limiter::current);
                    let admission = current.acquire_as(policy).await;
                    retries.record(policy.class(), attempt, admission.is_ok());
                    match admission {
                        Ok(permit) => {
                            let response = inner.call(request).await?;
                            Ok(response
                                .map(|body| GuardedBody::guarded(body, permit, arrived, deadline)))
                        }
                        Err(rejected) => Ok(refusal_response(&rejected)),
                    }
                }
                _ => {
                    let response = inner.call(request).await?;
                    retries.record("handler", attempt, !is_refusal(&response));
                    Ok(response.map(GuardedBody::unguarded))
                }
            }
        };
        let work = crate::with_attempt(attempt, crate::with_deadline(deadline, work));
        match self.layer.limiter.clone() {
            Some(limiter) => Box::pin(limiter.scope(work)),
            None => Box::pin(work),
        }
    }
}

/// Whether a handler refused: shed's refusal responses are the only `503`s
/// with a problem body.
fn is_refusal<B>(response: &Response<B>) -> bool {
    response.status() == http::StatusCode::SERVICE_UNAVAILABLE
        && response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v == "application/problem+json")
}
