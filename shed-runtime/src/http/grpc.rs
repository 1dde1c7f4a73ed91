//! A refusal as a gRPC answer, for gRPC calls that the server layer
//! refuses before the service sees them: gRPC clients read the status from
//! `grpc-status`, not from the HTTP status, and the retry pushback from
//! `grpc-retry-pushback-ms`, not from `Retry-After`.

use http::{header, HeaderMap, HeaderValue, Response};

use crate::Rejected;

/// `UNAVAILABLE` and `DEADLINE_EXCEEDED`, as `grpc-status` carries them.
const UNAVAILABLE: &str = "14";
const DEADLINE_EXCEEDED: &str = "4";

/// Whether a request is a gRPC call (`content-type: application/grpc...`).
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// The trailers-only answer of a refused gRPC call: HTTP `200`, no body,
/// and the status the `tonic` integration gives a refusal — `UNAVAILABLE`
/// with `grpc-retry-pushback-ms` (negative: do not retry), or
/// `DEADLINE_EXCEEDED` without one for a deadline that cannot be met.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = shed_runtime::Limiter::builder().build().unwrap();
/// limiter.set_class_enabled("optional", false).unwrap();
/// let refused = limiter.acquire("optional", 1, "/orders.Orders/Get").await.unwrap_err();
/// let response: http::Response<String> = shed_runtime::http::grpc_refusal_response(&refused);
/// assert_eq!(response.status(), 200);
/// assert_eq!(response.headers()["grpc-status"], "14");
/// assert_eq!(response.headers()["grpc-retry-pushback-ms"], "-1"); // switched off: do not retry
/// assert!(response.body().is_empty());
/// # }
/// ```
pub fn grpc_refusal_response<B: From<String>>(rejected: &Rejected) -> Response<B> {
    let mut response = Response::new(B::from(String::new()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    if rejected.is_unmeetable_deadline() {
        headers.insert("grpc-status", HeaderValue::from_static(DEADLINE_EXCEEDED));
    } else {
        headers.insert("grpc-status", HeaderValue::from_static(UNAVAILABLE));
        let pushback = if rejected.is_retryable() {
            i64::try_from(rejected.retry_after().as_millis()).unwrap_or(i64::MAX)
        } else {
            -1
        };
        headers.insert("grpc-retry-pushback-ms", HeaderValue::from(pushback));
    }
    if let Ok(message) = HeaderValue::try_from(percent_encode(&rejected.client_message())) {
        headers.insert("grpc-message", message);
    }
    response
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`,
/// as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for byte in message.bytes() {
        if (0x20..=0x7e).contains(&byte) && byte != b'%' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(percent_encode("refused: 100% full"), "refused: 100%25 full");
        assert_eq!(percent_encode("é\n"), "%C3%A9%0A");
    }

    #[test]
    fn grpc_calls_are_told_by_their_content_type() {
        let mut headers = HeaderMap::new();
        assert!(!is_grpc(&headers));
        headers.insert(
            header::CONTENT_TYPE,
            "application/grpc+proto".parse().unwrap(),
        );
        assert!(is_grpc(&headers));
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(!is_grpc(&headers));
    }
}
