//! Cold starts: after a restart or a recovery, the capacity ramps up over a
//! warm-up instead of admitting the full load at once ("a system just
//! recovered from a dependency outage may need a slower ramp because
//! caches are cold").
//!
//! The ramp caps the capacity from outside, on a tick: a task sets it to
//! `fraction × reference` through the same path the adaptive controllers
//! use, the fraction growing linearly from [`START_FRACTION`] to 1 over
//! the warm-up. The *reference* is the capacity the limiter has when the
//! ramp begins. A capacity found changed since the ramp's own last write
//! was set by somebody else ([`Limiter::set_capacity`], a spawned
//! [`AdaptiveLimit`](crate::adaptive::AdaptiveLimit)): it becomes the new
//! reference, still capped. The admission fast path reads the capacity as
//! it always does, so the ramp costs it nothing.
//!
//! The adaptive default is paused for the ramp and handed back after it:
//! run under a cap, every window would show a limit that binds with no
//! queue in the service, and it would grow its limit far past what the
//! service sustains (the cap hides the latency that stops the growth). So
//! with the adaptive default the reference is the limit it had learned,
//! which after a recovery is the limit the service sustained before.
//! A freshly built adaptive limiter needs no ramp at startup: it starts
//! from a small limit and grows only as completions show room.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use crate::Limiter;

/// The variable that sets the warm-up: a duration such as `30s` or
/// `500ms`, or `off`. It wins over [`Config::warm_up`](crate::Config::warm_up).
pub const ENV_WARM_UP: &str = "SHED_WARM_UP";

/// The share of the reference capacity a ramp starts from.
pub const START_FRACTION: f64 = 0.1;

/// Steps per ramp: the capacity rises in about this many steps.
const STEPS: u32 = 50;
/// The shortest and longest tick between two steps.
const TICKS: (Duration, Duration) = (Duration::from_millis(10), Duration::from_millis(500));

/// A limiter's warm-up: its length, and the ramp in progress, if any.
#[derive(Debug)]
pub(crate) struct WarmUp {
    /// The ramp's length in nanoseconds; 0: no warm-up configured.
    length: AtomicU64,
    /// The current fraction (`f64` bits): 1 when not ramping.
    fraction: AtomicU64,
    ramp: Mutex<Option<Ramp>>,
}

#[derive(Debug)]
struct Ramp {
    started: Instant,
    /// The capacity the limiter would have without the ramp.
    reference: u64,
    /// Whether the ramp paused the adaptive default (and so resumes it).
    paused_auto: bool,
}

impl Default for WarmUp {
    fn default() -> Self {
        Self {
            length: AtomicU64::new(0),
            fraction: AtomicU64::new(1.0f64.to_bits()),
            ramp: Mutex::new(None),
        }
    }
}

impl WarmUp {
    /// Pins the capacity at `capacity` (`Limiter::set_capacity`): at once
    /// without a ramp; during one, it becomes the value the ramp climbs
    /// to, under the current cap, and the adaptive default stays off as a
    /// pin says. Under the ramp's lock, so a step never mistakes a pin for
    /// a controller's write, nor overwrites it.
    pub(crate) fn pin(&self, inner: &Inner, capacity: u64) {
        let mut ramp = lock(&self.ramp);
        // Stopped under the ramp's lock: a ramp ending between a stop
        // taken before it and the pin would hand the adaptive default
        // back, and its next window would overwrite the pin.
        if let Some(auto) = &inner.auto {
            auto.disable();
        }
        match ramp.as_mut() {
            Some(ramp) => {
                ramp.reference = capacity;
                ramp.paused_auto = false;
                let capped = ((capacity as f64 * self.fraction()).ceil() as u64).clamp(1, capacity);
                inner.core.set_capacity(capped);
            }
            None => inner.core.set_capacity(capacity),
        }
    }

    pub(crate) fn set_length(&self, length: Duration) {
        let nanos = u64::try_from(length.as_nanos()).unwrap_or(u64::MAX);
        self.length.store(nanos, Ordering::Relaxed);
    }

