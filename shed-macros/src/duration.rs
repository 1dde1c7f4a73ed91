//! Durations written in the attribute, parsed at compile time.

use std::time::Duration;

/// The longest queue-wait budget the attribute accepts. Waiting longer than
/// this for a slot is never load shedding, and a typo (`"5m"` for `"5ms"`)
/// is far likelier.
pub(crate) const MAX: Duration = Duration::from_secs(3600);

/// Parses `"500us"`, `"5ms"`, `"1.5s"` and the like.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    const EXAMPLES: &str = "write it like \"500us\", \"5ms\" or \"1.5s\"";
    if trimmed.is_empty() {
        return Err(format!("empty duration: {EXAMPLES}"));
    }
    if trimmed.starts_with('-') {
        return Err(format!(
            "a duration cannot be negative: {EXAMPLES} (use \"0ms\" to refuse instead of waiting)"
        ));
    }
    let duration = humantime::parse_duration(trimmed)
        .map_err(|e| format!("`{trimmed}` is not a duration ({e}): {EXAMPLES}"))?;
    if duration > MAX {
        return Err(format!(
            "`{trimmed}` is out of range: a max_wait must be at most 1h; {EXAMPLES}"
        ));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!(parse("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse("5ms"), Ok(Duration::from_millis(5)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0ms"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_nonsense_with_a_fix() {
        for bad in ["5 parsecs", "-1ms", "2months", "", "3"] {
            let message = parse(bad).unwrap_err();
            assert!(message.contains("\"5ms\""), "{bad}: {message}");
        }
    }
}
