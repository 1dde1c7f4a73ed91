//! How long a refused caller is told to wait: the time the backlog takes
//! to drain, spread at random so that refused clients do not all come back
//! at the same moment and refill the queue they were refused from.

use std::time::Duration;

/// The least a caller is told to wait once jittered: HTTP's `Retry-After`
/// counts whole seconds.
pub(crate) const MIN: Duration = Duration::from_secs(1);

/// The drain time below which the suggestion does not go before jitter.
/// With the jitter below, suggestions at this floor spread over
/// 1.05..1.95 s, which whole-second `Retry-After` values (rounded to the
/// nearest) turn into a mix of `1` and `2`.
const FLOOR: Duration = Duration::from_millis(1500);

/// The longest drain time suggested before jitter.
const CEILING: Duration = Duration::from_secs(30);

/// The jitter: the suggestion is multiplied by a factor drawn uniformly in
/// `1 ± SPREAD`.
pub(crate) const SPREAD: f64 = 0.3;

/// What a caller refused for a reason that will not change soon (a class
/// switched off, a call too heavy for the capacity) is told, before jitter.
const NOT_SOON: Duration = Duration::from_secs(30);

/// The suggestion for a caller refused because of the load.
///
/// `backlog` is the weight ahead of a new call (queued plus in flight),
/// `throughput` the weight the limiter completes per second, and `draw` a
/// uniform random number in `[0, 1)`. The drain time, `backlog /
/// throughput`, is kept within 1.5..30 s, then multiplied by a factor in
/// `0.7..1.3`, and rounded to whole milliseconds.
pub(crate) fn from_backlog(backlog: u64, throughput: f64, draw: f64) -> Duration {
    let drain = if throughput > 0.0 && throughput.is_finite() {
        Duration::try_from_secs_f64(backlog as f64 / throughput).unwrap_or(CEILING)
    } else {
        CEILING
    };
    jitter(drain.clamp(FLOOR, CEILING), draw)
}

/// The suggestion for a caller refused for a reason the load does not
/// change.
pub(crate) fn not_soon(draw: f64) -> Duration {
    jitter(NOT_SOON, draw)
}

fn jitter(base: Duration, draw: f64) -> Duration {
    let factor = 1.0 - SPREAD + 2.0 * SPREAD * draw.clamp(0.0, 1.0);
    let millis = (base.as_secs_f64() * factor * 1000.0).round() as u64;
    Duration::from_millis(millis).max(MIN)
}

/// The weight a limiter of `capacity` slots completes per second when each
/// call holds its slots for `service` (Little's law).
pub(crate) fn throughput(capacity: u64, service: Duration) -> f64 {
    capacity.max(1) as f64 / service.as_secs_f64().max(1e-3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(n: u32) -> impl Iterator<Item = f64> {
        (0..n).map(move |i| f64::from(i) / f64::from(n))
    }

    #[test]
    fn the_suggestion_is_the_drain_time_of_the_backlog() {
        // 40 slots of backlog at 4 slots per second: 10 s.
        let middle = from_backlog(40, 4.0, 0.5);
        assert_eq!(middle, Duration::from_secs(10));
        assert_eq!(
            from_backlog(80, 4.0, 0.5),
            Duration::from_secs(20),
            "twice the backlog, twice the wait"
        );
        assert_eq!(from_backlog(10_000, 4.0, 0.5), CEILING, "capped");
        assert_eq!(from_backlog(0, 4.0, 0.5), FLOOR, "never below the floor");
        assert_eq!(from_backlog(5, 0.0, 0.5), CEILING, "no throughput: the cap");
    }

    #[test]
    fn refusals_at_the_same_backlog_spread_at_least_20_percent_either_way() {
        for (backlog, throughput) in [(0, 100.0), (40, 4.0), (1_000_000, 1.0)] {
            let all: Vec<f64> = draws(1000)
                .map(|d| from_backlog(backlog, throughput, d).as_secs_f64())
                .collect();
            let mean = all.iter().sum::<f64>() / all.len() as f64;
            let (min, max) = all
                .iter()
                .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            assert!(min <= 0.8 * mean && max >= 1.2 * mean, "{min} {mean} {max}");
            assert!(min >= MIN.as_secs_f64(), "at least a second: {min}");
        }
    }

    #[test]
    fn whole_seconds_at_the_floor_are_not_all_the_same() {
        let seconds: Vec<u64> = draws(100)
            .map(|d| (from_backlog(0, 100.0, d).as_secs_f64().round() as u64).max(1))
            .collect();
        let ones = seconds.iter().filter(|&&s| s == 1).count();
        let twos = seconds.iter().filter(|&&s| s == 2).count();
        assert_eq!(ones + twos, 100);
        assert!((40..=60).contains(&ones), "{ones} ones, {twos} twos");
    }

    #[test]
    fn throughput_follows_littles_law() {
        assert!((throughput(16, Duration::from_millis(20)) - 800.0).abs() < 1e-9);
        assert!(throughput(0, Duration::ZERO).is_finite());
    }
}
