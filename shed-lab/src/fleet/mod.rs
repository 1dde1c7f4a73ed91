//! A fleet: the scenario's traffic spread by a balancer over replicas,
//! each with its own admission (the real limiter under `shed`) and its
//! own server model, in virtual time.
//!
//! Shedding stays per replica; the balancer is one of those people run
//! (see [`BalancerKind`]) and reads what shed gives it: ORCA load reports
//! or HAProxy agent-check replies (made by the runtime's own
//! [`shed::LoadReporter`]), readiness ([`shed::Readiness`]) and refusals
//! it may retry on another replica. Replicas slow down, die, stop and
//! start cold as the `[[fleet.event]]` tables say; the best possible
//! goodput is measured against the capacity of the replicas actually
//! present.

pub mod balancer;
pub mod config;
pub mod replica;
pub mod report;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use shed::Policy;
use tokio::time::Instant;

pub use config::{Action, BalancerKind, FleetConfig, FleetEvent, Weights};
pub use report::{table, FleetReport, FleetSecond, ReplicaCounts};

use crate::report::{Tally, TICK};
use crate::scenario::Scenario;
use crate::{PolicyKind, Report};
use balancer::Balancer;
use replica::{Refusal, Replica};

/// How long, after arrivals stop, the run waits for work in progress.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Runs a scenario with a `[fleet]` table under `policy` on every replica,
/// every stream's rate multiplied by `factor`. Deterministic.
///
/// # Panics
///
/// If the scenario has no `[fleet]` table.
pub fn run(scenario: &Scenario, policy: PolicyKind, factor: f64) -> FleetReport {
    assert!(
        scenario.fleet.is_some(),
        "a fleet run needs a [fleet] table"
    );
    fastrand::seed(scenario.seed ^ 0x7e7a_a17e);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, simulate(scenario.clone(), policy, factor))
}

/// Runs the scenario under each policy with each balancer, with and
/// without the balancer's retry, on the same traffic.
pub fn compare(scenario: &Scenario, policies: &[PolicyKind], factor: f64) -> Vec<FleetReport> {
    let mut reports = Vec::new();
    for balancer in BalancerKind::ALL {
        for retry in [false, true] {
            for &policy in policies {
                let mut variant = scenario.clone();
                let fleet = variant.fleet.as_mut().expect("a [fleet] table");
                fleet.balancer = balancer;
                fleet.retry = retry;
                reports.push(run(&variant, policy, factor));
            }
        }
    }
    reports
}

struct Stream {
    rps: Cell<f64>,
    service_factor: Cell<f64>,
    max_wait: Duration,
    policy: &'static Policy,
}

struct Sim {
    scenario: Scenario,
    fleet: FleetConfig,
    policy: PolicyKind,
    replicas: Vec<Replica>,
    /// Whether each replica is in service (up and not stopping): what the
    /// best possible goodput counts.
    present: Vec<Cell<bool>>,
    balancer: Balancer,
    streams: Vec<Stream>,
    tallies: Vec<RefCell<Tally>>,
    counts: Vec<RefCell<ReplicaCounts>>,
    balancer_retries: Cell<u64>,
    /// The best possible goodput per tick of the window, in requests.
    ideal: RefCell<Vec<f64>>,
    service_rng: RefCell<fastrand::Rng>,
    start: Instant,
    window_end: Instant,
    load_end: Instant,
    outstanding: Cell<u64>,
}

