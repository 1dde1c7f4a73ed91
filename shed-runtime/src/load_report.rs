//! Load reports for the balancers people already run: what this
//! instance's limiter says about its load, in the formats they read.
//!
//! Shedding stays per instance; spreading load across instances belongs to
//! the balancer. A balancer that knows each instance's load sends less to
//! the busy and slow ones, so fewer requests reach an instance only to be
//! refused there:
//!
//! - ORCA (Open Request Cost Aggregation), read by Envoy's client-side
//!   weighted round robin and by gRPC's weighted round robin: the
//!   `endpoint-load-metrics` response header in its `TEXT` or `JSON` form
//!   ([`LoadReport::orca_text`], [`LoadReport::orca_json`]), or the
//!   `endpoint-load-metrics-bin` gRPC trailer ([`LoadReport::orca_proto`]).
//! - HAProxy's agent check: a line such as `up 80%` or `drain`
//!   ([`LoadReport::agent_check_reply`]).
//!
//! What is reported: `application_utilization` is the weight in flight
//! over the capacity, averaged over the reports asked for during the last
//! interval (one per response when every response carries one);
//! `rps_fractional`
//! the admissions per second and `eps` the refusals per second over the
//! last interval (Envoy's weighted round robin divides the first by the
//! utilization and penalises the last, so the weight estimates what the
//! instance can serve); named metrics `shed_occupancy`,
//! `shed_refused_share`, `shed_queued` and `shed_capacity`.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::Limiter;

/// One report of an instance's load, made by a [`LoadReporter`], in the
/// formats balancers read: ORCA ([`LoadReport::orca_text`],
/// [`LoadReport::orca_json`], [`LoadReport::orca_proto`]) and HAProxy's
/// agent check ([`LoadReport::agent_check_reply`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadReport {
    /// The busy share of the slots: weight in flight over the capacity,
    /// averaged over the reports asked for during the last interval. A
    /// balancer divides the admission rate by it to estimate what the
    /// instance can serve, so it leaves the queue out: a queue swings from
    /// empty to full around the capacity, and counted here it made one
    /// full queue cut an instance's weight fivefold, starving it in the
    /// next interval and overloading it in the one after (the lab's
    /// `fleet-slow-replica`). Queueing shows as refusals (`eps`) and as
    /// `shed_queued`.
    pub utilization: f64,
    /// Weight in flight over the capacity, averaged as `utilization` is.
    pub occupancy: f64,
    /// Admissions per second over the last interval.
    pub rps: f64,
    /// Refusals per second over the last interval.
    pub eps: f64,
    /// Refusals among the calls that asked, over the last interval.
    pub refused_share: f64,
    /// Calls waiting for slots now.
    pub queued: usize,
    /// The limiter's capacity now.
    pub capacity: u32,
}

/// A finite, non-negative number, as ORCA requires.
fn orca_value(value: f64) -> f64 {
    if value.is_finite() && value > 0.0 {
        value
    } else {
        0.0
    }
}

