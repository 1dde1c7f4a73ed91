//! The offered load, measured: how many calls arrive per second, as a
//! multiple of how many the limiter serves per second when it is saturated.
//!
//! The standing-queue controls need it to tell sustained overload from a
//! queue that only looks long. At exactly the capacity a queue grows and
//! shrinks by chance, and dropping its old waiters would lose calls the
//! slots could still have served; at 1.1x the same queue grows for good,
//! and every call beyond the capacity is lost anyway. Queue wait alone
//! cannot tell the two apart quickly; the rates can.
//!
//! Everything is counted under the queue lock, from events the dispatcher
//! sees anyway: the admission count of the [admission word], refusals from
//! the queue and the queue's length. Nothing is added to the fast path.
//!
//! [admission word]: super::state::AdmissionWord

use std::time::Duration;

use tokio::time::Instant;

use super::state::admissions_between;

/// How much each window moves the smoothed measures. About five windows
/// (half a second with the default 100 ms interval): at 1,600 calls a
/// second, Poisson arrivals vary by about 8% from one 100 ms window to the
/// next, and by about 3% smoothed, which the thresholds of the standing
/// queue (1.05 in, 1.02 out) are set against. A service with a few calls a
/// window measures more noisily; its queue then stands on overflows much as
/// it would without the measure.
const SMOOTHING: f64 = 0.2;

/// What the dispatcher reads when it looks at the load.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// Admissions so far (wrapping).
    pub(crate) admitted: u64,
    /// Waiters now.
    pub(crate) queued: u64,
    /// The limiter's capacity: at most this many admissions of a window
    /// can come from slots that were already free when it opened.
    pub(crate) capacity: u64,
}

/// Measures the offered load in windows of the standing-queue interval.
#[derive(Debug, Default)]
pub(crate) struct LoadMeter {
    window: Option<Window>,
    /// Calls served per second while the queue never drained: the
    /// limiter's throughput when saturated, smoothed.
    saturated_rate: Option<f64>,
    /// Arrivals per second over `saturated_rate`, smoothed.
    load: Option<f64>,
}

#[derive(Debug)]
struct Window {
    opened: Instant,
    admitted_at_open: u64,
    queued_at_open: u64,
    /// Waiters that left the queue unserved in the window: refused (out
    /// of time or room) or abandoned by their caller.
    refused: u64,
    /// Whether the queue was empty at some point in the window, so that
    /// slots may have idled and the window says nothing about saturation.
    drained: bool,
}

impl LoadMeter {
    /// A waiter left the queue refused, or its caller gave up waiting: it
    /// arrived, but was not served.
    pub(crate) fn refused(&mut self) {
        if let Some(window) = &mut self.window {
            window.refused += 1;
        }
    }

    /// The queue is empty.
    pub(crate) fn drained(&mut self) {
        if let Some(window) = &mut self.window {
            window.drained = true;
        }
    }

    /// Closes the current window once `length` has passed.
    pub(crate) fn observe(&mut self, length: Duration, now: Instant, reading: Reading) {
        let Reading {
            admitted,
            queued,
            capacity,
        } = reading;
        let open_new = |now| Window {
            opened: now,
            admitted_at_open: admitted,
            queued_at_open: queued,
            refused: 0,
            drained: queued == 0,
        };
        let Some(window) = &self.window else {
            self.window = Some(open_new(now));
            return;
        };
        let elapsed = now.saturating_duration_since(window.opened);
        if elapsed < length || elapsed.is_zero() {
            return;
        }
        let seconds = elapsed.as_secs_f64();
        // Every call that arrived was admitted, refused from the queue or
        // is still waiting.
        let served = admissions_between(window.admitted_at_open, admitted) as f64;
        let arrived = served + window.refused as f64 + queued as f64 - window.queued_at_open as f64;
        let served_rate = served / seconds;
        self.saturated_rate = match (self.saturated_rate, window.drained) {
            (None, false) => Some(served_rate),
            (Some(rate), false) => Some(smooth(rate, served_rate)),
            // Slots may have idled: the window only shows that the
            // saturated throughput is at least what was served, less what
            // slots free at its start took in at once.
            (Some(rate), true) => Some(rate.max((served - capacity as f64).max(0.0) / seconds)),
            (None, true) => None,
        };
        if let Some(rate) = self.saturated_rate.filter(|r| *r > 0.0) {
            let load = arrived.max(0.0) / seconds / rate;
            // Starts from "at the capacity": one window of a burst must not
            // read as sustained overload.
            self.load = Some(smooth(self.load.unwrap_or(1.0), load));
        }
        self.window = Some(open_new(now));
    }