async fn simulate(scenario: Scenario, policy: PolicyKind, factor: f64) -> FleetReport {
    let fleet = scenario.fleet.clone().expect("checked by run");
    let start = Instant::now() + scenario.warmup.map_or(Duration::ZERO, |w| w.0);
    let window_end = start + Duration::from_secs_f64(scenario.seconds);
    let longest_timeout = scenario
        .traffic
        .iter()
        .map(|t| t.timeout.0)
        .max()
        .unwrap_or_default();
    let specs = scenario.class_specs();
    let streams = scenario
        .traffic
        .iter()
        .enumerate()
        .map(|(i, t)| Stream {
            rps: Cell::new(t.rps * factor),
            service_factor: Cell::new(1.0),
            max_wait: t.max_wait.map(|d| d.0).unwrap_or_else(|| {
                specs
                    .iter()
                    .find(|s| s.name() == t.class)
                    .map_or(Duration::from_millis(50), |s| s.default_max_wait())
            }),
            policy: Policy::leak(
                format!("traffic#{}", i + 1),
                t.class.clone(),
                t.max_wait.map(|d| d.0),
                t.weight,
            ),
        })
        .collect();
    let sim = Rc::new(Sim {
        replicas: (0..fleet.replicas)
            .map(|_| Replica::running(&scenario, policy, fleet.refresh()))
            .collect(),
        present: (0..fleet.replicas).map(|_| Cell::new(true)).collect(),
        balancer: Balancer::new(
            fleet.balancer,
            fleet.weights,
            fleet.readiness,
            fleet.replicas,
            scenario.seed ^ 0xba1a_ce00,
        ),
        streams,
        tallies: scenario
            .traffic
            .iter()
            .map(|_| RefCell::default())
            .collect(),
        counts: (0..fleet.replicas).map(|_| RefCell::default()).collect(),
        balancer_retries: Cell::new(0),
        ideal: RefCell::new(Vec::new()),
        service_rng: RefCell::new(fastrand::Rng::with_seed(scenario.seed ^ 0x5eed_5e41)),
        start,
        window_end,
        load_end: window_end + longest_timeout,
        outstanding: Cell::new(0),
        policy,
        fleet,
        scenario,
    });

    for event in sim.scenario.events.clone() {
        let sim = sim.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep_until(start + event.at.0).await;
            for (i, t) in sim.scenario.traffic.iter().enumerate() {
                if event.class.as_ref().is_some_and(|c| *c != t.class) {
                    continue;
                }
                if let Some(f) = event.service_factor {
                    sim.streams[i].service_factor.set(f);
                }
                if let Some(rps) = event.rps {
                    sim.streams[i].rps.set(rps * factor);
                }
            }
        });
    }
    for event in sim.fleet.events.clone() {
        tokio::task::spawn_local(fleet_event(sim.clone(), event, longest_timeout));
    }
    tokio::task::spawn_local(refresh(sim.clone()));
    tokio::task::spawn_local(measure_ideal(sim.clone()));
    for stream in 0..sim.streams.len() {
        tokio::task::spawn_local(arrivals(sim.clone(), stream));
    }

    tokio::time::sleep_until(sim.load_end).await;
    let drain_end = sim.load_end + DRAIN_LIMIT;
    while sim.outstanding.get() > 0 && Instant::now() < drain_end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sim.report(factor)
}

/// Applies a fleet event at its time.
async fn fleet_event(sim: Rc<Sim>, event: FleetEvent, grace: Duration) {
    tokio::time::sleep_until(sim.start + event.at.0).await;
    let i = event.replica;
    let replica = &sim.replicas[i];
    match event.action {
        Action::Slow => replica.slow_down(event.factor.expect("validated")),
        Action::Lose => {
            replica.lose();
            sim.present[i].set(false);
            // The balancer's health check notices later.
            let sim = sim.clone();
            tokio::task::spawn_local(async move {
                tokio::time::sleep(sim.fleet.detect()).await;
                if !sim.replicas[i].is_up() {
                    sim.balancer.set_healthy(i, false);
                }
            });
        }
        Action::Stop => {
            // Out of the rotation first; what it holds gets until the
            // longest client timeout to finish.
            sim.balancer.set_healthy(i, false);
            sim.present[i].set(false);
            tokio::time::sleep(grace).await;
            if !sim.present[i].get() {
                sim.replicas[i].lose();
            }
        }
        Action::Start => {
            replica.start(&sim.scenario, sim.policy, sim.fleet.refresh());
            sim.present[i].set(true);
            sim.balancer.set_healthy(i, true);
        }
    }
}