impl LoadReport {
    fn named(&self) -> [(&'static str, f64); 4] {
        [
            ("shed_occupancy", self.occupancy),
            ("shed_refused_share", self.refused_share),
            ("shed_queued", self.queued as f64),
            ("shed_capacity", self.capacity as f64),
        ]
    }

    /// The `endpoint-load-metrics` header value in ORCA's `TEXT` form.
    pub fn orca_text(&self) -> String {
        let mut out = format!(
            "TEXT application_utilization={},rps_fractional={},eps={}",
            orca_value(self.utilization),
            orca_value(self.rps),
            orca_value(self.eps)
        );
        for (name, value) in self.named() {
            let _ = write!(out, ",named_metrics.{name}={}", orca_value(value));
        }
        out
    }

    /// The `endpoint-load-metrics` header value in ORCA's `JSON` form.
    pub fn orca_json(&self) -> String {
        let named: serde_json::Map<String, serde_json::Value> = self
            .named()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), orca_value(value).into()))
            .collect();
        let report = serde_json::json!({
            "application_utilization": orca_value(self.utilization),
            "rps_fractional": orca_value(self.rps),
            "eps": orca_value(self.eps),
            "named_metrics": named,
        });
        format!("JSON {report}")
    }

    /// The report as an `xds.data.orca.v3.OrcaLoadReport` protobuf message,
    /// for the `endpoint-load-metrics-bin` gRPC trailer (gRPC metadata
    /// base64-encodes `-bin` values itself).
    pub fn orca_proto(&self) -> Vec<u8> {
        /// Field numbers of `OrcaLoadReport`.
        const RPS_FRACTIONAL: u32 = 6;
        const EPS: u32 = 7;
        const NAMED_METRICS: u32 = 8;
        const APPLICATION_UTILIZATION: u32 = 9;
        let mut out = Vec::with_capacity(128);
        proto::double(&mut out, RPS_FRACTIONAL, orca_value(self.rps));
        proto::double(&mut out, EPS, orca_value(self.eps));
        for (name, value) in self.named() {
            proto::map_entry(&mut out, NAMED_METRICS, name, orca_value(value));
        }
        proto::double(
            &mut out,
            APPLICATION_UTILIZATION,
            orca_value(self.utilization),
        );
        out
    }

    /// HAProxy's agent-check reply: `drain` when the instance is not ready
    /// (its readiness check says the balancer should move traffic away),
    /// else `up` with a weight: the share of calls it did not refuse over
    /// the last interval, from 1% to 100%. An instance refusing half of
    /// what it is sent gets half the weight, until it refuses nothing.
    pub fn agent_check_reply(&self, ready: bool) -> String {
        if !ready {
            return "drain\n".to_owned();
        }
        let weight = ((1.0 - self.refused_share) * 100.0)
            .round()
            .clamp(1.0, 100.0);
        format!("up {weight}%\n")
    }
}

