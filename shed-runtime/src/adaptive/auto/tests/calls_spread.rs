//! The calls' spread: the noise allowances it scales, and calls of two
//! lengths.

use super::*;

/// [`steady`] for 4 workers of calls of 1 ms read at 0.8 ms, after
/// windows of 64 calls whose latency's coefficient of variation was `cv`.
fn four_workers_of_spread(cv: f64) -> Auto {
    let mut auto = steady(0.0008, 3200.0, 3200.0);
    for _ in 0..16 {
        auto.next_limit(&Window {
            latency_cv: cv,
            ..window(0.9, 4.0, 64, false)
        });
    }
    auto
}

/// A probe at 3 of `auto`'s 4 slots whose 24 calls took `latency_ms` on
/// average; `auto`'s no-load latency after it, in milliseconds.
fn after_a_probe_of_24_calls(mut auto: Auto, latency_ms: f64) -> f64 {
    after_a_probe(&mut auto, 4.0, |probe| Window {
        finished: 300,
        ..window(latency_ms, probe, 24, true)
    })
}

#[test]
fn a_probe_teaches_a_lower_latency_only_beyond_the_noise_of_the_calls_spread() {
    // 24 calls read their mean within about a fifth (for calls of
    // exponential length): a probe's mean of 0.5 ms for calls read at 0.8
    // is noise, one of 0.42 ms is not.
    let exponential = four_workers_of_spread(1.0);
    assert!((after_a_probe_of_24_calls(exponential.clone(), 0.5) - 0.8).abs() < 1e-9);
    assert!((after_a_probe_of_24_calls(exponential, 0.42) - 0.42).abs() < 1e-9);
    // Calls of a heavy tail (a coefficient of variation of 1.31, σ 1
    // lognormal) read theirs within about a quarter: 0.42 ms is noise
    // too. Less spread calls keep the allowance of exponential ones.
    let heavy = four_workers_of_spread(1.31);
    assert!((after_a_probe_of_24_calls(heavy, 0.42) - 0.8).abs() < 1e-9);
    let narrow = four_workers_of_spread(0.3);
    assert!((after_a_probe_of_24_calls(narrow, 0.42) - 0.42).abs() < 1e-9);
}

#[test]
fn the_calls_spread_is_pooled_over_about_the_last_thousand_calls() {
    let spread_after = |windows: &[(f64, u64)]| {
        let mut spread = Spread::default();
        for &(cv, calls) in windows {
            spread.add(&Window {
                latency_cv: cv,
                ..window(10.0, 16.0, calls, true)
            });
        }
        spread.factor()
    };
    // Weighted by their calls: a window of 64 calls at 3 moves a thousand
    // at 1.31 by a little, not to 3.
    let heavy = spread_after(&[(1.31, 1024), (3.0, 64)]);
    assert!((1.31..1.6).contains(&heavy), "{heavy}");
    // A spread of the past fades: a few thousand calls later, the new
    // one (a thousand later, it still weighs about a third).
    let mut windows = vec![(3.0, 1024)];
    windows.extend([(1.31, 64); 16]);
    let soon = spread_after(&windows);
    assert!((1.9..2.3).contains(&soon), "{soon}");
    windows.extend([(1.31, 64); 48]);
    let later = spread_after(&windows);
    assert!((1.31..1.4).contains(&later), "{later}");
    // Never below the allowance of calls of exponential length, and a
    // window of one call has no spread to add.
    assert_eq!(spread_after(&[(0.2, 1024)]), 1.0);
    assert_eq!(spread_after(&[(5.0, 1)]), 1.0);
}

/// Calls of two lengths (a cache's hits and misses) whose cold start read
/// the hits alone keep a no-load latency of their pooled mean over the
/// headroom at least, so that the product is never below the concurrency
/// they hold at their throughput; calls of one length's noise (lognormal,
/// a spread of 1.31) keep the lowest reading.
#[test]
fn calls_of_two_lengths_keep_a_no_load_latency_near_their_mean() {
    // `fifo-64x5ms-mix` (`grid --mixed`): the cold start's 10 ms windows
    // read the hits alone, 0.8 ms, for calls of 5 ms on average.
    let read_after = |cv: f64| {
        let mut auto = steady(0.0008, 10_000.0, 10_000.0);
        for _ in 0..10 {
            auto.next_limit(&Window {
                latency_cv: cv,
                ..window(5.0, 60.0, 1_000, false)
            });
        }
        no_load_ms(&auto)
    };
    let floor = 5.0 / Auto::default().headroom;
    let two_lengths = read_after(3.7);
    assert!(
        two_lengths >= 0.99 * floor,
        "{two_lengths} ms, at least the mean over the headroom ({floor} ms)"
    );
    let one_length_noise = read_after(1.31);
    assert!(
        one_length_noise < 1.0,
        "the lowest reading kept: {one_length_noise} ms"
    );
}