/// Every `refresh`, reads each replica's readiness and load report; the
/// balancer gets them `delay` later.
async fn refresh(sim: Rc<Sim>) {
    let mut tick = tokio::time::interval(sim.fleet.refresh());
    loop {
        tick.tick().await;
        if Instant::now() >= sim.load_end {
            return;
        }
        for i in 0..sim.replicas.len() {
            let Some(reading) = sim.replicas[i].read() else {
                continue;
            };
            let sim = sim.clone();
            tokio::task::spawn_local(async move {
                tokio::time::sleep(sim.fleet.delay()).await;
                sim.balancer.apply(i, &reading);
            });
        }
    }
}

/// Samples, every tick of the window, the best goodput possible: what is
/// offered, or the capacity of the replicas present at their current
/// speed if less.
async fn measure_ideal(sim: Rc<Sim>) {
    // Mid-tick samples stand for the tick.
    tokio::time::sleep_until(sim.start + TICK / 2).await;
    let mut tick = tokio::time::interval(TICK);
    let per_replica = sim.scenario.capacity_rps();
    loop {
        tick.tick().await;
        if Instant::now() >= sim.window_end {
            return;
        }
        let offered: f64 = sim.streams.iter().map(|s| s.rps.get()).sum();
        // The mix's service times, as the traffic events set them.
        let slowdown = sim.mean_service_factor();
        let capacity: f64 = (0..sim.replicas.len())
            .filter(|&i| sim.present[i].get())
            .map(|i| {
                let replica = &sim.replicas[i];
                let cold = sim
                    .fleet
                    .cold_factor_at(replica.uptime().unwrap_or_default());
                per_replica / (slowdown * replica.slow_factor() * cold)
            })
            .sum();
        sim.ideal
            .borrow_mut()
            .push(offered.min(capacity) * TICK.as_secs_f64());
    }
}

/// Sends a stream's requests, open loop.
async fn arrivals(sim: Rc<Sim>, stream: usize) {
    let traffic = &sim.scenario.traffic[stream];
    let mut rng = fastrand::Rng::with_seed(sim.scenario.seed.wrapping_add(stream as u64 * 7919));
    let mut next = Instant::now();
    loop {
        let rps = sim.streams[stream].rps.get();
        next += traffic.arrivals.gap(rps, &mut rng);
        if next >= sim.load_end {
            return;
        }
        tokio::time::sleep_until(next).await;
        if rps > 0.0 {
            tokio::task::spawn_local(request(sim.clone(), stream));
        }
    }
}

/// One request through the balancer, from its client's point of view.
async fn request(sim: Rc<Sim>, stream: usize) {
    let traffic = &sim.scenario.traffic[stream];
    let arrival = Instant::now();
    let deadline = arrival + traffic.timeout.0;
    let counted = (sim.start..sim.window_end).contains(&arrival);
    if counted {
        sim.tallies[stream]
            .borrow_mut()
            .offer(false, arrival - sim.start);
    }
    sim.outstanding.set(sim.outstanding.get() + 1);
    // The replica that refused the first try, and why.
    let mut refused: Option<(usize, Refusal)> = None;
    let outcome = loop {
        let Some(i) = sim.balancer.pick(refused.as_ref().map(|(i, _)| *i)) else {
            break Err(refused.map_or_else(|| Refusal::new("no replica", false), |(_, r)| r));
        };
        sim.balancer.sent(i);
        let result = sim.replicas[i]
            .serve(
                sim.streams[stream].policy,
                sim.streams[stream].max_wait,
                traffic.deadline.then_some(deadline),
                |slow, uptime| sim.service_time(stream, slow, uptime),
            )
            .await;
        sim.balancer.answered(i);
        let now = Instant::now();
        if counted {
            let mut counts = sim.counts[i].borrow_mut();
            counts.sent += 1;
            match &result {
                Ok(()) if now <= deadline => counts.served_in_time += 1,
                Ok(()) => counts.late += 1,
                Err(_) => counts.refused += 1,
            }
        }
        match result {
            Err(refusal)
                if refusal.retryable && sim.fleet.retry && refused.is_none() && now < deadline =>
            {
                refused = Some((i, refusal));
                if counted {
                    sim.balancer_retries.set(sim.balancer_retries.get() + 1);
                }
            }
            other => break other,
        }
    };
    let done = Instant::now();
    sim.outstanding.set(sim.outstanding.get() - 1);
    if !counted {
        return;
    }
    let mut tally = sim.tallies[stream].borrow_mut();
    match outcome {
        Ok(()) => tally.served(done - arrival, done <= deadline, arrival - sim.start),
        Err(refusal) => tally.shed(&refusal.reason),
    }
}