/// The few protobuf encodings an `OrcaLoadReport` needs.
mod proto {
    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
        varint(out, u64::from(field) << 3 | u64::from(wire_type));
    }

    /// A `double` field; zero is left out, as proto3 does.
    pub(super) fn double(out: &mut Vec<u8>, field: u32, value: f64) {
        if value != 0.0 {
            key(out, field, 1);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// One entry of a `map<string, double>` field.
    pub(super) fn map_entry(out: &mut Vec<u8>, field: u32, name: &str, value: f64) {
        let mut entry = Vec::with_capacity(name.len() + 12);
        key(&mut entry, 1, 2);
        varint(&mut entry, name.len() as u64);
        entry.extend_from_slice(name.as_bytes());
        key(&mut entry, 2, 1);
        entry.extend_from_slice(&value.to_le_bytes());
        key(out, field, 2);
        varint(out, entry.len() as u64);
        out.extend_from_slice(&entry);
    }
}

/// Makes [`LoadReport`]s of a limiter, refreshing the rates at most once
/// per interval, so that attaching a report to every response costs a
/// lock and a copy, not a pass over the limiter's counters.
#[derive(Debug)]
pub struct LoadReporter {
    limiter: Limiter,
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    at: Instant,
    admitted: u64,
    refused: u64,
    report: LoadReport,
    /// Occupancy seen by each report asked for since the last refresh:
    /// a balancer divides an interval's rate by the utilization, so one
    /// instant's occupancy (0 to 8 of 8 slots, say) would make the weight
    /// jump with the noise of a single sample.
    occupancy_sum: f64,
    samples: u32,
}

fn totals(limiter: &Limiter) -> (u64, u64, crate::LimiterStats) {
    let stats = limiter.stats();
    let admitted = stats.classes.iter().map(|c| c.admitted).sum();
    let refused = stats
        .classes
        .iter()
        .flat_map(|c| c.refused.iter().map(|(_, n)| *n))
        .sum();
    (admitted, refused, stats)
}

impl LoadReporter {
    /// A reporter of `limiter` whose rates cover the last second.
    pub fn new(limiter: Limiter) -> Self {
        let (admitted, refused, stats) = totals(&limiter);
        let report = LoadReport {
            utilization: 0.0,
            occupancy: 0.0,
            rps: 0.0,
            eps: 0.0,
            refused_share: 0.0,
            queued: stats.queued,
            capacity: stats.capacity,
        };
        Self {
            limiter,
            interval: Duration::from_secs(1),
            state: Mutex::new(State {
                at: Instant::now(),
                admitted,
                refused,
                report,
                occupancy_sum: 0.0,
                samples: 0,
            }),
        }
    }

    /// How long the rates are measured over (and how often they change).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(10));
        self
    }

    /// The current report, as of the last refresh: occupancy averaged over
    /// the reports asked for in the interval before it (this one
    /// included), queue at the refresh, rates over that interval.
    pub fn report(&self) -> LoadReport {
        let occupancy = self.limiter.in_flight() as f64 / f64::from(self.limiter.capacity().max(1));
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.occupancy_sum += occupancy;
        state.samples += 1;
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.at);
        if elapsed >= self.interval {
            let (admitted, refused, stats) = totals(&self.limiter);
            let (admitted_now, refused_now) = (
                admitted.saturating_sub(state.admitted),
                refused.saturating_sub(state.refused),
            );
            let seconds = elapsed.as_secs_f64();
            let occupancy = state.occupancy_sum / f64::from(state.samples);
            state.report = LoadReport {
                utilization: occupancy,
                occupancy,
                rps: admitted_now as f64 / seconds,
                eps: refused_now as f64 / seconds,
                refused_share: match admitted_now + refused_now {
                    0 => 0.0,
                    asked => refused_now as f64 / asked as f64,
                },
                queued: stats.queued,
                capacity: stats.capacity,
            };
            state.at = now;
            state.admitted = admitted;
            state.refused = refused;
            state.occupancy_sum = 0.0;
            state.samples = 0;
        }
        state.report.clone()
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    fn sample() -> LoadReport {
        LoadReport {
            utilization: 1.25,
            occupancy: 1.0,
            rps: 400.0,
            eps: 100.0,
            refused_share: 0.2,
            queued: 8,
            capacity: 32,
        }
    }

    #[test]
    fn orca_text_is_what_envoy_parses() {
        assert_eq!(
            sample().orca_text(),
            "TEXT application_utilization=1.25,rps_fractional=400,eps=100,\
             named_metrics.shed_occupancy=1,named_metrics.shed_refused_share=0.2,\
             named_metrics.shed_queued=8,named_metrics.shed_capacity=32"
        );
    }

    #[test]
    fn orca_json_carries_the_same_fields() {
        let text = sample().orca_json();
        let json: serde_json::Value =
            serde_json::from_str(text.strip_prefix("JSON ").unwrap()).unwrap();
        assert_eq!(json["application_utilization"], 1.25);
        assert_eq!(json["rps_fractional"], 400.0);
        assert_eq!(json["eps"], 100.0);
        assert_eq!(json["named_metrics"]["shed_queued"], 8.0);
    }

    #[test]
    fn orca_values_are_never_negative_or_nan() {
        let mut report = sample();
        report.utilization = f64::NAN;
        report.eps = -1.0;
        assert!(report
            .orca_text()
            .starts_with("TEXT application_utilization=0,rps_fractional=400,eps=0,"));
    }

    #[test]
    fn orca_proto_matches_a_report_from_grpc_go() {
        // A report grpc-go sends (rps_fractional 100, eps 2, named rif=4),
        // as captured in Envoy's ORCA parser tests, minus its cpu field.
        let encoded = [
            0x31, 0, 0, 0, 0, 0, 0, 0x59, 0x40, // rps_fractional = 100
            0x39, 0, 0, 0, 0, 0, 0, 0, 0x40, // eps = 2
            0x42, 0x0e, 0x0a, 0x03, b'r', b'i', b'f', 0x11, 0, 0, 0, 0, 0, 0, 0x10,
            0x40, // named_metrics { "rif": 4 }
        ];
        let mut out = Vec::new();
        proto::double(&mut out, 6, 100.0);
        proto::double(&mut out, 7, 2.0);
        proto::map_entry(&mut out, 8, "rif", 4.0);
        assert_eq!(out, encoded);
        let full = sample().orca_proto();
        assert_eq!(full[..9], [0x31, 0, 0, 0, 0, 0, 0, 0x79, 0x40]); // 400
        assert_eq!(
            full[full.len() - 9..],
            [0x49, 0, 0, 0, 0, 0, 0, 0xf4, 0x3f] // application_utilization = 1.25
        );
    }

    #[test]
    fn agent_check_weights_follow_what_was_not_refused() {
        assert_eq!(sample().agent_check_reply(true), "up 80%\n");
        assert_eq!(sample().agent_check_reply(false), "drain\n");
        let mut all_refused = sample();
        all_refused.refused_share = 1.0;
        assert_eq!(all_refused.agent_check_reply(true), "up 1%\n");
    }

    #[tokio::test(start_paused = true)]
    async fn rates_cover_the_last_interval() {
        // Calls that find the limiter full are refused at once.
        let limiter = Limiter::builder()
            .capacity(2)
            .classes([crate::ClassSpec::new("critical", 0).max_wait(Duration::ZERO)])
            .build()
            .unwrap();
        let reporter = LoadReporter::new(limiter.clone()).interval(Duration::from_secs(1));
        let a = limiter.acquire("critical", 1, "a").await.unwrap();
        let b = limiter.acquire("critical", 1, "b").await.unwrap();
        for _ in 0..3 {
            assert!(limiter.acquire("critical", 1, "c").await.is_err());
        }
        assert_eq!(
            reporter.report().rps,
            0.0,
            "not refreshed within the interval"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        let report = reporter.report();
        assert_eq!((report.rps, report.eps), (2.0, 3.0));
        assert_eq!(report.refused_share, 0.6);
        assert_eq!((report.occupancy, report.utilization), (1.0, 1.0));
        assert_eq!(report.agent_check_reply(true), "up 40%\n");
        drop((a, b));
    }

    #[tokio::test(start_paused = true)]
    async fn utilization_averages_the_occupancy_each_report_saw_and_leaves_the_queue_out() {
        let limiter = Limiter::builder()
            .capacity(4)
            .classes([crate::ClassSpec::new("critical", 0).max_wait(Duration::from_secs(60))])
            .build()
            .unwrap();
        let reporter = LoadReporter::new(limiter.clone()).interval(Duration::from_secs(1));
        let mut held = Vec::new();
        // Responses leave with 0, 1 and 2 of the 4 slots taken.
        for _ in 0..3 {
            reporter.report();
            held.push(limiter.acquire("critical", 1, "a").await.unwrap());
        }
        // At the refresh, all 4 are taken and 4 calls wait.
        held.push(limiter.acquire("critical", 1, "a").await.unwrap());
        let waiting: Vec<_> = (0..4)
            .map(|_| tokio::spawn(limiter.acquire("critical", 1, "b")))
            .collect();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(limiter.stats().queued, 4);
        let report = reporter.report();
        // (0 + 0.25 + 0.5 + 1) / 4 samples.
        assert_eq!(report.utilization, 0.4375);
        assert_eq!(report.occupancy, report.utilization);
        assert_eq!(report.queued, 4);
        drop(held);
        for w in waiting {
            drop(w.await.unwrap().unwrap());
        }
    }
}
