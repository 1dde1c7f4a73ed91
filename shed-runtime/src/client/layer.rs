//! The client layer: deadline propagation, safe retries under a budget,
//! adaptive throttling, around any `Service<http::Request<B>>`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use super::backoff::Backoff;
use super::body::ClientBody;
use super::budget::RetryBudget;
use super::classify::{self, Pushback};
use super::headers;
use super::throttle::AdaptiveThrottle;
use crate::deadline::after;

/// The error type of the client service: the inner service's error, or a
/// [`LocalRefusal`] (find it with `error.downcast_ref::<LocalRefusal>()`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request extension marking a call safe to repeat whatever its method
/// (a `POST` with an idempotency key, say). `GET`, `HEAD`, `OPTIONS`,
/// `TRACE`, `PUT` and `DELETE` are idempotent already.
///
/// ```
/// let mut request = http::Request::post("/orders").body(String::new()).unwrap();
/// request.extensions_mut().insert(shed_runtime::client::Idempotent);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Idempotent;

/// A call the layer refused without sending it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalRefusal {
    /// The caller's deadline, less the margin, has passed.
    #[error("the caller's deadline leaves no time for the call; it was not sent")]
    DeadlineExpired,
    /// The backend has been refusing calls and adaptive throttling
    /// rejected this one locally.
    #[error("the backend is refusing calls; adaptive throttling rejected this one locally")]
    Throttled,
}

/// What a client layer has done so far, counted over all its calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Attempts sent: first attempts and retries.
    pub attempts: u64,
    /// Attempts after the first (sent).
    pub retries: u64,
    /// Retries not made because the budget was spent (at once, or when
    /// due: see `budget_revoked`).
    pub budget_exhausted: u64,
    /// Of those, retries granted by the budget but not sent when due,
    /// because the rate of first attempts had fallen meanwhile
    /// ([`Reservation::redeem`](super::Reservation::redeem)): the callers
    /// that waited out a `Retry-After` for nothing.
    pub budget_revoked: u64,
    /// Calls rejected locally by adaptive throttling.
    pub throttled: u64,
    /// Calls not sent because their deadline had passed.
    pub deadline_expired: u64,
    /// Retries not made because their wait would end past the deadline.
    pub retries_past_deadline: u64,
}

#[derive(Debug, Default)]
struct Counters {
    attempts: AtomicU64,
    retries: AtomicU64,
    budget_exhausted: AtomicU64,
    budget_revoked: AtomicU64,
    throttled: AtomicU64,
    deadline_expired: AtomicU64,
    retries_past_deadline: AtomicU64,
}

/// The largest refusal body the layer reads to decide on a retry.
const MAX_PROBLEM_BYTES: usize = 16 * 1024;

/// A tower layer for outgoing HTTP (and gRPC) calls that keeps callers
/// from making an overload worse:
///
/// - **deadline propagation**: the task's deadline ([`crate::deadline`]),
///   less a [margin](ClientLayer::deadline_margin), is sent as
///   `x-request-timeout` (milliseconds) and, on gRPC calls, `grpc-timeout`;
///   a call whose deadline has passed is refused locally
///   ([`LocalRefusal::DeadlineExpired`]) without being sent;
/// - **retries only where safe**: only answers that say the call did not
///   run — a `503` with an `application/problem+json` body saying
///   `"retryable": true` (what shed sends), a gRPC `UNAVAILABLE` with
///   `grpc-retry-pushback-ms` ≥ 0, a refused connection — and only for
///   idempotent methods or calls marked [`Idempotent`]; never sooner
///   than `Retry-After` / the pushback, plus exponential backoff with full
///   jitter ([`Backoff`]); never past the deadline; each retry carries
///   `x-shed-attempt: <n>` (and `grpc-previous-rpc-attempts` on gRPC);
/// - **a retry budget** ([`RetryBudget`], default 10% of first attempts,
///   over 10 s and in every second) shared by every call through this
///   layer and its clones; a retry is granted when the refusal comes in
///   (a caller the budget will not cover, or whose retry it would pace
///   past the deadline, is answered at once), possibly paced up to a
///   quarter second past its wait, and checked again when due, against
///   the first attempts of the last second;
/// - **adaptive throttling** ([`AdaptiveThrottle`], K = 2), shared the
///   same way; it applies to retries too (a retry it rejects ends the call
///   with the refusal before it).
///
/// Request bodies must be `Clone` to be sent again: the layer does not
/// buffer them, so streaming bodies stay streaming and the cost of a copy
/// is the caller's choice (`Full<Bytes>`, `String` and `Empty` clone
/// cheaply). Response bodies stream through untouched, except a `503`
/// problem body, which the layer reads (up to 16 KiB) to decide.
///
/// Metrics (through the `metrics` facade, labelled `client`):
/// `shed_client_attempts_total`, `shed_client_retries_total`,
/// `shed_client_budget_exhausted_total` (of which
/// `shed_client_budget_revoked_total`), `shed_client_throttled_total`,
/// `shed_client_deadline_expired_total`,
/// `shed_client_retries_past_deadline_total`; [`ClientLayer::stats`] gives
/// the same counts.
#[derive(Debug, Clone)]
pub struct ClientLayer {
    name: &'static str,
    margin: Duration,
    max_attempts: u32,
    backoff: Backoff,
    budget: Option<RetryBudget>,
    throttle: Option<AdaptiveThrottle>,
    timeout_header: Option<HeaderName>,
    attempt_header: Option<HeaderName>,
    counters: Arc<Counters>,
}

