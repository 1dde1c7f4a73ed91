//! The balancer in front of a fleet: which replica gets a request, from
//! what it knows — its own count of outstanding requests, the replicas'
//! health, and (refreshed periodically, late) their readiness and load
//! reports, read in the formats Envoy and HAProxy read.

use std::cell::{Cell, RefCell};

use super::config::{BalancerKind, Weights};
use super::replica::Reading;

/// What the balancer knows about one replica.
#[derive(Debug)]
struct Backend {
    /// Its health check passes: up, and not stopping.
    healthy: Cell<bool>,
    /// Its readiness, as last read (always true when readiness is off).
    ready: Cell<bool>,
    /// Requests sent to it and not answered yet.
    outstanding: Cell<u64>,
    /// Its weight from the last report read; `None` when it reported
    /// nothing usable (it then gets the mean of the others).
    weight: Cell<Option<f64>>,
    /// Smooth weighted round robin's running credit.
    credit: Cell<f64>,
}

/// The balancer. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Balancer {
    kind: BalancerKind,
    weights: Weights,
    /// Whether readiness takes replicas out of the rotation.
    readiness: bool,
    backends: Vec<Backend>,
    /// Round robin's next replica.
    cursor: Cell<usize>,
    rng: RefCell<fastrand::Rng>,
}

impl Balancer {
    pub(crate) fn new(
        kind: BalancerKind,
        weights: Weights,
        readiness: bool,
        replicas: usize,
        seed: u64,
    ) -> Self {
        Self {
            kind,
            weights,
            readiness,
            backends: (0..replicas)
                .map(|_| Backend {
                    healthy: Cell::new(true),
                    ready: Cell::new(true),
                    outstanding: Cell::new(0),
                    weight: Cell::new(None),
                    credit: Cell::new(0.0),
                })
                .collect(),
            cursor: Cell::new(0),
            rng: RefCell::new(fastrand::Rng::with_seed(seed)),
        }
    }

    /// Picks a replica for a request, never `exclude` (the one that just
    /// refused it). Replicas that are healthy, ready and not drained come
    /// first; if there are none, any healthy one (as Envoy's panic mode
    /// does rather than refuse everything). `None` when none is healthy.
    pub(crate) fn pick(&self, exclude: Option<usize>) -> Option<usize> {
        let allowed = |i: usize| Some(i) != exclude && self.backends[i].healthy.get();
        let mut candidates: Vec<usize> = (0..self.backends.len())
            .filter(|&i| allowed(i) && self.in_rotation(i))
            .collect();
        if candidates.is_empty() {
            candidates = (0..self.backends.len()).filter(|&i| allowed(i)).collect();
        }
        if candidates.is_empty() {
            return None;
        }
        let outstanding = |i: usize| self.backends[i].outstanding.get();
        let pick = match self.kind {
            BalancerKind::RoundRobin => self.next_in_turn(&candidates),
            BalancerKind::Random => candidates[self.rng.borrow_mut().usize(..candidates.len())],
            BalancerKind::LeastOutstanding => {
                // Ties go to the next in turn, so that an idle fleet is
                // not served by its first replica alone.
                let start = self.cursor.get();
                self.cursor.set(start.wrapping_add(1));
                let n = candidates.len();
                (0..n)
                    .map(|k| candidates[(start + k) % n])
                    .min_by_key(|&i| outstanding(i))
                    .expect("not empty")
            }
            BalancerKind::P2c => {
                let mut rng = self.rng.borrow_mut();
                let a = candidates[rng.usize(..candidates.len())];
                let b = candidates[rng.usize(..candidates.len())];
                if outstanding(b) < outstanding(a) {
                    b
                } else {
                    a
                }
            }
            BalancerKind::Weighted => self.smooth_weighted(&candidates),
        };
        Some(pick)
    }

    /// Whether a healthy replica is in the rotation: ready (if readiness
    /// counts) and, under agent-check weights, not drained.
    fn in_rotation(&self, i: usize) -> bool {
        let b = &self.backends[i];
        let drained =
            self.kind == BalancerKind::Weighted && b.weight.get().is_some_and(|w| w <= 0.0);
        (!self.readiness || b.ready.get()) && !drained
    }

    fn next_in_turn(&self, candidates: &[usize]) -> usize {
        let at = self.cursor.get();
        self.cursor.set(at.wrapping_add(1));
        candidates[at % candidates.len()]
    }

    /// nginx's smooth weighted round robin: each candidate earns its
    /// weight, the richest is picked and pays the total. Replicas without
    /// a weight get the mean of the others (as Envoy's client-side
    /// weighted round robin does), and all weigh the same when none has.
    fn smooth_weighted(&self, candidates: &[usize]) -> usize {
        let known: Vec<f64> = candidates
            .iter()
            .filter_map(|&i| self.backends[i].weight.get())
            .collect();
        let mean = if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        let mut total = 0.0;
        let mut best: Option<(usize, f64)> = None;
        for &i in candidates {
            let b = &self.backends[i];
            let weight = b.weight.get().unwrap_or(mean);
            total += weight;
            b.credit.set(b.credit.get() + weight);
            if best.is_none_or(|(_, credit)| b.credit.get() > credit) {
                best = Some((i, b.credit.get()));
            }
        }
        let (pick, _) = best.expect("not empty");
        let b = &self.backends[pick];
        b.credit.set(b.credit.get() - total);
        pick
    }

    /// A request is on its way to replica `i`.
    pub(crate) fn sent(&self, i: usize) {
        let b = &self.backends[i];
        b.outstanding.set(b.outstanding.get() + 1);
    }

