//! What changes under the workers' feet (capacity, classes, mode), on a
//! thread of its own so that changes come every few hundred microseconds
//! whatever the runtime's timer granularity; and the watch for stalls.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fastrand::Rng;
use shed_runtime::Mode;
use tokio::runtime::Handle;

use super::workload::{Shared, CLASSES};

/// What the controller changes during a run.
#[derive(Debug, Clone, Copy)]
pub struct Churn {
    /// A new capacity from 1 to the maximum, every few hundred microseconds.
    pub capacity: bool,
    /// Classes switched off and on.
    pub toggles: bool,
    /// Enforce, observe and off.
    pub modes: bool,
    /// `background` off for this long, then on for a tenth of it, over
    /// and over (with the other churn).
    pub long_offs: Option<Duration>,
    /// Instead of the above: the full capacity for a moment (heavy calls
    /// get in or queue), then a low one held for this long.
    pub low_holds: Option<Duration>,
    /// A warm-up ramp begun (or restarted) every 70 ms or so, which
    /// pauses the adaptive default and hands it back at its end.
    pub warm_ups: bool,
}

impl Churn {
    pub const NONE: Churn = Churn {
        capacity: false,
        toggles: false,
        modes: false,
        long_offs: None,
        low_holds: None,
        warm_ups: false,
    };
    pub const ALL: Churn = Churn {
        capacity: true,
        toggles: true,
        modes: true,
        long_offs: None,
        low_holds: None,
        warm_ups: false,
    };
}

/// Changes the limiter until the run stops.
pub fn control(shared: &Shared, churn: Churn, mut rng: Rng, runtime: &Handle) {
    let limiter = &shared.limiter;
    let max = shared.max_weight;
    while !shared.stop.load(Ordering::Relaxed) {
        if let Some(hold) = churn.low_holds {
            limiter.set_capacity(max);
            thread::sleep(Duration::from_millis(10));
            // A full-capacity call of the top class with a budget longer
            // than the run, queued (the workers hold slots) just before
            // the capacity falls below its weight.
            let heavy = shared.policy("critical", max, true);
            let waiting = runtime.spawn(limiter.scope(async move {
                drop(shed_runtime::Limiter::current().acquire_as(heavy).await)
            }));
            shared.spawned.lock().unwrap().push(waiting);
            thread::sleep(Duration::from_millis(1));
            limiter.set_capacity(rng.u32(1..=max.div_ceil(8)));
            sleep_unless_stopped(shared, hold);
            continue;
        }
        thread::sleep(Duration::from_micros(rng.u64(100..=600)));
        if let Some(off) = churn.long_offs {
            let last = shared.switches.read("background");
            let held = shared.switches.now_us() - last.changed_us;
            let due = if last.on { off / 10 } else { off };
            if u128::from(held) >= due.as_micros() {
                shared.switches.switch(limiter, "background", !last.on);
            }
        }
        match rng.u8(0..10) {
            0..=4 if churn.capacity => limiter.set_capacity(rng.u32(1..=max)),
            5..=6 if churn.toggles => {
                // Off a third as often as on, so classes are mostly on.
                let class = CLASSES[rng.usize(..CLASSES.len())];
                let on = !limiter.class_enabled(class).unwrap() || rng.u8(0..3) != 0;
                shared.switches.switch(limiter, class, on);
            }
            7 if churn.modes => limiter.set_mode(match rng.u8(0..10) {
                0..=5 => Mode::Enforce,
                6..=8 => Mode::Observe,
                _ => Mode::Off,
            }),
            8 if churn.warm_ups && rng.u8(0..20) == 0 => {
                let _runtime = runtime.enter();
                assert!(limiter.begin_warm_up(), "a warm-up is configured");
            }
            _ => {}
        }
    }
}

fn sleep_unless_stopped(shared: &Shared, total: Duration) {
    let until = Instant::now() + total;
    while !shared.stop.load(Ordering::Relaxed) && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
}

/// Samples the limiter every millisecond and reports a stall: in enforce
/// mode, calls queued, nothing in flight and no admission for `limit`.
/// Light workers keep asking for one slot, which a working limiter grants
/// whenever nothing is in flight, so this cannot last; a queue head that
/// blocks calls which fit (issue 11's capacity-shrink stall, a lost
/// wake-up) makes it last.
pub fn watch(shared: &Arc<Shared>, limit: Duration) {
    let limiter = &shared.limiter;
    let mut stalled_since: Option<(Instant, u64)> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(1));
        let stats = limiter.stats();
        shared
            .highest_capacity
            .fetch_max(stats.capacity, Ordering::Relaxed);
        let admitted: u64 = stats.classes.iter().map(|c| c.admitted).sum();
        let stalled = limiter.mode() == Mode::Enforce && stats.queued > 0 && stats.in_flight == 0;
        stalled_since = match stalled_since {
            _ if !stalled => None,
            Some((since, seen)) if seen == admitted => {
                if since.elapsed() >= limit {
                    shared.find(format!(
                        "stall: for {:?}, {} calls (weight {}) queued, nothing in flight and nothing admitted, capacity {}",
                        since.elapsed(),
                        stats.queued,
                        stats.queued_weight,
                        stats.capacity
                    ));
                    None
                } else {
                    Some((since, seen))
                }
            }
            _ => Some((Instant::now(), admitted)),
        };
    }
}