impl Default for ClientLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientLayer {
    /// Up to 3 attempts, 10 ms of deadline margin, the default backoff,
    /// budget and throttle.
    pub fn new() -> Self {
        Self {
            name: "default",
            margin: Duration::from_millis(10),
            max_attempts: 3,
            backoff: Backoff::default(),
            budget: Some(RetryBudget::new()),
            throttle: Some(AdaptiveThrottle::new()),
            timeout_header: Some(HeaderName::from_static("x-request-timeout")),
            attempt_header: Some(HeaderName::from_static("x-shed-attempt")),
            counters: Arc::default(),
        }
    }

    /// The `client` label of the metrics (default `default`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Time kept back from the deadline sent to the server, for the answer
    /// to travel back (default 10 ms).
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// Attempts per call, the first included (default 3; 1: no retries).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The backoff between attempts (default 100 ms doubling to 10 s).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The retry budget (`None`: retries are capped only by
    /// `max_attempts` — the retry storm the budget exists to prevent).
    pub fn budget(mut self, budget: Option<RetryBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// Adaptive client-side throttling (`None`: off).
    pub fn throttle(mut self, throttle: Option<AdaptiveThrottle>) -> Self {
        self.throttle = throttle;
        self
    }

    /// The header carrying the time left in milliseconds (default
    /// `x-request-timeout`, what shed's server layer reads; `None`: only
    /// `grpc-timeout`, on gRPC calls).
    pub fn timeout_header(mut self, header: Option<HeaderName>) -> Self {
        self.timeout_header = header;
        self
    }

    /// The header carrying the attempt number on retries (default
    /// `x-shed-attempt`, which shed's server layer reads).
    pub fn attempt_header(mut self, header: Option<HeaderName>) -> Self {
        self.attempt_header = header;
        self
    }

    /// The counts of every call made through this layer and its clones.
    pub fn stats(&self) -> ClientStats {
        let c = &self.counters;
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ClientStats {
            attempts: read(&c.attempts),
            retries: read(&c.retries),
            budget_exhausted: read(&c.budget_exhausted),
            budget_revoked: read(&c.budget_revoked),
            throttled: read(&c.throttled),
            deadline_expired: read(&c.deadline_expired),
            retries_past_deadline: read(&c.retries_past_deadline),
        }
    }

    fn count(&self, counter: &AtomicU64, series: &'static str) {
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(series, "client" => self.name).increment(1);
    }
}

impl<S> Layer<S> for ClientLayer {
    type Service = Client<S>;

    fn layer(&self, inner: S) -> Client<S> {
        Client {
            inner,
            layer: Arc::new(self.clone()),
        }
    }
}

/// The service of [`ClientLayer`].
#[derive(Debug, Clone)]
pub struct Client<S> {
    inner: S,
    layer: Arc<ClientLayer>,
}

impl<S> Client<S> {
    /// The counts of the layer this client was built with.
    pub fn stats(&self) -> ClientStats {
        self.layer.stats()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, ResBody> Service<Request<B>> for Client<S>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + 'static,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response<ClientBody<ResBody>>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone takes the place of the service made ready above.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        // Read in the caller's task, where its deadline is set.
        let deadline = crate::deadline();
        Box::pin(Arc::clone(&self.layer).run(inner, request, deadline))
    }
}

/// How one attempt ended.
enum Answer<R> {
    /// Give this to the caller.
    Final(Result<R, BoxError>),
    /// Refused before it ran: retry after `pushback` if everything allows,
    /// else give `last` to the caller.
    Refused {
        last: Result<R, BoxError>,
        pushback: Option<Duration>,
    },
}

impl ClientLayer {
    /// The time the server may take for an attempt sent now, or `None` if
    /// the deadline leaves none.
    fn time_left(&self, deadline: Instant) -> Option<Duration> {
        deadline
            .checked_duration_since(Instant::now())
            .and_then(|left| left.checked_sub(self.margin))
            .filter(|t| *t >= Duration::from_millis(1))
    }

