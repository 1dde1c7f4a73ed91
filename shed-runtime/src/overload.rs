//! Hysteresis: shed low classes when a smoothed overload signal crosses an
//! upper threshold, re-admit them step by step once it falls below a lower
//! one, and never flap in between (the seed's `ENTER/EXIT/ramp` loop).
//!
//! The signal is the limiter's occupancy: weight in flight plus weight
//! waiting, over the capacity, sampled every tick and smoothed with an
//! EWMA. Shedding classes lowers demand, so the signal falls and the ramp
//! climbs; if the signal rises again during the ramp, the ramp is pulled
//! back. Classes of rank 0 are never held back by this controller.
//!
//! ```
//! use shed_runtime::{Limiter, OverloadController};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::builder().build().unwrap();
//! let controller = OverloadController::new().thresholds(1.25, 0.9).spawn(limiter.clone());
//! # controller.abort();
//! # }
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::Limiter;

/// The controller's state, shared with whoever watches it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct OverloadState {
    /// The smoothed signal.
    pub signal: f64,
    /// Whether low classes are being held back.
    pub shedding: bool,
    /// How much of the held-back traffic is re-admitted, from 0 to 1.
    pub ramp: f64,
    /// Since when shedding has been active.
    pub since: Option<Instant>,
    /// How many times shedding started or stopped.
    pub transitions: u32,
}

/// The hysteresis controller. See the module documentation.
#[derive(Debug, Clone)]
pub struct OverloadController {
    enter: f64,
    exit: f64,
    alpha: f64,
    tick: Duration,
    step_up: f64,
    step_down: f64,
}

impl Default for OverloadController {
    fn default() -> Self {
        Self::new()
    }
}

impl OverloadController {
    /// Enter at a smoothed occupancy of 1.25 (a quarter of the capacity
    /// waiting), exit below 0.9, smoothing 0.3, a tick a second, ramp up
    /// by 0.1 and back down by 0.2 a tick.
    pub fn new() -> Self {
        Self {
            enter: 1.25,
            exit: 0.9,
            alpha: 0.3,
            tick: Duration::from_secs(1),
            step_up: 0.1,
            step_down: 0.2,
        }
    }

    /// The occupancy that starts shedding and the lower one that lets it
    /// end; `exit` is kept at or below `enter`.
    pub fn thresholds(mut self, enter: f64, exit: f64) -> Self {
        self.enter = enter;
        self.exit = exit.min(enter);
        self
    }

    /// The EWMA weight of the newest sample.
    pub fn smoothing(mut self, alpha: f64) -> Self {
        self.alpha = alpha.clamp(0.01, 1.0);
        self
    }

    /// How often the signal is sampled and the ramp moved.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick.max(Duration::from_millis(1));
        self
    }

    /// How far the ramp climbs per calm tick, and falls per tick in which
    /// the signal rose again.
    pub fn steps(mut self, up: f64, down: f64) -> Self {
        self.step_up = up.clamp(0.001, 1.0);
        self.step_down = down.clamp(0.001, 1.0);
        self
    }

    /// One tick of the controller: the new state after sampling `occupancy`.
    pub fn step(&self, state: &mut OverloadState, occupancy: f64, now: Instant) {
        state.signal = state.signal * (1.0 - self.alpha) + occupancy * self.alpha;
        if !state.shedding {
            if state.signal > self.enter {
                state.shedding = true;
                state.ramp = 0.0;
                state.since = Some(now);
                state.transitions += 1;
            }
        } else if state.signal < self.exit {
            state.ramp = (state.ramp + self.step_up).min(1.0);
            if state.ramp >= 1.0 - 1e-9 {
                state.ramp = 1.0;
                state.shedding = false;
                state.since = None;
                state.transitions += 1;
            }
        } else {
            state.ramp = (state.ramp - self.step_down).max(0.0);
        }
    }

    /// Starts the controller on `limiter`; the returned state is updated
    /// every tick (for readiness, admin pages, tests).
    pub fn spawn(self, limiter: Limiter) -> tokio::task::JoinHandle<()> {
        self.spawn_watched(limiter, Arc::new(Mutex::new(None)))
    }

    /// Like [`spawn`](OverloadController::spawn), publishing the state in
    /// `watch` after every tick.
    pub fn spawn_watched(
        self,
        limiter: Limiter,
        watch: Arc<Mutex<Option<OverloadState>>>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(self.tick);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut state = OverloadState {
                signal: 0.0,
                shedding: false,
                ramp: 1.0,
                since: None,
                transitions: 0,
            };
            loop {
                ticker.tick().await;
                let load = limiter.inner.load();
                let (_, queued) = limiter.inner.queued();
                let occupancy = (load.in_flight + queued) as f64 / load.capacity.max(1) as f64;
                let now = Instant::now();
                self.step(&mut state, occupancy, now);
                apply(&limiter, if state.shedding { state.ramp } else { 1.0 });
                let active = state.since.map_or(0.0, |since| (now - since).as_secs_f64());
                // Labelled like the limiter's own series, so that two
                // controllers on two limiters never overwrite each other.
                let labels = limiter.base_labels();
                metrics::gauge!("shed_overload_signal", labels.clone()).set(state.signal);
                metrics::gauge!("shed_overload_ramp", labels.clone()).set(state.ramp);
                metrics::gauge!("shed_overload_active_seconds", labels).set(active);
                *watch.lock().unwrap_or_else(|p| p.into_inner()) = Some(state);
            }
        })
    }
}

/// Sets each class's admitted fraction for `ramp`: classes of rank 0 keep
/// everything; the others are restored in rank order as the ramp climbs
/// (with two sheddable classes, the higher one is fully back at 0.5, the
/// lower one at 1.0).
pub fn apply(limiter: &Limiter, ramp: f64) {
    let ranks = limiter.class_ranks();
    let mut sheddable: Vec<usize> = (0..ranks.len()).filter(|&c| ranks[c] > 0).collect();
    sheddable.sort_by_key(|&c| ranks[c]);
    let m = sheddable.len() as f64;
    for (i, &c) in sheddable.iter().enumerate() {
        let fraction = (ramp * m - i as f64).clamp(0.0, 1.0);
        limiter.set_admitted_fraction_at(c, fraction);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enters_above_the_upper_threshold_and_ramps_back_below_the_lower_one() {
        let controller = OverloadController::new()
            .thresholds(1.2, 0.8)
            .smoothing(1.0);
        let now = Instant::now();
        let mut s = OverloadState {
            signal: 0.0,
            shedding: false,
            ramp: 1.0,
            since: None,
            transitions: 0,
        };
        controller.step(&mut s, 1.0, now);
        assert!(!s.shedding, "between the thresholds: nothing changes");
        controller.step(&mut s, 1.5, now);
        assert!(s.shedding && s.ramp == 0.0);
        controller.step(&mut s, 1.0, now);
        assert_eq!(s.ramp, 0.0, "above exit: no ramp yet");
        for expected in [0.1, 0.2, 0.3] {
            controller.step(&mut s, 0.5, now);
            assert!((s.ramp - expected).abs() < 1e-9, "{s:?}");
        }
        controller.step(&mut s, 1.0, now);
        assert!(
            (s.ramp - 0.1).abs() < 1e-9,
            "a rise pulls the ramp back: {s:?}"
        );
        for _ in 0..9 {
            controller.step(&mut s, 0.5, now);
        }
        assert!(!s.shedding, "fully ramped: shedding ends");
        assert_eq!(s.transitions, 2);
    }
}
