//! Telling a retry from a first attempt, and counting both: the server's
//! measure of retry amplification (retries / first attempts).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http::{HeaderMap, HeaderName};

use super::wire;

/// Where a request's attempt number comes from: `grpc-previous-rpc-attempts`
/// (gRPC's retries: the attempts before this one), `x-envoy-attempt-count`
/// (Envoy: this attempt, from 1) and a header of your choice (default
/// `x-shed-attempt`, what shed's client layer sends: this attempt, from 1).
/// The highest wins; malformed values are ignored.
///
/// ```
/// use shed_runtime::http::AttemptHeaders;
///
/// let headers = AttemptHeaders::default();
/// let mut request = http::HeaderMap::new();
/// assert_eq!(headers.attempt(&request), 1);
/// request.insert("grpc-previous-rpc-attempts", "2".parse().unwrap());
/// assert_eq!(headers.attempt(&request), 3);
/// ```
#[derive(Debug, Clone)]
pub struct AttemptHeaders {
    header: Option<HeaderName>,
    grpc: bool,
    envoy: bool,
}

impl Default for AttemptHeaders {
    fn default() -> Self {
        Self {
            header: Some(HeaderName::from_static("x-shed-attempt")),
            grpc: true,
            envoy: true,
        }
    }
}

fn number(headers: &HeaderMap, name: impl http::header::AsHeaderName) -> Option<u32> {
    let value = wire::digits(wire::text(headers, name)?.trim(), 9)?;
    u32::try_from(value).ok()
}

impl AttemptHeaders {
    /// Reads the attempt number from `header` instead of `x-shed-attempt`
    /// (`None`: only the gRPC and Envoy headers).
    pub fn header(mut self, header: Option<HeaderName>) -> Self {
        self.header = header;
        self
    }

    /// Whether `grpc-previous-rpc-attempts` is read (default: yes).
    pub fn grpc(mut self, grpc: bool) -> Self {
        self.grpc = grpc;
        self
    }

    /// Whether `x-envoy-attempt-count` is read (default: yes).
    pub fn envoy(mut self, envoy: bool) -> Self {
        self.envoy = envoy;
        self
    }

    /// The attempt a request says it is: 1 for a first attempt.
    pub fn attempt(&self, headers: &HeaderMap) -> u32 {
        let grpc = self
            .grpc
            .then(|| number(headers, "grpc-previous-rpc-attempts"))
            .flatten()
            .map(|previous| previous.saturating_add(1));
        let envoy = self
            .envoy
            .then(|| number(headers, "x-envoy-attempt-count"))
            .flatten();
        let own = self.header.as_ref().and_then(|h| number(headers, h));
        [grpc, envoy, own].into_iter().flatten().fold(1, u32::max)
    }
}

const FIRST: usize = 0;
const RETRY: usize = 1;

#[derive(Debug, Default)]
struct Counts {
    admitted: [AtomicU64; 2],
    shed: [AtomicU64; 2],
}

/// First attempts and retries offered, admitted and shed, per class, as
/// counted by the HTTP layer ([`ShedLayer::retry_stats`](super::ShedLayer::retry_stats)).
/// Requests whose handlers admit themselves (`by_handler` routes) are
/// counted under the class `handler`: the layer does not know the class
/// their `#[shed]` fn uses. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct RetryStats {
    classes: Arc<RwLock<Vec<ClassCounts>>>,
}

/// A class and its counters.
type ClassCounts = (&'static str, Arc<Counts>);

/// The counts of one class (or of all, in [`RetryStats::total`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttemptCounts {
    /// The class (`*` for the total).
    pub class: &'static str,
    /// First attempts admitted.
    pub first_admitted: u64,
    /// First attempts shed.
    pub first_shed: u64,
    /// Retries admitted.
    pub retries_admitted: u64,
    /// Retries shed.
    pub retries_shed: u64,
}

impl AttemptCounts {
    /// First attempts offered (admitted + shed).
    pub fn first_offered(&self) -> u64 {
        self.first_admitted + self.first_shed
    }

    /// Retries offered (admitted + shed).
    pub fn retries_offered(&self) -> u64 {
        self.retries_admitted + self.retries_shed
    }

    /// Retries over first attempts: the seed's "ratio of requests with a
    /// retry-attempt marker to first attempts" (0 with no first attempt).
    pub fn retry_ratio(&self) -> f64 {
        match self.first_offered() {
            0 => 0.0,
            first => self.retries_offered() as f64 / first as f64,
        }
    }

