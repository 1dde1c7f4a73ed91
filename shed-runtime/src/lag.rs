//! Runtime lag: how late the tokio scheduler runs a task that asked to be
//! woken at a given instant. The complementary overload signal of the
//! first seed: a handler that blocks a worker thread (CPU work, a blocking
//! call) shows up here and nowhere else, while queueing behind a full
//! limiter leaves it flat. Use it for alerting and readiness, never alone
//! for shedding: it is blind to the common case, saturation of a bounded
//! resource, which the limiter's measured queue wait sees.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// The reported lag of the probe that last measured, in nanoseconds
/// (`u64::MAX`: no probe has run), for the periodic summary.
static LAST_REPORTED: AtomicU64 = AtomicU64::new(u64::MAX);

/// The lag the last running probe reported, if a probe runs in this
/// process: what the periodic summary shows.
pub(crate) fn last_reported() -> Option<Duration> {
    match LAST_REPORTED.load(Ordering::Relaxed) {
        u64::MAX => None,
        nanos => Some(Duration::from_nanos(nanos)),
    }
}

/// A probe task that measures the runtime's lag, with a lagging/not
/// lagging verdict that has hysteresis.
///
/// Every `interval` the probe asks to be woken at an instant and measures
/// how late it ran. The lag reported is the largest of the last
/// `window` probes, so one late wake-up is seen for a while but nothing
/// is averaged away. The probe turns *lagging* when the lag exceeds
/// `enter` and stops only when it falls below `exit`.
///
/// Metrics (through the [`metrics`] facade): `shed_runtime_lag_seconds`
/// (histogram, every probe) and `shed_runtime_lag_max_seconds` (gauge, the
/// reported lag).
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::LagProbe;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let probe = LagProbe::builder()
///     .interval(Duration::from_millis(50))
///     .thresholds(Duration::from_millis(200), Duration::from_millis(50))
///     .spawn();
/// tokio::time::sleep(Duration::from_secs(1)).await;
/// assert!(!probe.is_lagging());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct LagProbe {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The reported lag in nanoseconds.
    lag_nanos: AtomicU64,
    lagging: AtomicBool,
    stopped: AtomicBool,
}

/// How a [`LagProbe`] measures; see [`LagProbe::builder`].
#[derive(Debug, Clone)]
pub struct LagProbeBuilder {
    interval: Duration,
    window: usize,
    enter: Duration,
    exit: Duration,
}

impl Default for LagProbeBuilder {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(100),
            window: 10,
            enter: Duration::from_millis(200),
            exit: Duration::from_millis(50),
        }
    }
}

impl LagProbeBuilder {
    /// How often the probe runs (100 ms by default).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How many probes the reported lag is the largest of (10 by default:
    /// one second at the default interval).
    pub fn window(mut self, probes: usize) -> Self {
        self.window = probes.max(1);
        self
    }

    /// The lag above which the probe reports lagging (200 ms by default)
    /// and below which it stops again (50 ms by default; kept at or below
    /// `enter`).
    pub fn thresholds(mut self, enter: Duration, exit: Duration) -> Self {
        self.enter = enter;
        self.exit = exit.min(enter);
        self
    }

    /// Starts the probe on the current tokio runtime. It stops when every
    /// handle to it is dropped.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with timers enabled.
    pub fn spawn(self) -> LagProbe {
        let shared = Arc::new(Shared {
            lag_nanos: AtomicU64::new(0),
            lagging: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&shared);
        tokio::spawn(async move {
            let histogram = metrics::histogram!("shed_runtime_lag_seconds");
            let gauge = metrics::gauge!("shed_runtime_lag_max_seconds");
            let mut recent = std::collections::VecDeque::with_capacity(self.window);
            loop {
                let planned = crate::deadline::after(Instant::now(), self.interval);
                tokio::time::sleep_until(planned).await;
                let lag = Instant::now().saturating_duration_since(planned);
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                if shared.stopped.load(Ordering::Relaxed) {
                    return;
                }
                if recent.len() == self.window {
                    recent.pop_front();
                }
                recent.push_back(lag);
                let reported = recent.iter().copied().max().unwrap_or_default();
                histogram.record(lag.as_secs_f64());
                gauge.set(reported.as_secs_f64());
                LAST_REPORTED.store(
                    u64::try_from(reported.as_nanos()).unwrap_or(u64::MAX - 1),
                    Ordering::Relaxed,
                );
                shared.record(reported, self.enter, self.exit);
            }
        });
        LagProbe { shared }
    }
}

impl Shared {
    fn record(&self, lag: Duration, enter: Duration, exit: Duration) {
        self.lag_nanos.store(
            u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let lagging = self.lagging.load(Ordering::Relaxed);
        if !lagging && lag > enter {
            self.lagging.store(true, Ordering::Relaxed);
        } else if lagging && lag < exit {
            self.lagging.store(false, Ordering::Relaxed);
        }
    }
}

impl LagProbe {
    /// A probe with the defaults: every 100 ms, the largest of the last 10
    /// probes, lagging above 200 ms until below 50 ms.
    pub fn builder() -> LagProbeBuilder {
        LagProbeBuilder::default()
    }

    /// The reported lag: the largest of the last `window` probes.
    pub fn lag(&self) -> Duration {
        Duration::from_nanos(self.shared.lag_nanos.load(Ordering::Relaxed))
    }

    /// Whether the runtime is lagging (with hysteresis).
    pub fn is_lagging(&self) -> bool {
        self.shared.lagging.load(Ordering::Relaxed)
    }

    /// Stops the probe task.
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn io_bound_waiting_leaves_the_lag_flat() {
        let probe = LagProbe::builder()
            .interval(Duration::from_millis(10))
            .spawn();
        // Thousands of tasks waiting on timers (I/O-bound): the scheduler
        // is never late.
        let tasks: Vec<_> = (0..2_000u64)
            .map(|i| tokio::spawn(tokio::time::sleep(Duration::from_millis(i % 500))))
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(probe.lag(), Duration::ZERO);
        assert!(!probe.is_lagging());
        // What the periodic summary shows once a probe runs.
        assert_eq!(last_reported(), Some(Duration::ZERO));
    }

    #[test]
    fn lagging_has_hysteresis() {
        let shared = Shared {
            lag_nanos: AtomicU64::new(0),
            lagging: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        };
        let (enter, exit) = (Duration::from_millis(200), Duration::from_millis(50));
        let ms = Duration::from_millis;
        let verdicts: Vec<bool> = [100, 250, 150, 60, 40, 150]
            .into_iter()
            .map(|lag| {
                shared.record(ms(lag), enter, exit);
                shared.lagging.load(Ordering::Relaxed)
            })
            .collect();
        assert_eq!(verdicts, [false, true, true, true, false, false]);
    }
}
