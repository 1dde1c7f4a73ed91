//! A tower layer that admits HTTP requests through the limiter.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Method, Request, Response};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use super::attempt::{AttemptHeaders, RetryStats};
use super::body::{BodyPermit, GuardedBody, MaxHold};
use super::counters::HttpCounters;
use super::deadline::DeadlineHeaders;
use super::degraded::{self, DEGRADED_FALLBACK, DEGRADED_HEADER};
use super::grpc::{grpc_refusal_response, is_grpc};
use super::problem::refusal_response;
use crate::deadline::after;
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
/// A prefix matches whole path segments: `/reports` guards `/reports` and
/// `/reports/42`, never `/reportsadmin`.
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
/// match routes.classify(&get("/reportsadmin")) {
///     Classification::Guard(policy) => assert_eq!(policy.name(), "http:*", "the fallback, not /reports"),
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

impl Routes {
    /// The guarded routes' policies and the fallback's (`http:*`), for a
    /// policy listing beside [`policies()`](crate::policies).
    pub fn policies(&self) -> crate::PolicyTable {
        let guarded = |c: &Classification| match c {
            Classification::Guard(policy) => Some(*policy),
            _ => None,
        };
        crate::PolicyTable::from_policies(
            self.exact
                .iter()
                .chain(&self.prefixes)
                .filter_map(|(_, _, c)| guarded(c))
                .chain(guarded(&self.fallback)),
        )
    }

    /// The table as JSON, one rule a line in matching order (exact paths,
    /// then prefixes, then the fallback), for an admin endpoint.
    ///
    /// ```
    /// let routes = shed_runtime::http::Routes::new("critical").exempt("/healthz").route("/reports", "background", 3);
    /// let json = routes.to_json();
    /// assert_eq!(json[0]["path"], "/healthz");
    /// assert_eq!(json[0]["action"], "exempt");
    /// assert_eq!(json[1]["policy"]["class"], "background");
    /// assert_eq!(json[2]["match"], "otherwise");
    /// assert_eq!(json[2]["policy"]["name"], "http:*");
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let rule = |kind: &str, path: Option<&str>, method: Option<&Method>, c: &Classification| {
            let (action, policy) = match c {
                Classification::Exempt => ("exempt", serde_json::Value::Null),
                Classification::ByHandler => ("by_handler", serde_json::Value::Null),
                Classification::Guard(policy) => (
                    "guard",
                    serde_json::to_value(policy).unwrap_or(serde_json::Value::Null),
                ),
            };
            serde_json::json!({
                "match": kind,
                "path": path,
                "method": method.map(Method::as_str),
                "action": action,
                "policy": policy,
            })
        };
        let rules = self
            .exact
            .iter()
            .map(|(p, m, c)| rule("exact", Some(p), m.as_ref(), c))
            .chain(
                self.prefixes
                    .iter()
                    .map(|(p, m, c)| rule("prefix", Some(p), m.as_ref(), c)),
            )
            .chain(std::iter::once(rule(
                "otherwise",
                None,
                None,
                &self.fallback,
            )));
        serde_json::Value::Array(rules.collect())
    }
}

/// Whether `prefix` covers `path` segment by segment: `/a` covers `/a` and
/// `/a/b` but not `/ab`.
fn covers(prefix: &str, path: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
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
            .filter(|(p, m, _)| covers(p, path) && method_ok(m))
            .max_by_key(|(p, _, _)| p.trim_end_matches('/').len())
            .map_or(self.fallback, |(_, _, c)| *c)
    }
}

/// The layer: admits each request through the limiter (the process-wide
/// one unless [`ShedLayer::limiter`] says otherwise, so requests and
/// `#[shed]` fns share one budget), refuses with `503` + `Retry-After` +
/// problem JSON without calling the inner service (a gRPC call gets
/// `UNAVAILABLE` with `grpc-retry-pushback-ms` instead:
/// [`grpc_refusal_response`](super::grpc_refusal_response)), and holds the slots
/// until the response body ends, for at most the maximum hold time.
///
/// The service time a route learns is measured to the response head, not
/// to the end of the body, so slow readers do not make it look slow.
/// Responses answered by a `#[shed]` fallback carry
/// `shed-degraded: fallback`.
///
/// **Request bodies.** A request guarded here holds its slots while the
/// inner service reads its body, so a client that sends its body slowly
/// holds them as long as it likes: the maximum hold time is enforced on
/// the response body only. On routes that take a body, admit in the handler instead
/// ([`Classification::ByHandler`] and a `#[shed]` fn: axum's extractors
/// have read the body before the handler runs), or bound the read inside
/// this layer (for example `tower_http::timeout::RequestBodyTimeoutLayer`).
#[derive(Debug, Clone)]
pub struct ShedLayer<C> {
    classify: C,
    deadlines: DeadlineHeaders,
    limiter: Option<Limiter>,
    max_hold: Option<Duration>,
    cut: bool,
    counters: Arc<HttpCounters>,
    attempts: AttemptHeaders,
    retries: RetryStats,
    tenant: Option<TenantOf>,
}

/// The service's function from a request to its caller's tenant.
#[derive(Clone)]
struct TenantOf(Arc<TenantFn>);

type TenantFn = dyn Fn(&http::request::Parts) -> Option<crate::Tenant> + Send + Sync;

impl std::fmt::Debug for TenantOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TenantOf(..)")
    }
}

impl<C> ShedLayer<C> {
    /// A layer classifying requests with `classify`.
    pub fn new(classify: C) -> Self {
        Self {
            classify,
            deadlines: DeadlineHeaders::default(),
            limiter: None,
            max_hold: None,
            cut: false,
            counters: Arc::default(),
            attempts: AttemptHeaders::default(),
            retries: RetryStats::default(),
            tenant: None,
        }
    }

