//! A refusal as an HTTP response: `503 Service Unavailable`, `Retry-After`
//! with jitter, and an `application/problem+json` body.

use http::{header, HeaderValue, Response, StatusCode};

use crate::{FromRejected, Reason, Rejected};

/// The `type` of the problem body.
pub const PROBLEM_TYPE: &str = "urn:shed:overloaded";

/// The `reason` of the problem body: `overload:<class>` when the queue was
/// full or the limiter is shedding the class, else the reason's label (`deadline`, `max_wait`, `disabled`, ...).
pub fn reason_label(rejected: &Rejected) -> String {
    match rejected.reason() {
        Reason::QueueFull | Reason::Overload => format!("overload:{}", rejected.class()),
        other => other.as_str().to_string(),
    }
}

/// `Retry-After` in whole seconds: the refusal's suggestion rounded up,
/// plus up to 50% of random jitter so that refused clients do not all come
/// back in the same second.
pub fn retry_after_secs(rejected: &Rejected) -> u64 {
    let base = rejected.retry_after().as_secs_f64().ceil().max(1.0) as u64;
    base + fastrand::u64(0..=base / 2)
}

/// The `application/problem+json` body of a refusal.
pub fn problem_json(rejected: &Rejected) -> String {
    serde_json::json!({
        "type": PROBLEM_TYPE,
        "title": "Service temporarily overloaded",
        "status": 503,
        "reason": reason_label(rejected),
        "class": rejected.class(),
        "retryable": true,
    })
    .to_string()
}

/// The response of a refused request.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = shed_runtime::Limiter::builder().build().unwrap();
/// limiter.set_class_enabled("optional", false).unwrap();
/// let refused = limiter.acquire("optional", 1, "GET /recommendations").await.unwrap_err();
/// let response: http::Response<String> = shed_runtime::http::refusal_response(&refused);
/// assert_eq!(response.status(), 503);
/// assert!(response.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 5);
/// assert!(response.body().contains(r#""reason":"disabled""#));
/// # }
/// ```
pub fn refusal_response<B: From<String>>(rejected: &Rejected) -> Response<B> {
    let mut response = Response::new(B::from(problem_json(rejected)));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from(retry_after_secs(rejected)),
    );
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}

/// A handler returning an HTTP response refuses with [`refusal_response`].
impl<B: From<String>> FromRejected for Response<B> {
    fn from_rejected(rejected: Rejected) -> Self {
        refusal_response(&rejected)
    }
}