    /// Replica `i` answered a request (or failed it).
    pub(crate) fn answered(&self, i: usize) {
        let b = &self.backends[i];
        b.outstanding.set(b.outstanding.get() - 1);
    }

    /// The health check's verdict on replica `i` changed.
    pub(crate) fn set_healthy(&self, i: usize, healthy: bool) {
        let b = &self.backends[i];
        if healthy && !b.healthy.get() {
            // A new process: what was known of the old one is stale.
            b.weight.set(None);
            b.ready.set(true);
            b.credit.set(0.0);
        }
        b.healthy.set(healthy);
    }

    /// Applies what was read from replica `i` at a refresh: its readiness,
    /// and its weight from its load report in the configured format.
    pub(crate) fn apply(&self, i: usize, reading: &Reading) {
        let b = &self.backends[i];
        b.ready.set(reading.ready);
        if self.kind != BalancerKind::Weighted {
            return;
        }
        let weight = reading
            .report
            .as_ref()
            .and_then(|report| match self.weights {
                Weights::Orca => orca_weight(&report.orca_text()),
                Weights::AgentCheck => {
                    agent_check_weight(&report.agent_check_reply(reading.ready || !self.readiness))
                }
            });
        b.weight.set(weight);
    }
}

/// The weight Envoy's client-side weighted round robin gives an endpoint
/// from its ORCA report: `rps_fractional / (application_utilization +
/// eps / rps_fractional × penalty)`, penalty 1 (Envoy's default). `None`
/// when the report cannot weigh it (no requests, or no utilization), like
/// an endpoint without a report.
pub(crate) fn orca_weight(header: &str) -> Option<f64> {
    let fields = header.strip_prefix("TEXT ")?;
    let field = |name: &str| {
        fields
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<f64>().ok())
    };
    let rps = field("rps_fractional")?;
    let utilization = field("application_utilization")?;
    let eps = field("eps").unwrap_or(0.0);
    if rps <= 0.0 || utilization <= 0.0 {
        return None;
    }
    Some(rps / (utilization + eps / rps))
}

/// The weight HAProxy takes from an agent-check reply: `up NN%` gives
/// NN, `drain` gives 0 (no new requests).
pub(crate) fn agent_check_weight(reply: &str) -> Option<f64> {
    let reply = reply.trim();
    if reply == "drain" {
        return Some(0.0);
    }
    reply
        .split([' ', ','])
        .find_map(|word| word.strip_suffix('%'))
        .and_then(|n| n.parse::<f64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orca_weights_are_throughput_per_utilization_less_errors() {
        let header = "TEXT application_utilization=0.5,rps_fractional=400,eps=0,\
                      named_metrics.shed_occupancy=0.5";
        assert_eq!(orca_weight(header), Some(800.0));
        let refusing = "TEXT application_utilization=2,rps_fractional=100,eps=100";
        assert_eq!(orca_weight(refusing), Some(100.0 / 3.0));
        assert_eq!(
            orca_weight("TEXT application_utilization=0,rps_fractional=0,eps=0"),
            None
        );
    }

    #[test]
    fn agent_check_weights_are_the_percentage_and_drain_is_zero() {
        assert_eq!(agent_check_weight("up 40%\n"), Some(40.0));
        assert_eq!(agent_check_weight("drain\n"), Some(0.0));
        assert_eq!(agent_check_weight("up\n"), None);
    }

    #[test]
    fn smooth_weighted_round_robin_follows_the_weights_evenly() {
        let balancer = Balancer::new(BalancerKind::Weighted, Weights::Orca, false, 3, 1);
        balancer.backends[0].weight.set(Some(3.0));
        balancer.backends[1].weight.set(Some(1.0));
        // Replica 2 has no weight: it gets the mean, 2.
        let picks: Vec<usize> = (0..12).map(|_| balancer.pick(None).unwrap()).collect();
        let count = |r| picks.iter().filter(|&&p| p == r).count();
        assert_eq!((count(0), count(1), count(2)), (6, 2, 4));
        assert!(
            picks.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
            "spread out: {picks:?}"
        );
    }

    #[test]
    fn least_outstanding_and_p2c_avoid_the_busy_replica() {
        for kind in [BalancerKind::LeastOutstanding, BalancerKind::P2c] {
            let balancer = Balancer::new(kind, Weights::Orca, false, 2, 7);
            for _ in 0..5 {
                balancer.sent(0);
            }
            let to_busy = (0..20).filter(|_| balancer.pick(None) == Some(0)).count();
            assert!(
                to_busy <= 8,
                "{kind:?} sent {to_busy} of 20 to the busy one"
            );
            assert_eq!(balancer.pick(Some(1)), Some(0), "a retry goes elsewhere");
        }
    }

    #[test]
    fn unhealthy_replicas_get_nothing_and_not_ready_ones_only_in_panic() {
        let balancer = Balancer::new(BalancerKind::RoundRobin, Weights::Orca, true, 2, 1);
        balancer.set_healthy(0, false);
        assert!((0..4).all(|_| balancer.pick(None) == Some(1)));
        assert_eq!(balancer.pick(Some(1)), None);
        balancer.set_healthy(0, true);
        let not_ready = Reading {
            report: None,
            ready: false,
        };
        balancer.apply(1, &not_ready);
        assert!((0..4).all(|_| balancer.pick(None) == Some(0)));
        balancer.apply(0, &not_ready);
        assert!(
            balancer.pick(None).is_some(),
            "all not ready: any healthy one"
        );
    }
}
