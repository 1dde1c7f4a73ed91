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
pub struct Balancer {
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
    /// A balancer of `kind` over `replicas` replicas, all healthy, none weighted yet.
    pub fn new(
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
    /// Sets the weight held for `replica`, as a reading would: `None` is
    /// "no weight known" (the replica gets the mean of the others).
    pub fn set_weight(&self, replica: usize, weight: Option<f64>) {
        self.backends[replica].weight.set(weight);
    }

    /// Picks a replica for a request, never `exclude` (the one that just
    /// refused it). Replicas that are healthy, ready and not drained come
    /// first; if there are none, any healthy one (as Envoy's panic mode
    /// does rather than refuse everything). `None` when none is healthy.
    pub fn pick(&self, exclude: Option<usize>) -> Option<usize> {
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
    pub fn sent(&self, i: usize) {
        let b = &self.backends[i];
        b.outstanding.set(b.outstanding.get() + 1);
    }

    /// Replica `i` answered a request (or failed it).
    pub fn answered(&self, i: usize) {
        let b = &self.backends[i];
        b.outstanding.set(b.outstanding.get() - 1);
    }

    /// The health check's verdict on replica `i` changed.
    pub fn set_healthy(&self, i: usize, healthy: bool) {
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
    pub fn apply(&self, i: usize, reading: &Reading) {
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
pub fn orca_weight(header: &str) -> Option<f64> {
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
pub fn agent_check_weight(reply: &str) -> Option<f64> {
    let reply = reply.trim();
    if reply == "drain" {
        return Some(0.0);
    }
    reply
        .split([' ', ','])
        .find_map(|word| word.strip_suffix('%'))
        .and_then(|n| n.parse::<f64>().ok())
}