    /// Everything offered over first attempts, `1 + retry_ratio`: the
    /// factor by which retries multiply the load (1.0 without retries, 2.0
    /// when every first attempt came back once; 0 with no first attempt).
    pub fn amplification(&self) -> f64 {
        match self.first_offered() {
            0 => 0.0,
            first => (first + self.retries_offered()) as f64 / first as f64,
        }
    }

    fn minus(&self, before: &AttemptCounts) -> AttemptCounts {
        AttemptCounts {
            class: self.class,
            first_admitted: self.first_admitted - before.first_admitted,
            first_shed: self.first_shed - before.first_shed,
            retries_admitted: self.retries_admitted - before.retries_admitted,
            retries_shed: self.retries_shed - before.retries_shed,
        }
    }
}

impl RetryStats {
    fn counts(&self, class: &'static str) -> Arc<Counts> {
        let read = self.classes.read().unwrap_or_else(|p| p.into_inner());
        if let Some((_, counts)) = read.iter().find(|(c, _)| *c == class) {
            return Arc::clone(counts);
        }
        drop(read);
        let mut write = self.classes.write().unwrap_or_else(|p| p.into_inner());
        if let Some((_, counts)) = write.iter().find(|(c, _)| *c == class) {
            return Arc::clone(counts);
        }
        let counts = Arc::new(Counts::default());
        write.push((class, Arc::clone(&counts)));
        counts
    }

    /// Counts attempt `attempt` of a request of `class`, admitted or shed.
    pub(crate) fn record(&self, class: &'static str, attempt: u32, admitted: bool) {
        let kind = if attempt > 1 { RETRY } else { FIRST };
        let counts = self.counts(class);
        let counter = if admitted {
            &counts.admitted[kind]
        } else {
            &counts.shed[kind]
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts per class, in the order classes were first seen.
    pub fn snapshot(&self) -> Vec<AttemptCounts> {
        let read = self.classes.read().unwrap_or_else(|p| p.into_inner());
        read.iter()
            .map(|(class, c)| {
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                AttemptCounts {
                    class,
                    first_admitted: get(&c.admitted[FIRST]),
                    first_shed: get(&c.shed[FIRST]),
                    retries_admitted: get(&c.admitted[RETRY]),
                    retries_shed: get(&c.shed[RETRY]),
                }
            })
            .collect()
    }

    /// The counts of all classes together (class `*`).
    pub fn total(&self) -> AttemptCounts {
        sum(&self.snapshot())
    }

    /// Publishes the counts to the installed [`metrics`] recorder:
    /// `shed_attempts_admitted_total` and `shed_attempts_shed_total`
    /// (labels `class` and `attempt` = `first` | `retry`), and
    /// `shed_retry_amplification` (offered / first attempts offered, per
    /// `class` and without the label for all).
    pub fn publish_metrics(&self) {
        let snapshot = self.snapshot();
        for c in &snapshot {
            for (attempt, admitted, shed) in [
                ("first", c.first_admitted, c.first_shed),
                ("retry", c.retries_admitted, c.retries_shed),
            ] {
                let labels = [("class", c.class), ("attempt", attempt)];
                metrics::counter!("shed_attempts_admitted_total", &labels).absolute(admitted);
                metrics::counter!("shed_attempts_shed_total", &labels).absolute(shed);
            }
            metrics::gauge!("shed_retry_amplification", "class" => c.class).set(c.amplification());
        }
        metrics::gauge!("shed_retry_amplification").set(sum(&snapshot).amplification());
    }

    /// One line on the retries between two snapshots, or `None` if there
    /// were none.
    pub fn summary_line(before: &[AttemptCounts], after: &[AttemptCounts]) -> Option<String> {
        let delta: Vec<AttemptCounts> = after
            .iter()
            .map(|now| {
                let old = before.iter().find(|b| b.class == now.class);
                old.map_or(*now, |old| now.minus(old))
            })
            .collect();
        let total = sum(&delta);
        if total.retries_offered() == 0 {
            return None;
        }
        Some(format!(
            "retries {} for {} first attempts (amplification {:.2}); shed {} retries and {} first attempts",
            total.retries_offered(),
            total.first_offered(),
            total.amplification(),
            total.retries_shed,
            total.first_shed,
        ))
    }

    /// Publishes the metrics every `every` and logs [`summary_line`](Self::summary_line)
    /// (target `shed::summary`) for each interval with retries.
    pub fn spawn_reporter(self, every: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(every);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last = self.snapshot();
            loop {
                ticker.tick().await;
                self.publish_metrics();
                let now = self.snapshot();
                if let Some(line) = Self::summary_line(&last, &now) {
                    tracing::info!(target: "shed::summary", "{line}");
                }
                last = now;
            }
        })
    }
}

