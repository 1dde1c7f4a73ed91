//! What the layer writes on outgoing requests: the time left to the
//! caller's deadline and, on retries, the attempt number.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// The largest number `grpc-timeout` carries: eight digits.
const GRPC_MAX: u128 = 99_999_999;

/// A `grpc-timeout` value: the finest unit whose count fits in eight
/// digits, rounded down so the server is never promised more time than
/// is left.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::client::grpc_timeout;
/// use shed_runtime::http::parse_grpc_timeout;
///
/// assert_eq!(grpc_timeout(Duration::from_millis(250)), "250000u");
/// assert_eq!(grpc_timeout(Duration::from_secs(500)), "500000m");
/// let long = Duration::from_secs(30 * 24 * 3600);
/// assert_eq!(parse_grpc_timeout(&grpc_timeout(long)), Some(long));
/// ```
pub fn grpc_timeout(timeout: Duration) -> String {
    // Microseconds are as fine as any deadline needs.
    let units: [(u128, char); 5] = [
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = timeout.as_nanos();
    for (per, unit) in units {
        if nanos / per <= GRPC_MAX {
            return format!("{}{unit}", nanos / per);
        }
    }
    format!("{GRPC_MAX}H")
}

/// Whether a request is a gRPC call (`content-type: application/grpc...`).
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// Writes the time left: the request-timeout header in whole milliseconds
/// (rounded down), and `grpc-timeout` on gRPC calls. A value the caller
/// already set is kept if it is tighter.
pub(crate) fn set_timeout(
    headers: &mut HeaderMap,
    timeout: Duration,
    header: Option<&HeaderName>,
    grpc: bool,
) {
    if let Some(name) = header {
        let existing = headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(crate::http::parse_timeout);
        if existing.is_none_or(|t| t > timeout) {
            headers.insert(name.clone(), HeaderValue::from(timeout.as_millis() as u64));
        }
    }
    if grpc {
        let existing = headers
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::http::parse_grpc_timeout);
        if existing.is_none_or(|t| t > timeout)
            && let Ok(value) = HeaderValue::from_str(&grpc_timeout(timeout))
        {
            headers.insert("grpc-timeout", value);
        }
    }
}

/// Marks attempt `attempt` (2 = the first retry): `header` carries the
/// attempt number, and gRPC calls also get `grpc-previous-rpc-attempts`
/// (the attempts before this one), as gRPC's own retries send it.
pub(crate) fn set_attempt(
    headers: &mut HeaderMap,
    attempt: u32,
    header: Option<&HeaderName>,
    grpc: bool,
) {
    if let Some(name) = header {
        headers.insert(name.clone(), HeaderValue::from(attempt));
    }
    if grpc {
        headers.insert(
            "grpc-previous-rpc-attempts",
            HeaderValue::from(attempt.saturating_sub(1)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{parse_grpc_timeout, parse_timeout};

    #[test]
    fn grpc_timeouts_round_down_and_parse_back() {
        for timeout in [
            Duration::from_nanos(1_500),
            Duration::from_millis(99_999),
            Duration::from_millis(100_000),
            Duration::from_secs(99_999_999),
            Duration::from_secs(100_000_000 * 60),
        ] {
            let parsed = parse_grpc_timeout(&grpc_timeout(timeout)).unwrap();
            assert!(parsed <= timeout, "{timeout:?} sent as {parsed:?}");
            assert!(
                timeout - parsed < timeout / 1_000 + Duration::from_micros(1),
                "{timeout:?} sent as {parsed:?}"
            );
        }
        assert_eq!(grpc_timeout(Duration::MAX), "99999999H");
    }

    #[test]
    fn a_tighter_timeout_the_caller_set_is_kept() {
        let name = HeaderName::from_static("x-request-timeout");
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        set_timeout(&mut headers, Duration::from_millis(800), Some(&name), true);
        assert_eq!(headers["x-request-timeout"], "800");
        assert_eq!(
            parse_grpc_timeout(headers["grpc-timeout"].to_str().unwrap()),
            Some(Duration::from_millis(800))
        );
        headers.insert("x-request-timeout", "100".parse().unwrap());
        set_timeout(&mut headers, Duration::from_millis(500), Some(&name), true);
        assert_eq!(
            parse_timeout(headers["x-request-timeout"].to_str().unwrap()),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            parse_grpc_timeout(headers["grpc-timeout"].to_str().unwrap()),
            Some(Duration::from_millis(500))
        );
    }
}
