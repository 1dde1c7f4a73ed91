//! `Auto`'s rules, one window at a time: the windows and services the
//! tests share here, the tests by the rules they pin in the modules.

use tokio::time::Instant;

use super::*;

mod calls_spread;
mod one_length;
mod queues_and_probes;
mod slowdowns;
mod startup;

/// A window of `admitted` calls of `latency_ms` at `limit`, completed
/// in 100 ms, spread as calls of exponential length; `binds`: calls
/// waited for slots, and the limit was full.
pub(super) fn window(latency_ms: f64, limit: f64, admitted: u64, binds: bool) -> Window {
    Window {
        completed: admitted,
        avg_latency: Duration::from_secs_f64(latency_ms / 1000.0),
        min_latency: Duration::ZERO,
        latency_cv: 1.0,
        max_in_flight: if binds { limit as u64 } else { 0 },
        cohort_completed: 0,
        cohort_avg_latency: Duration::ZERO,
        late: 0,
        limit,
        probe: false,
        finished: admitted,
        elapsed: Duration::from_millis(100),
        waiting: binds,
        waiters: 0,
        // A binding window's load outran its limit: as many calls came to
        // wait as finished (see `load_outran_limit`).
        arrived: if binds { admitted } else { 0 },
        at: Instant::now(),
    }
}

/// A window recorded from a trace: `calls` finished and measured over
/// `elapsed_ms`, with their mean and shortest latency, at `limit` while
/// calls waited for slots.
fn recorded(
    (limit, calls, elapsed_ms, latency_ms, shortest_ms): (f64, u64, f64, f64, f64),
) -> Window {
    Window {
        elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
        min_latency: Duration::from_secs_f64(shortest_ms / 1000.0),
        ..window(latency_ms, limit, calls, true)
    }
}

/// Replays recorded windows (see [`recorded`]) on `auto`; the limits it
/// chose.
fn replay(auto: &mut Auto, windows: &[(f64, u64, f64, f64, f64)]) -> Vec<f64> {
    windows
        .iter()
        .map(|&row| auto.next_limit(&recorded(row)))
        .collect()
}

/// The no-load latency `auto` learned, in milliseconds.
fn no_load_ms(auto: &Auto) -> f64 {
    auto.no_load_latency()
        .expect("a no-load latency")
        .as_secs_f64()
        * 1000.0
}

/// A pool of `workers` serving calls of 10 ms, at `limit`, overloaded.
fn pool(workers: f64, limit: f64) -> Window {
    let throughput = limit.min(workers) / 0.010; // per second
    let latency = 10.0 * (limit / workers).max(1.0);
    window(latency, limit, (throughput * 0.1) as u64, true)
}

/// Runs `windows` windows of `service` (the pool at a limit), with
/// the probes the algorithm asks for; returns the limits.
fn drive(
    auto: &mut Auto,
    mut limit: f64,
    windows: usize,
    service: impl Fn(f64) -> Window,
) -> Vec<f64> {
    let mut limits = Vec::new();
    for _ in 0..windows {
        let probing = auto.probe_limit(limit);
        let at = probing.unwrap_or(limit);
        let next = auto.next_limit(&Window {
            probe: probing.is_some(),
            ..service(at)
        });
        limit = next;
        limits.push(limit);
    }
    limits
}

/// Window `w` under a load above its limit: calls wait at its close,
/// three times as many came to wait as finished.
fn overloaded(w: Window) -> Window {
    Window {
        waiting: true,
        arrived: 3 * w.finished,
        ..w
    }
}

/// Window `w` overloaded (see [`overloaded`]), of calls as spread as
/// lognormal ones (a coefficient of variation of 1.5).
fn spread(w: Window) -> Window {
    Window {
        latency_cv: 1.5,
        ..overloaded(w)
    }
}

/// Past its startup, with a no-load latency of `no_load` seconds, a usual
/// throughput of `usual` calls a second and a best recent one of `best`.
fn steady(no_load: f64, usual: f64, best: f64) -> Auto {
    let mut auto = Auto {
        startup: false,
        no_load: Some(no_load),
        ..Auto::default()
    };
    auto.binding_rate.reset(Some(usual));
    auto.rates.all.push(best);
    auto
}

/// A FIFO pool of `workers` serving calls of exactly `service_ms`, at
/// `limit`, overloaded, over a window as long as `AutoControl` makes it
/// once settled: two round trips, 100 ms at least.
fn one_length_at(service_ms: f64, workers: f64, limit: f64) -> Window {
    let throughput = limit.min(workers) / (service_ms / 1000.0);
    let latency = service_ms * (limit / workers).max(1.0);
    let elapsed = (2.0 * latency / 1000.0).max(0.1);
    Window {
        min_latency: Duration::from_secs_f64(service_ms / 1000.0),
        elapsed: Duration::from_secs_f64(elapsed),
        ..window(latency, limit, (throughput * elapsed) as u64, true)
    }
}

/// A FIFO pool of `workers` serving calls of exactly 20 ms, at `limit`,
/// overloaded: past the workers, calls wait inside the pool.
fn pool_of_one_length(workers: f64, limit: f64) -> Window {
    one_length_at(20.0, workers, limit)
}

/// 4 workers of 1 ms at 0.8 load behind `limit` slots: bursts reach the
/// limit now and then, the service queues half a call on average, and no
/// call waits for a slot when the window closes.
fn below_capacity(limit: f64) -> Window {
    Window {
        max_in_flight: limit as u64,
        waiting: false,
        waiters: 0,
        ..window(1.75, limit, 320, true)
    }
}

/// The cold start of seed 19 of `fifo-1000x200ms` at 3x, up to its end:
/// the first window's 14 calls came in 0.69 s, twice the rate of 2 slots
/// of 200 ms calls, and the windows at 4 slots then read as stalled.
const A_LUCKY_FIRST_WINDOW: [(f64, u64, f64, f64, f64); 4] = [
    (2.0, 14, 693.0, 93.5, 4.0),
    (4.0, 12, 677.0, 217.4, 7.0),
    (4.0, 12, 632.0, 154.8, 35.0),
    (4.0, 12, 584.0, 233.6, 23.0),
];

/// Runs a periodic probe of `auto` at its limit `limit`, the probe's
/// window `at(probe limit)`; `auto`'s no-load latency after it, in
/// milliseconds.
fn after_a_probe(auto: &mut Auto, limit: f64, at: impl FnOnce(f64) -> Window) -> f64 {
    auto.since_probe = auto.probe_every;
    let probe = auto.probe_limit(limit).expect("a periodic probe");
    auto.next_limit(&Window {
        probe: true,
        ..at(probe)
    });
    no_load_ms(auto)
}

/// A window of `calls` calls of one length of `latency_ms` each in
/// `elapsed_ms`, at `limit` slots, all of them in flight, while calls
/// waited for slots.
fn recorded_of_one_length(limit: f64, latency_ms: f64, calls: u64, elapsed_ms: f64) -> Window {
    Window {
        latency_cv: 0.0,
        min_latency: Duration::from_secs_f64(latency_ms / 1000.0),
        max_in_flight: limit.round() as u64,
        elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
        ..window(latency_ms, limit, calls, true)
    }
}

/// `auto` once its cold start read calls of one length, the lowest mean
/// of a window of them `floor` seconds, and `unqueued` of them seen
/// running at once without a queue.
fn of_one_length(mut auto: Auto, floor: f64, unqueued: u64) -> Auto {
    auto.one_length_votes = (4, 0);
    auto.one_length_floor = floor;
    auto.unqueued_in_flight = unqueued;
    auto
}