    /// The caller's tenant of each request: a function of the request as
    /// it reaches this layer, which must sit *after* authentication, so
    /// the function reads what authentication established (an extension
    /// holding the API key's owner or the token's subject), never a header
    /// the client chooses. Guarded calls of the request (the route's and
    /// the handler's `#[shed]` fns) are then that tenant's: fair among
    /// tenants inside a class, ranked by plan, shed by cohort (see
    /// [`crate::Tenant`]). Default: none, every request is the anonymous
    /// tenant's.
    pub fn tenant(
        mut self,
        tenant_of: impl Fn(&http::request::Parts) -> Option<crate::Tenant> + Send + Sync + 'static,
    ) -> Self {
        self.tenant = Some(TenantOf(Arc::new(tenant_of)));
        self
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

    /// The longest a guarded response may hold its slots, counted from the
    /// request's arrival (default: the deadline cap of
    /// [`deadlines`](Self::deadlines), 30 s). A handler can set its own
    /// with a [`MaxHold`] response extension. When the time is up the
    /// slots are given back and counted in
    /// [`HttpCounters::hold_expired`]; the body goes on unless
    /// [`cut_at_max_hold`](Self::cut_at_max_hold) is set.
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = Some(max_hold);
        self
    }

    /// Whether a body still streaming at its maximum hold time is cut (it
    /// ends with a [`HoldExpired`](super::HoldExpired) error, so the
    /// server aborts the response and the client sees it incomplete).
    /// Default: no, the body goes on without the slots.
    pub fn cut_at_max_hold(mut self, cut: bool) -> Self {
        self.cut = cut;
        self
    }

    /// The layer's counters, shared by its clones and services.
    pub fn counters(&self) -> Arc<HttpCounters> {
        Arc::clone(&self.counters)
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

/// Whether a handler refused: shed's refusals are the only `503`s (and,
/// for unmeetable deadlines, `504`s) with a problem body; over gRPC, a
/// trailers-only `UNAVAILABLE` with a retry pushback (what a refused
/// `#[shed]` fn's `tonic::Status` is).
fn is_refusal<B>(response: &Response<B>) -> bool {
    let headers = response.headers();
    let problem = matches!(
        response.status(),
        http::StatusCode::SERVICE_UNAVAILABLE | http::StatusCode::GATEWAY_TIMEOUT
    ) && headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v == "application/problem+json");
    let grpc = headers.get("grpc-status").is_some_and(|v| v == "14")
        && headers.contains_key("grpc-retry-pushback-ms");
    problem || grpc
}

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
        let (request, tenant) = match &self.layer.tenant {
            Some(TenantOf(tenant_of)) => {
                let (parts, body) = request.into_parts();
                let tenant = tenant_of(&parts);
                (Request::from_parts(parts, body), tenant)
            }
            None => (request, None),
        };
        let arrived = Instant::now();
        // Only a deadline the client asked for goes into the task: without
        // one, nested `#[shed]` calls keep their clock-free fast path. The
        // server's cap still decides whether the answer was in time.
        let requested = self.layer.deadlines.requested(request.headers());
        let cap = self.layer.deadlines.cap();
        let deadline = after(arrived, requested.unwrap_or(cap));
        let hold_until = after(arrived, self.layer.max_hold.unwrap_or(cap));
        let cut = self.layer.cut;
        let counters = Arc::clone(&self.layer.counters);
        let attempt = self.layer.attempts.attempt(request.headers());
        let grpc = is_grpc(request.headers());
        let retries = self.layer.retries.clone();
        let limiter = self.layer.limiter.clone();
        let work = async move {
            let permit = match classification {
                Classification::Guard(policy) => {
                    let current = limiter.clone().unwrap_or_else(Limiter::current);
                    let admission = current.acquire_as(policy).await;
                    retries.record(policy.class(), attempt, admission.is_ok());
                    match admission {
                        Ok(permit) => Some((permit, policy.class())),
                        Err(rejected) if grpc => return Ok(grpc_refusal_response(&rejected)),
                        Err(rejected) => return Ok(refusal_response(&rejected)),
                    }
                }
                _ => None,
            };
            let (response, fell_back) = degraded::watch(inner.call(request)).await;
            let mut response = response?;
            if permit.is_none() {
                // The handler admits itself (`#[shed]`): its answer says
                // whether it was shed.
                retries.record("handler", attempt, !is_refusal(&response));
            }
            if fell_back {
                counters.count_degraded();
                response
                    .headers_mut()
                    .insert(DEGRADED_HEADER, DEGRADED_FALLBACK);
            }
            let Some((mut permit, class)) = permit else {
                return Ok(response.map(GuardedBody::unguarded));
            };
            // The route's service time ends at the head: how fast the
            // client reads the body is not the route's.
            permit.mark_served();
            let hold_until = response
                .extensions()
                .get::<MaxHold>()
                .map_or(hold_until, |hold| after(arrived, hold.0));
            Ok(response.map(|body| {
                GuardedBody::guarded(
                    body,
                    BodyPermit {
                        permit,
                        arrived,
                        deadline,
                        hold_until,
                        cut,
                        class,
                        counters,
                    },
                )
            }))
        };
        let scoped = self.layer.limiter.clone();
        Box::pin(async move {
            let work = crate::with_attempt(attempt, async move {
                let work = async move {
                    match requested {
                        Some(_) => crate::with_deadline(deadline, work).await,
                        None => work.await,
                    }
                };
                match tenant {
                    Some(tenant) => tenant.scope(work).await,
                    None => work.await,
                }
            });
            match scoped {
                Some(limiter) => limiter.scope(work).await,
                None => work.await,
            }
        })
    }
}
