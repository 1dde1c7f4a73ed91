//! Reading header values defensively, the one way the server's deadline
//! and attempt headers and the client's `Retry-After` all need: text only,
//! and numbers only as short runs of ASCII digits (no sign, no blanks, no
//! overflow).

use http::header::AsHeaderName;
use http::HeaderMap;

/// The value of `name` as text, if present and visible ASCII.
pub(crate) fn text(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name)?.to_str().ok()
}

/// `value` as a number, if it is 1 to `max_digits` ASCII digits and
/// nothing else: the bound keeps the number far from overflowing.
pub(crate) fn digits(value: &str, max_digits: usize) -> Option<u64> {
    if value.is_empty() || value.len() > max_digits || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// A header map of `pairs`, for tests.
#[cfg(test)]
pub(crate) fn header_map(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_runs_of_digits_only() {
        assert_eq!(digits("042", 3), Some(42));
        for bad in ["", "1234", "-1", "+1", " 1", "1 ", "1.0", "１"] {
            assert_eq!(digits(bad, 3), None, "{bad:?}");
        }
        let headers = header_map(&[("x-n", "7")]);
        assert_eq!(text(&headers, "x-n").and_then(|v| digits(v, 9)), Some(7));
        assert_eq!(text(&headers, "x-missing"), None);
    }
}
