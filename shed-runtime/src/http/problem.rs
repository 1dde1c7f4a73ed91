//! A refusal as an HTTP response: `503 Service Unavailable` with a
//! jittered `Retry-After`, or `504 Gateway Timeout` for a deadline that
//! cannot be met, and an `application/problem+json` body.

use http::{header, HeaderValue, Response, StatusCode};

use crate::{FromRejected, Reason, Rejected};

/// The `type` of the problem body.
pub const PROBLEM_TYPE: &str = "urn:shed:overloaded";

/// The `type` of the problem body of a deadline that cannot be met.
pub const PROBLEM_TYPE_DEADLINE: &str = "urn:shed:deadline-unmeetable";

/// The `reason` of the problem body: `overload:<class>` when the queue was
/// full or the limiter is shedding the class, else the reason's label (`deadline`, `max_wait`, `disabled`, ...).
pub fn reason_label(rejected: &Rejected) -> String {
    match rejected.reason() {
        Reason::QueueFull | Reason::Overload => format!("overload:{}", rejected.class()),
        other => other.as_str().to_string(),
    }
}

/// `Retry-After` in whole seconds: the refusal's suggestion (already
/// jittered, at least a second) rounded to the nearest second, so that
/// suggestions spread over 1.05..1.95 s come out as `1` or `2`.
pub fn retry_after_secs(rejected: &Rejected) -> u64 {
    (rejected.retry_after().as_secs_f64().round() as u64).max(1)
}

/// The status of a refusal: `504` for a deadline shorter than the call
/// takes on an idle server (retrying with the same deadline will not
/// help), else `503`.
pub fn refusal_status(rejected: &Rejected) -> StatusCode {
    if rejected.is_unmeetable_deadline() {
        StatusCode::GATEWAY_TIMEOUT
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

/// The `application/problem+json` body of a refusal. `retryable` is
/// [`Rejected::is_retryable`]; the refused fn's `name` is included only if
/// [`Rejected::expose_names_to_clients`] was turned on.
pub fn problem_json(rejected: &Rejected) -> String {
    let unmeetable = rejected.is_unmeetable_deadline();
    let mut body = serde_json::json!({
        "type": if unmeetable { PROBLEM_TYPE_DEADLINE } else { PROBLEM_TYPE },
        "title": if unmeetable {
            "Deadline shorter than the request takes"
        } else {
            "Service temporarily overloaded"
        },
        "status": refusal_status(rejected).as_u16(),
        "reason": reason_label(rejected),
        "class": rejected.class(),
        "retryable": rejected.is_retryable(),
    });
    if Rejected::names_exposed_to_clients() {
        body["name"] = rejected.name().into();
    }
    body.to_string()
}

/// The response of a refused request: the status of [`refusal_status`],
/// the problem body, and `Retry-After` unless the deadline cannot be met
/// (no wait makes it meetable).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = shed_runtime::Limiter::builder().build().unwrap();
/// limiter.set_class_enabled("optional", false).unwrap();
/// let refused = limiter.acquire("optional", 1, "GET /recommendations").await.unwrap_err();
/// let response: http::Response<String> = shed_runtime::http::refusal_response(&refused);
/// assert_eq!(response.status(), 503);
/// assert!(response.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 20);
/// assert!(response.body().contains(r#""reason":"disabled""#));
/// assert!(response.body().contains(r#""retryable":false"#));
/// assert!(!response.body().contains("GET /recommendations"), "internal names stay inside");
/// # }
/// ```
pub fn refusal_response<B: From<String>>(rejected: &Rejected) -> Response<B> {
    let mut response = Response::new(B::from(problem_json(rejected)));
    *response.status_mut() = refusal_status(rejected);
    let headers = response.headers_mut();
    if !rejected.is_unmeetable_deadline() {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(retry_after_secs(rejected)),
        );
    }
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
