//! Deadlines from the wire: `grpc-timeout` and a request-timeout header,
//! parsed defensively and capped by the server.

use std::time::Duration;

use http::{HeaderMap, HeaderName};
use tokio::time::Instant;

use super::wire;

/// Parses a `grpc-timeout` value: 1 to 8 ASCII digits and a unit, one of
/// `H M S m u n` (hours to nanoseconds). Anything else is `None`.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::http::parse_grpc_timeout;
///
/// assert_eq!(parse_grpc_timeout("100m"), Some(Duration::from_millis(100)));
/// assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
/// assert_eq!(parse_grpc_timeout("123456789n"), None); // nine digits
/// assert_eq!(parse_grpc_timeout("-1m"), None);
/// ```
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let unit = value.chars().last()?;
    let n = wire::digits(&value[..value.len() - unit.len_utf8()], 8)?;
    Some(match unit {
        'H' => Duration::from_secs(n * 3600),
        'M' => Duration::from_secs(n * 60),
        'S' => Duration::from_secs(n),
        'm' => Duration::from_millis(n),
        'u' => Duration::from_micros(n),
        'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Parses a request-timeout header: a whole number of milliseconds
/// (`250`) or a duration with a unit (`250ms`, `1.5s`). Anything else is
/// `None`.
pub fn parse_timeout(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Some(ms) = wire::digits(value, 12) {
        return Some(Duration::from_millis(ms));
    }
    if value.starts_with('-') || value.len() > 32 {
        return None;
    }
    humantime::parse_duration(value).ok()
}

/// Where a request's deadline comes from.
///
/// The deadline only ever tightens what the server allows: it is the
/// earliest of the headers present, capped at [`max`](DeadlineHeaders::max).
/// Malformed values are ignored; a zero timeout means "already expired".
#[derive(Debug, Clone)]
pub struct DeadlineHeaders {
    header: Option<HeaderName>,
    grpc: bool,
    max: Duration,
}

impl Default for DeadlineHeaders {
    /// `x-request-timeout` and `grpc-timeout`, capped at 30 seconds.
    fn default() -> Self {
        Self {
            header: Some(HeaderName::from_static("x-request-timeout")),
            grpc: true,
            max: Duration::from_secs(30),
        }
    }
}

impl DeadlineHeaders {
    /// Reads the timeout from `header` instead of `x-request-timeout`
    /// (`None`: no HTTP header).
    pub fn header(mut self, header: Option<HeaderName>) -> Self {
        self.header = header;
        self
    }

    /// Whether `grpc-timeout` is read (default: yes).
    pub fn grpc(mut self, grpc: bool) -> Self {
        self.grpc = grpc;
        self
    }

    /// The longest deadline a request can ask for (default 30 s). Requests
    /// without a timeout header are answered within it too, but carry no
    /// deadline into the handler, so nested `#[shed]` calls keep their
    /// fast path.
    pub fn max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// The longest deadline a request can ask for.
    pub fn cap(&self) -> Duration {
        self.max
    }

    /// The timeout the client asked for, capped at the maximum; `None`
    /// when it sent no (well-formed) timeout header.
    pub fn requested(&self, headers: &HeaderMap) -> Option<Duration> {
        let from_header = self
            .header
            .as_ref()
            .and_then(|name| wire::text(headers, name))
            .and_then(parse_timeout);
        let from_grpc = self
            .grpc
            .then(|| wire::text(headers, "grpc-timeout"))
            .flatten()
            .and_then(parse_grpc_timeout);
        [from_header, from_grpc]
            .into_iter()
            .flatten()
            .min()
            .map(|t| t.min(self.max))
    }

    /// The timeout a request has: the one it asked for, else the maximum.
    pub fn timeout(&self, headers: &HeaderMap) -> Duration {
        self.requested(headers).unwrap_or(self.max)
    }

    /// The deadline of a request arriving now.
    pub fn deadline(&self, headers: &HeaderMap) -> Instant {
        crate::deadline::after(Instant::now(), self.timeout(headers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_follow_the_spec() {
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout("250u"), Some(Duration::from_micros(250)));
        assert_eq!(
            parse_grpc_timeout("99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        for bad in ["", "m", "10", "10x", "1.5S", " 1S", "1S ", "１S", "+1S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn timeout_headers_accept_milliseconds_or_units() {
        assert_eq!(parse_timeout("250"), Some(Duration::from_millis(250)));
        assert_eq!(parse_timeout("1.5s"), Some(Duration::from_millis(1500)));
        for bad in ["", "-5", "soon", "99999999999999999999999", "5 parsecs"] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_tightest_header_wins_and_the_server_caps_it() {
        let policy = DeadlineHeaders::default().max(Duration::from_secs(5));
        let mut headers = HeaderMap::new();
        assert_eq!(
            policy.timeout(&headers),
            Duration::from_secs(5),
            "no header: the cap"
        );
        headers.insert("x-request-timeout", "800".parse().unwrap());
        headers.insert("grpc-timeout", "300m".parse().unwrap());
        assert_eq!(policy.timeout(&headers), Duration::from_millis(300));
        headers.insert("grpc-timeout", "99999999H".parse().unwrap());
        assert_eq!(
            policy.timeout(&headers),
            Duration::from_millis(800),
            "absurd values are capped"
        );
        headers.insert("x-request-timeout", "garbage".parse().unwrap());
        assert_eq!(
            policy.timeout(&headers),
            Duration::from_secs(5),
            "malformed values are ignored"
        );
    }
}