    /// The offered load as a multiple of the saturated throughput, once
    /// the limiter has been seen saturated for a whole window.
    pub(crate) fn load(&self) -> Option<f64> {
        self.load
    }
}

fn smooth(previous: f64, sample: f64) -> f64 {
    SMOOTHING * sample + (1.0 - SMOOTHING) * previous
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_millis(100);

    /// Five waiters and 8 slots.
    fn reading(admitted: u64) -> Reading {
        Reading {
            admitted,
            queued: 5,
            capacity: 8,
        }
    }

    /// Feeds `windows` windows in which `arrived` calls arrive and
    /// `served` are admitted, the rest being refused from a queue that
    /// never drains (or drains, if `drained`).
    fn run(
        meter: &mut LoadMeter,
        now: &mut Instant,
        admitted: &mut u64,
        windows: u32,
        (arrived, served, drained): (u64, u64, bool),
    ) {
        for _ in 0..windows {
            for _ in served..arrived {
                meter.refused();
            }
            if drained {
                meter.drained();
            }
            *admitted += served;
            *now += WINDOW;
            meter.observe(WINDOW, *now, reading(*admitted));
        }
    }

    #[test]
    fn the_load_is_arrivals_over_the_saturated_throughput() {
        let (mut meter, mut now, mut admitted) = (LoadMeter::default(), Instant::now(), 0);
        meter.observe(WINDOW, now, reading(admitted));
        assert_eq!(meter.load(), None, "no window closed yet");
        // 1.5x: 240 arrive per window, 160 are served.
        run(&mut meter, &mut now, &mut admitted, 20, (240, 160, false));
        let load = meter.load().expect("measured");
        assert!((load - 1.5).abs() < 0.01, "{load}");
        // Back to 0.5x: 80 arrive and are served, the queue drains.
        run(&mut meter, &mut now, &mut admitted, 20, (80, 80, true));
        let load = meter.load().expect("measured");
        assert!((load - 0.5).abs() < 0.02, "{load}");
    }

    #[test]
    fn idle_windows_do_not_lower_the_saturated_throughput() {
        let (mut meter, mut now, mut admitted) = (LoadMeter::default(), Instant::now(), 0);
        meter.observe(WINDOW, now, reading(admitted));
        run(&mut meter, &mut now, &mut admitted, 3, (80, 80, true));
        assert_eq!(meter.load(), None, "never saturated: nothing known");
        run(&mut meter, &mut now, &mut admitted, 1, (160, 160, false));
        run(&mut meter, &mut now, &mut admitted, 10, (80, 80, true));
        assert!((meter.saturated_rate.unwrap() - 1600.0).abs() < 1.0);
        // A drained window that took in 168 (8 of them into slots free at
        // its start) says nothing new.
        run(&mut meter, &mut now, &mut admitted, 1, (168, 168, true));
        assert!((meter.saturated_rate.unwrap() - 1600.0).abs() < 1.0);
        // Served more than thought possible while draining: the estimate
        // was stale, and is raised.
        run(&mut meter, &mut now, &mut admitted, 1, (208, 208, true));
        assert!((meter.saturated_rate.unwrap() - 2000.0).abs() < 1.0);
    }

    #[test]
    fn the_admission_count_may_wrap() {
        let mut meter = LoadMeter::default();
        let now = Instant::now();
        let last_before_wrapping = (1u64 << super::super::state::ADMITTED_BITS) - 1;
        meter.observe(WINDOW, now, reading(last_before_wrapping - 49));
        // 50 admissions to wrap to zero, then 110 more.
        meter.observe(WINDOW, now + WINDOW, reading(110));
        assert!((meter.saturated_rate.unwrap() - 1600.0).abs() < 1.0);
    }
}