    async fn run<S, B, ResBody>(
        self: Arc<Self>,
        mut inner: S,
        request: Request<B>,
        deadline: Option<Instant>,
    ) -> Result<Response<ClientBody<ResBody>>, BoxError>
    where
        S: Service<Request<B>, Response = Response<ResBody>>,
        S::Error: Into<BoxError>,
        B: Clone,
        ResBody: Body<Data = Bytes>,
        ResBody::Error: Into<BoxError>,
    {
        let idempotent =
            request.method().is_idempotent() || request.extensions().get::<Idempotent>().is_some();
        let grpc = headers::is_grpc(request.headers());
        let c = &self.counters;
        let mut attempt = 1;
        // The answer of the attempt before, given to the caller if a retry
        // is not sent after all.
        let mut last = None;
        loop {
            let timeout = match deadline {
                Some(deadline) => match self.time_left(deadline) {
                    Some(left) => Some(left),
                    None => {
                        self.count(&c.deadline_expired, "shed_client_deadline_expired_total");
                        return last.unwrap_or_else(|| Err(LocalRefusal::DeadlineExpired.into()));
                    }
                },
                None => None,
            };
            if let Some(throttle) = &self.throttle
                && !throttle.admit()
            {
                self.count(&c.throttled, "shed_client_throttled_total");
                return last.unwrap_or_else(|| Err(LocalRefusal::Throttled.into()));
            }
            let mut outgoing = request.clone();
            if let Some(timeout) = timeout {
                headers::set_timeout(
                    outgoing.headers_mut(),
                    timeout,
                    self.timeout_header.as_ref(),
                    grpc,
                );
            }
            if attempt > 1 {
                headers::set_attempt(
                    outgoing.headers_mut(),
                    attempt,
                    self.attempt_header.as_ref(),
                    grpc,
                );
                // The first attempt used the readiness the caller polled.
                if let Err(e) = std::future::poll_fn(|cx| inner.poll_ready(cx)).await {
                    return Err(e.into());
                }
                self.count(&c.retries, "shed_client_retries_total");
            } else if let Some(budget) = &self.budget {
                budget.deposit();
            }
            self.count(&c.attempts, "shed_client_attempts_total");
            let result = inner.call(outgoing).await.map_err(Into::into);
            let (answer, accepted) = classify_answer(result).await;
            if let Some(throttle) = &self.throttle {
                throttle.record(true, accepted);
            }
            let (refusal, pushback) = match answer {
                Answer::Final(result) => return result,
                Answer::Refused { last, pushback } => (last, pushback),
            };
            if !idempotent || attempt >= self.max_attempts {
                return refusal;
            }
            let wait = pushback.unwrap_or(Duration::ZERO) + self.backoff.delay(attempt);
            if let Some(deadline) = deadline {
                // The retry must still leave time for the server when it goes.
                let resend = after(Instant::now(), wait);
                if resend + self.margin + Duration::from_millis(1) > deadline {
                    self.count(
                        &c.retries_past_deadline,
                        "shed_client_retries_past_deadline_total",
                    );
                    return refusal;
                }
            }
            // Granted now, so a caller the budget will not cover is told
            // at once; checked again when due (before the throttle, which
            // counts what it lets through), as the rate of first attempts
            // may have fallen since.
            let mut resend = after(Instant::now(), wait);
            let reservation = match &self.budget {
                Some(budget) => match budget.reserve(resend) {
                    // Paced: the budget may defer it (see RetryBudget).
                    Some(r) if deadline.is_none_or(|d| r.due() + self.margin < d) => {
                        resend = r.due();
                        Some(r)
                    }
                    _ => {
                        self.count(&c.budget_exhausted, "shed_client_budget_exhausted_total");
                        return refusal;
                    }
                },
                None => None,
            };
            tokio::time::sleep_until(resend).await;
            if reservation.is_some_and(|r| !r.redeem()) {
                self.count(&c.budget_exhausted, "shed_client_budget_exhausted_total");
                self.count(&c.budget_revoked, "shed_client_budget_revoked_total");
                return refusal;
            }
            last = Some(refusal);
            attempt += 1;
        }
    }
}

/// Sorts an answer into final or refused-before-running, and says whether
/// the backend accepted the call (for throttling).
async fn classify_answer<ResBody>(
    result: Result<Response<ResBody>, BoxError>,
) -> (Answer<Response<ClientBody<ResBody>>>, bool)
where
    ResBody: Body<Data = Bytes>,
    ResBody::Error: Into<BoxError>,
{
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            // Only a refused connection is known not to have run; no other
            // transport error counts as accepted either.
            return if classify::is_connection_refused(&*error) {
                let last = Err(error);
                (
                    Answer::Refused {
                        last,
                        pushback: None,
                    },
                    false,
                )
            } else {
                (Answer::Final(Err(error)), false)
            };
        }
    };
    let (parts, body) = response.into_parts();
    let accepted = !classify::is_overload_refusal(parts.status, &parts.headers);
    if classify::is_problem_503(parts.status, &parts.headers) {
        let bytes = match Limited::new(body, MAX_PROBLEM_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) => return (Answer::Final(Err(error)), accepted),
        };
        let retryable = classify::problem_is_retryable(&bytes);
        let pushback = classify::retry_after(&parts.headers);
        let last = Ok(Response::from_parts(parts, ClientBody::buffered(bytes)));
        return match retryable {
            true => (Answer::Refused { last, pushback }, accepted),
            false => (Answer::Final(last), accepted),
        };
    }
    let pushback = classify::grpc_pushback(&parts.headers);
    let last = Ok(Response::from_parts(parts, ClientBody::streaming(body)));
    match pushback {
        Pushback::After(wait) => (
            Answer::Refused {
                last,
                pushback: Some(wait),
            },
            accepted,
        ),
        Pushback::None | Pushback::DoNotRetry => (Answer::Final(last), accepted),
    }
}
