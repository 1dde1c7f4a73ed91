//! What an answer says about retrying: was the call refused before it ran,
//! and when may it come back.

use std::error::Error;
use std::time::{Duration, SystemTime};

use http::{header, HeaderMap, StatusCode};

use crate::http::wire;

/// The gRPC status of a trailers-only answer (a refusal has no body).
const GRPC_STATUS: &str = "grpc-status";
const GRPC_UNAVAILABLE: &str = "14";
const GRPC_RESOURCE_EXHAUSTED: &str = "8";
/// The pushback a gRPC server sends with a refusal (gRPC A6).
pub(crate) const GRPC_PUSHBACK: &str = "grpc-retry-pushback-ms";

/// Whether the backend refused the call for overload or quota, retryable
/// or not: such answers are not "accepted" for adaptive throttling.
pub(crate) fn is_overload_refusal(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE
        || status == StatusCode::TOO_MANY_REQUESTS
        || headers
            .get(GRPC_STATUS)
            .is_some_and(|s| s == GRPC_UNAVAILABLE || s == GRPC_RESOURCE_EXHAUSTED)
}

/// A `503` whose body may say it was refused before running: its problem
/// body is read to find out.
pub(crate) fn is_problem_503(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE
        && headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/problem+json"))
}

/// Whether a problem body says `"retryable": true` (shed's refusals do).
pub(crate) fn problem_is_retryable(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|problem| problem.get("retryable") == Some(&serde_json::Value::Bool(true)))
}

/// `Retry-After` as a delay from now: whole seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = wire::text(headers, header::RETRY_AFTER)?.trim();
    if let Some(seconds) = wire::digits(value, 10) {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// What a gRPC refusal says about retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushback {
    /// No `UNAVAILABLE` with a pushback: not a refusal to retry.
    None,
    /// Retry after this long.
    After(Duration),
    /// A negative or malformed pushback: the server asks not to retry.
    DoNotRetry,
}

/// The pushback of a trailers-only gRPC `UNAVAILABLE` answer.
pub(crate) fn grpc_pushback(headers: &HeaderMap) -> Pushback {
    if headers
        .get(GRPC_STATUS)
        .is_none_or(|s| s != GRPC_UNAVAILABLE)
    {
        return Pushback::None;
    }
    let Some(value) = headers.get(GRPC_PUSHBACK) else {
        return Pushback::None;
    };
    match value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        Some(ms) if ms >= 0 => Pushback::After(Duration::from_millis(ms as u64)),
        _ => Pushback::DoNotRetry,
    }
}

/// Whether an error, or any error it wraps, is a refused TCP connection:
/// nothing was sent, so retrying is safe.
pub(crate) fn is_connection_refused(error: &(dyn Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        current = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http::wire::header_map as headers;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(61));
        let delay = retry_after(&headers(&[("retry-after", &in_a_minute)])).unwrap();
        assert!(delay > Duration::from_secs(55) && delay <= Duration::from_secs(61));
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(61));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        for bad in ["soon", "-1", "1.5", ""] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", bad)])),
                None,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn grpc_pushback_follows_a6() {
        let unavailable = |pushback: &str| {
            grpc_pushback(&headers(&[
                ("grpc-status", "14"),
                ("grpc-retry-pushback-ms", pushback),
            ]))
        };
        assert_eq!(
            unavailable("250"),
            Pushback::After(Duration::from_millis(250))
        );
        assert_eq!(unavailable("0"), Pushback::After(Duration::ZERO));
        assert_eq!(unavailable("-1"), Pushback::DoNotRetry);
        assert_eq!(unavailable("later"), Pushback::DoNotRetry);
        assert_eq!(
            grpc_pushback(&headers(&[("grpc-status", "14")])),
            Pushback::None
        );
        assert_eq!(
            grpc_pushback(&headers(&[
                ("grpc-status", "2"),
                ("grpc-retry-pushback-ms", "5")
            ])),
            Pushback::None,
            "only UNAVAILABLE is a refusal"
        );
    }

    #[test]
    fn only_retryable_problem_bodies_count() {
        assert!(problem_is_retryable(
            br#"{"type":"urn:shed:overloaded","retryable":true}"#
        ));
        assert!(!problem_is_retryable(br#"{"retryable":false}"#));
        assert!(!problem_is_retryable(br#"{"retryable":"yes"}"#));
        assert!(!problem_is_retryable(b"<html>busy</html>"));
        let problem = headers(&[("content-type", "application/problem+json")]);
        assert!(is_problem_503(StatusCode::SERVICE_UNAVAILABLE, &problem));
        assert!(!is_problem_503(StatusCode::INTERNAL_SERVER_ERROR, &problem));
        assert!(!is_problem_503(
            StatusCode::SERVICE_UNAVAILABLE,
            &HeaderMap::new()
        ));
    }

    #[test]
    fn refused_connections_are_found_in_the_error_chain() {
        #[derive(Debug, thiserror::Error)]
        #[error("connect failed")]
        struct Wrapper(#[source] std::io::Error);
        let refused = Wrapper(std::io::ErrorKind::ConnectionRefused.into());
        assert!(is_connection_refused(&refused));
        let reset = Wrapper(std::io::ErrorKind::ConnectionReset.into());
        assert!(!is_connection_refused(&reset), "a reset call may have run");
    }
}