fn sum(counts: &[AttemptCounts]) -> AttemptCounts {
    counts.iter().fold(
        AttemptCounts {
            class: "*",
            ..AttemptCounts::default()
        },
        |a, c| AttemptCounts {
            class: "*",
            first_admitted: a.first_admitted + c.first_admitted,
            first_shed: a.first_shed + c.first_shed,
            retries_admitted: a.retries_admitted + c.retries_admitted,
            retries_shed: a.retries_shed + c.retries_shed,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http::wire::header_map as headers;

    #[test]
    fn every_marker_is_read_and_the_highest_wins() {
        let read = AttemptHeaders::default();
        assert_eq!(read.attempt(&headers(&[])), 1);
        assert_eq!(
            read.attempt(&headers(&[("grpc-previous-rpc-attempts", "0")])),
            1
        );
        assert_eq!(read.attempt(&headers(&[("x-envoy-attempt-count", "1")])), 1);
        assert_eq!(read.attempt(&headers(&[("x-envoy-attempt-count", "4")])), 4);
        assert_eq!(read.attempt(&headers(&[("x-shed-attempt", "2")])), 2);
        assert_eq!(
            read.attempt(&headers(&[
                ("x-shed-attempt", "2"),
                ("grpc-previous-rpc-attempts", "4")
            ])),
            5
        );
        for bad in ["-1", "two", "", "9999999999", "1.5"] {
            assert_eq!(
                read.attempt(&headers(&[("x-shed-attempt", bad)])),
                1,
                "{bad:?}"
            );
        }
        let custom = AttemptHeaders::default()
            .header(Some(HeaderName::from_static("x-retry")))
            .envoy(false);
        assert_eq!(custom.attempt(&headers(&[("x-retry", "3")])), 3);
        assert_eq!(custom.attempt(&headers(&[("x-shed-attempt", "3")])), 1);
        assert_eq!(
            custom.attempt(&headers(&[("x-envoy-attempt-count", "3")])),
            1
        );
    }

    #[test]
    fn amplification_is_offered_over_first_attempts() {
        let stats = RetryStats::default();
        for i in 0..10 {
            stats.record("critical", 1, i < 6);
        }
        stats.record("critical", 2, true);
        stats.record("critical", 3, false);
        stats.record("background", 1, false);
        let critical = stats.snapshot()[0];
        assert_eq!(
            (
                critical.first_offered(),
                critical.first_admitted,
                critical.first_shed
            ),
            (10, 6, 4)
        );
        assert_eq!((critical.retries_admitted, critical.retries_shed), (1, 1));
        assert!((critical.amplification() - 1.2).abs() < 1e-12);
        assert!((critical.retry_ratio() - 0.2).abs() < 1e-12);
        let total = stats.total();
        assert_eq!((total.first_offered(), total.retries_offered()), (11, 2));
        let line = RetryStats::summary_line(&[], &stats.snapshot()).unwrap();
        assert!(
            line.starts_with("retries 2 for 11 first attempts (amplification 1.18)"),
            "{line}"
        );
        let before = stats.snapshot();
        stats.record("critical", 1, true);
        assert_eq!(RetryStats::summary_line(&before, &stats.snapshot()), None);
    }

    #[test]
    fn counts_and_amplification_are_published() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let stats = RetryStats::default();
        for _ in 0..4 {
            stats.record("critical", 1, true);
        }
        stats.record("critical", 2, false);
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || stats.publish_metrics());
        let series: Vec<(String, Vec<String>, DebugValue)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let labels = key.key().labels().map(|l| l.value().to_string()).collect();
                (key.key().name().to_string(), labels, value)
            })
            .collect();
        let find = |name: &str, labels: &[&str]| {
            series
                .iter()
                .find(|(n, l, _)| n == name && l == labels)
                .map(|(_, _, v)| v)
        };
        assert_eq!(
            find("shed_attempts_admitted_total", &["critical", "first"]),
            Some(&DebugValue::Counter(4))
        );
        assert_eq!(
            find("shed_attempts_shed_total", &["critical", "retry"]),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            find("shed_retry_amplification", &[]),
            Some(&DebugValue::Gauge(1.25.into()))
        );
    }
}