    fn length(&self) -> Option<Duration> {
        match self.length.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    fn fraction(&self) -> f64 {
        f64::from_bits(self.fraction.load(Ordering::Relaxed))
    }

    /// Starts a ramp, or restarts the one in progress from its beginning
    /// (keeping its reference: the capped capacity is not one). Returns
    /// whether a task must be spawned to drive it.
    fn begin(&self, inner: &Inner, now: Instant) -> bool {
        let mut ramp = lock(&self.ramp);
        let fresh = ramp.is_none();
        if let Some(ramp) = ramp.as_mut() {
            ramp.started = now;
        } else {
            let capacity = inner.core.snapshot().capacity;
            let paused_auto = inner.auto.as_ref().is_some_and(|auto| auto.disable());
            *ramp = Some(Ramp {
                started: now,
                reference: capacity,
                paused_auto,
            });
        }
        self.step_locked(&mut ramp, inner, now);
        fresh
    }

    /// Moves the ramp to `now`. Returns whether it goes on.
    fn step(&self, inner: &Inner, now: Instant) -> bool {
        let mut ramp = lock(&self.ramp);
        self.step_locked(&mut ramp, inner, now)
    }

    fn step_locked(&self, slot: &mut Option<Ramp>, inner: &Inner, now: Instant) -> bool {
        let (Some(ramp), Some(length)) = (slot.as_mut(), self.length()) else {
            *slot = None;
            self.fraction.store(1.0f64.to_bits(), Ordering::Relaxed);
            return false;
        };
        // The ramp's cap wins over any other value (pausing the adaptive
        // default waited for the window it was closing, see
        // `AutoControl::disable`). A pin by the application goes through
        // `pin`, under the ramp's lock.
        let capacity = inner.core.snapshot().capacity;
        let elapsed = now.saturating_duration_since(ramp.started);
        let fraction = START_FRACTION
            + (1.0 - START_FRACTION) * (elapsed.as_secs_f64() / length.as_secs_f64());
        if fraction >= 1.0 {
            if capacity != ramp.reference {
                inner.core.set_capacity(ramp.reference);
            }
            if ramp.paused_auto
                && let Some(auto) = &inner.auto
            {
                auto.enable();
            }
            *slot = None;
            self.fraction.store(1.0f64.to_bits(), Ordering::Relaxed);
            return false;
        }
        let capped = ((ramp.reference as f64 * fraction).ceil() as u64).clamp(1, ramp.reference);
        if capped != capacity {
            inner.core.set_capacity(capped);
        }
        self.fraction.store(fraction.to_bits(), Ordering::Relaxed);
        true
    }
}

fn lock(ramp: &Mutex<Option<Ramp>>) -> MutexGuard<'_, Option<Ramp>> {
    // Every step leaves the ramp consistent before it can panic.
    ramp.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The time between two steps of a ramp of `length`.
fn tick(length: Duration) -> Duration {
    (length / STEPS).clamp(TICKS.0, TICKS.1)
}

/// Parses `SHED_WARM_UP`: a duration (`30s`, `1m 30s`, `500ms`), or `off`
/// / `0` for none (`Duration::ZERO`).
pub(crate) fn parse(raw: &str) -> Result<Duration, String> {
    match raw.trim() {
        "off" | "0" => Ok(Duration::ZERO),
        text => humantime::parse_duration(text)
            .map_err(|e| format!("expected a duration such as `30s` or `500ms`, or `off` ({e})")),
    }
}

/// Sets the warm-up a limiter was configured with and, for a fixed
/// capacity, begins its first ramp (a restart) if a tokio runtime is
/// running; outside one, [`Limiter::begin_warm_up`] begins it later.
pub(crate) fn configure(limiter: &Limiter, length: Option<Duration>) {
    let Some(length) = length.filter(|l| !l.is_zero()) else {
        return;
    };
    limiter.inner.warm_up.set_length(length);
    if limiter.inner.auto.is_none() {
        limiter.begin_warm_up();
    }
}

fn publish(limiter: &Limiter, fraction: f64) {
    metrics::gauge!("shed_warm_up_fraction", limiter.base_labels()).set(fraction);
}

impl Limiter {
    /// Begins a warm-up (see [`Config::warm_up`](crate::Config::warm_up)):
    /// the capacity drops to a tenth of what it is now and climbs back
    /// linearly over the configured warm-up. Call it when the service
    /// recovers from something that left it cold: a dependency outage, a
    /// cache flush. A ramp in progress starts over. With the adaptive
    /// default, the limit it learned is the target, and it stops adapting
    /// until the ramp ends. [`set_capacity`](Limiter::set_capacity) during
    /// the ramp changes its target.
    ///
    /// Returns `false`, doing nothing, when no warm-up is configured or
    /// no tokio runtime is running (a task drives the ramp).
    ///
    /// ```
    /// use std::time::Duration;
    /// use shed_runtime::Limiter;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let limiter = Limiter::builder()
    ///     .capacity(100)
    ///     .warm_up(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(limiter.capacity(), 10, "a fresh start ramps up from 10%");
    /// tokio::time::sleep(Duration::from_secs(11)).await;
    /// assert_eq!(limiter.capacity(), 100);
    /// assert!(limiter.begin_warm_up(), "after a recovery, again");
    /// assert_eq!(limiter.capacity(), 10);
    /// # }
    /// ```
    pub fn begin_warm_up(&self) -> bool {
        let Some(length) = self.inner.warm_up.length() else {
            return false;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let warm_up = &self.inner.warm_up;
        if warm_up.begin(&self.inner, Instant::now()) {
            runtime.spawn(drive(Arc::downgrade(&self.inner), tick(length)));
        }
        publish(self, warm_up.fraction());
        true
    }

    /// The warm-up's progress: the share of the target capacity the ramp
    /// allows now (from 0.1 to 1), or `None` when no ramp is in progress.
    /// Also the `shed_warm_up_fraction` gauge (1 when not ramping).
    pub fn warm_up_fraction(&self) -> Option<f64> {
        let fraction = self.inner.warm_up.fraction();
        (fraction < 1.0).then_some(fraction)
    }
}

/// Steps the ramp every `tick` until it ends or the limiter is dropped.
async fn drive(inner: Weak<Inner>, tick: Duration) {
    let mut ticker = tokio::time::interval_at(Instant::now() + tick, tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let goes_on = inner.warm_up.step(&inner, Instant::now());
        let limiter = Limiter { inner };
        publish(&limiter, limiter.inner.warm_up.fraction());
        if !goes_on {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_off() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse(" 500ms "), Ok(Duration::from_millis(500)));
        assert_eq!(parse("off"), Ok(Duration::ZERO));
        assert!(parse("soon").is_err());
    }

    /// The race the ramp had: an adaptive window closing as the ramp
    /// paused it wrote the capacity, and the ramp took that for a pin and
    /// left the adaptive default off for good.
    #[tokio::test(start_paused = true)]
    async fn a_controller_write_during_a_ramp_is_capped_and_the_default_resumes() {
        let limiter = crate::Config::new()
            .warm_up(Duration::from_secs(1))
            .build()
            .unwrap();
        limiter.set_capacity(100);
        assert!(!limiter.is_adaptive());
        let auto = crate::Config::new()
            .warm_up(Duration::from_secs(1))
            .build()
            .unwrap();
        assert!(auto.is_adaptive());
        let reference = auto.capacity();
        assert!(auto.begin_warm_up());
        // A window that was closing as the ramp began writes its limit.
        auto.inner.core.set_capacity(u64::from(reference) * 8);
        let now = Instant::now() + Duration::from_millis(500);
        assert!(auto.inner.warm_up.step(&auto.inner, now));
        assert!(
            u64::from(auto.capacity()) <= u64::from(reference),
            "the cap wins"
        );
        assert!(!auto
            .inner
            .warm_up
            .step(&auto.inner, now + Duration::from_secs(1)));
        assert!(
            auto.is_adaptive(),
            "the adaptive default resumes after the ramp"
        );
        // A pin during a ramp is kept as the ramp's target.
        assert!(limiter.begin_warm_up());
        limiter.set_capacity(40);
        assert!(limiter.capacity() <= 40 && limiter.capacity() >= 4);
        assert!(!limiter
            .inner
            .warm_up
            .step(&limiter.inner, Instant::now() + Duration::from_secs(2)));
        assert_eq!(limiter.capacity(), 40);
        assert!(!limiter.is_adaptive());
    }

    /// An adaptive limiter with a warm-up of 1 s, its ramp begun (which
    /// pauses the adaptive default).
    fn adaptive_in_a_ramp() -> crate::Limiter {
        let limiter = crate::Config::new()
            .warm_up(Duration::from_secs(1))
            .build()
            .unwrap();
        assert!(limiter.is_adaptive() && limiter.begin_warm_up());
        limiter
    }

    #[tokio::test(start_paused = true)]
    async fn a_pin_racing_the_end_of_a_ramp_keeps_the_adaptive_default_stopped() {
        let limiter = adaptive_in_a_ramp();
        // `set_capacity` stopped the controller before its pin, and the
        // ramp ended in between, handing the controller back.
        limiter.inner.auto.as_deref().unwrap().disable();
        let ended = Instant::now() + Duration::from_secs(2);
        assert!(!limiter.inner.warm_up.step(&limiter.inner, ended));
        limiter.inner.warm_up.pin(&limiter.inner, 40);
        assert_eq!(limiter.capacity(), 40);
        assert!(!limiter.is_adaptive(), "the pin stops it for good");
    }

    #[tokio::test(start_paused = true)]
    async fn an_adaptive_limit_spawned_during_a_ramp_is_the_only_controller_after_it() {
        let limiter = adaptive_in_a_ramp();
        let spawned =
            crate::adaptive::AdaptiveLimit::new(crate::adaptive::Fixed).spawn(limiter.clone());
        let ended = Instant::now() + Duration::from_secs(2);
        assert!(!limiter.inner.warm_up.step(&limiter.inner, ended));
        assert!(
            !limiter.is_adaptive(),
            "the ramp's end does not hand the default back beside it"
        );
        spawned.abort();
    }

    #[test]
    fn ticks_are_a_fiftieth_of_the_ramp_within_bounds() {
        assert_eq!(tick(Duration::from_secs(10)), Duration::from_millis(200));
        assert_eq!(tick(Duration::from_millis(100)), Duration::from_millis(10));
        assert_eq!(tick(Duration::from_secs(600)), Duration::from_millis(500));
    }
}