impl Sim {
    /// The service time of a request of `stream` on a replica slowed by
    /// `slow` whose process has run for `uptime`, drawn now.
    fn service_time(&self, stream: usize, slow: f64, uptime: Duration) -> Duration {
        let traffic = &self.scenario.traffic[stream];
        let mean = traffic.service.0.as_secs_f64()
            * self.streams[stream].service_factor.get()
            * slow
            * self.fleet.cold_factor_at(uptime);
        let seconds = traffic
            .service_dist
            .draw(mean, &mut self.service_rng.borrow_mut());
        Duration::from_secs_f64(seconds)
    }

    /// The streams' service-time factor, weighted by their slot-seconds.
    fn mean_service_factor(&self) -> f64 {
        let base: Vec<f64> = self
            .scenario
            .traffic
            .iter()
            .map(|t| t.rps * t.service.0.as_secs_f64() * f64::from(t.weight))
            .collect();
        let total: f64 = base.iter().sum();
        base.iter()
            .zip(&self.streams)
            .map(|(b, s)| b * s.service_factor.get())
            .sum::<f64>()
            / total
    }

    fn report(&self, factor: f64) -> FleetReport {
        let seconds = self.scenario.seconds;
        let mut by_class: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, t) in self.scenario.traffic.iter().enumerate() {
            by_class.entry(t.class.clone()).or_default().push(i);
        }
        let tallies: Vec<_> = self.tallies.iter().map(RefCell::borrow).collect();
        let classes = by_class
            .into_iter()
            .map(|(class, streams)| {
                let merged =
                    Tally::merge(&streams.iter().map(|&i| &*tallies[i]).collect::<Vec<_>>());
                (class, merged.counts(seconds))
            })
            .collect();
        let all = Tally::merge(&tallies.iter().map(|t| &**t).collect::<Vec<_>>());
        let ideal = self.ideal.borrow();
        let ticks_per_second = (Duration::from_secs(1).as_nanos() / TICK.as_nanos()) as usize;
        let per_second = |ticks: &[u64], second: usize| -> u64 {
            ticks
                .iter()
                .skip(second * ticks_per_second)
                .take(ticks_per_second)
                .sum()
        };
        let whole_seconds = seconds.ceil() as usize;
        let timeline: Vec<FleetSecond> = (0..whole_seconds)
            .map(|second| FleetSecond {
                second: second as u32,
                served_in_time: per_second(&all.per_tick, second),
                ideal: ideal
                    .iter()
                    .skip(second * ticks_per_second)
                    .take(ticks_per_second)
                    .sum(),
            })
            .collect();
        let capacity = self.scenario.capacity_rps() * self.replicas.len() as f64;
        let report = Report {
            scenario: self.scenario.name.clone(),
            policy: self.policy.name().to_string(),
            factor,
            seconds,
            capacity_rps: (capacity * 10.0).round() / 10.0,
            total: all.counts(seconds),
            classes,
            timeline: timeline
                .iter()
                .map(|s| crate::report::Second {
                    second: s.second,
                    served_in_time: s.served_in_time,
                    offered: per_second(&all.offered_per_tick, s.second as usize),
                    limit: None,
                })
                .collect(),
            adaptive: None,
            clients: None,
            tenants: None,
            limit_direction_changes: None,
            shedding_transitions: None,
            phases: Vec::new(),
        };
        FleetReport {
            balancer: self.fleet.balancer.name().to_string(),
            retry: self.fleet.retry,
            readiness: self.fleet.readiness,
            report,
            ideal_rps: (ideal.iter().sum::<f64>() / seconds * 10.0).round() / 10.0,
            balancer_retries: self.balancer_retries.get(),
            replicas: self.counts.iter().map(|c| c.borrow().clone()).collect(),
            timeline,
        }
    }
}