/// A window of the calls `times_ms` (their mean and population spread,
/// as the limiter measures them), at a limit of 4 slots.
fn window_of(times_ms: &[f64]) -> Window {
    let n = times_ms.len() as f64;
    let mean = times_ms.iter().sum::<f64>() / n;
    let variance = times_ms.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n;
    Window {
        latency_cv: variance.sqrt() / mean,
        ..window(mean, 4.0, times_ms.len() as u64, false)
    }
}

#[test]
fn the_spread_of_the_pooled_calls_is_theirs_where_the_windows_read_less() {
    // Windows of 8 calls of a cache's hits and misses, one in five with a
    // miss: a batch of 256 calls.
    let windows: Vec<Vec<f64>> = (0..32)
        .map(|i| {
            let mut calls = vec![8.5; 8];
            if i % 5 == 0 {
                calls[0] = 424.0;
            }
            calls
        })
        .collect();
    let mut spread = Spread::default();
    for calls in &windows {
        spread.add(&window_of(calls));
    }
    let theirs = window_of(&windows.concat()).latency_cv;
    let pooled = spread.of_pooled_calls();
    assert!(theirs > 2.0, "{theirs}");
    assert!(
        (pooled - theirs).abs() < 1e-9 * theirs,
        "{pooled} for calls of spread {theirs}"
    );
    assert!(
        spread.factor() < 2.0,
        "the windows' own, pooled: {}",
        spread.factor()
    );
}

#[test]
fn a_slowdowns_windows_do_not_read_as_calls_of_two_lengths() {
    // Windows of 200 calls of exponential length, then four times slower.
    let mut spread = Spread::default();
    let mut most: f64 = 0.0;
    // The calls of every window pooled, over about the last thousand.
    let (mut calls, mut mean, mut mean_square, mut most_pooled) = (0.0, 0.0, 0.0, 0.0_f64);
    for i in 0..20 {
        let mean_ms = if i < 10 { 10.0 } else { 40.0 };
        spread.add(&window(mean_ms, 20.0, 200, true));
        most = most.max(spread.of_pooled_calls());
        let kept = f64::min(calls, 1024.0);
        mean = (mean * kept + mean_ms * 200.0) / (kept + 200.0);
        mean_square = (mean_square * kept + 2.0 * mean_ms * mean_ms * 200.0) / (kept + 200.0);
        calls = kept + 200.0;
        most_pooled = most_pooled.max((mean_square / (mean * mean) - 1.0).sqrt());
    }
    assert!(most < 1.2, "{most}");
    assert!(most_pooled > 1.4, "every window pooled: {most_pooled}");
}

#[test]
fn a_cold_start_of_calls_of_two_lengths_reads_their_spread_before_its_windows_do() {
    // `ps-64x50ms-mix` at 0.8x, seed 3 (`grid --mixed`): 64 workers, nine
    // calls in ten of 8.5 ms and one of 424. The cold start's windows of
    // 12 calls read the hits first (6.6 ms, the no-load latency 7.2 ms),
    // then the misses as a queue: the startup ended at 2 slots, and 1 to
    // 3 slots for 64 workers served 0-9% of each second for 14 s. Their
    // windows' own spreads pooled read under 2 there. The windows
    // as read with the floor: (limit, calls, elapsed ms, mean ms,
    // spread, waiters, arrived).
    let traced = [
        (2.0, 12, 43.0, 6.6, 0.9, 16, 42),
        (4.0, 12, 62.0, 13.7, 0.9, 20, 59),
        (4.0, 12, 77.0, 14.8, 1.1, 28, 86),
        (4.0, 12, 134.0, 27.5, 2.4, 28, 117),
        (2.0, 12, 873.0, 211.5, 1.8, 54, 899),
        (2.0, 12, 1000.0, 107.8, 2.4, 183, 1007),
        (2.4, 13, 124.0, 70.2, 2.7, 153, 117),
    ];
    let mut auto = Auto::default();
    for (at, calls, elapsed_ms, mean_ms, cv, waiters, arrived) in traced {
        auto.next_limit(&Window {
            latency_cv: cv,
            elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
            waiters,
            arrived,
            ..window(mean_ms, at, calls, true)
        });
    }
    // Their pooled mean over the headroom (the misses held the slots, not
    // a queue), and a product that lets the limit grow past 2 again.
    let no_load = no_load_ms(&auto);
    assert!(no_load > 40.0, "{no_load} ms");
    let product = auto.bandwidth_delay().expect("a product");
    assert!(product > 8.0, "{product} slots");
}
