//! The simulator: open-loop traffic against a server with a fixed number
//! of slots, in virtual time, under one of four admission policies.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use shed::{Config, Mode, Policy};
use tokio::time::Instant;

use crate::admission::{Admission, Call, Refused};
use crate::report::{phase_reports, Report, Tally, TICK};
use crate::scenario::{RetryDelay, Scenario};
use crate::server::Server;

mod requests;

/// How the simulated server admits calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// An unbounded FIFO queue behind the slots; nothing is refused.
    None,
    /// tower's `LoadShed` + `ConcurrencyLimit`: refuse whenever every slot
    /// is busy; never queue. (tower has no weights: each call takes one slot.)
    RejectWhenFull,
    /// The first seed's rule: FIFO behind the slots, refuse a call that
    /// waited longer than its `max_wait` once it gets its slots.
    QueueWait,
    /// This library: the scenario's classes, priorities, shares, budgets
    /// and deadlines on the real limiter.
    Shed,
}

impl PolicyKind {
    /// Every policy, in the order `--compare` shows them.
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::None,
        PolicyKind::RejectWhenFull,
        PolicyKind::QueueWait,
        PolicyKind::Shed,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::None => "none",
            PolicyKind::RejectWhenFull => "reject-when-full",
            PolicyKind::QueueWait => "queue-wait",
            PolicyKind::Shed => "shed",
        }
    }
}

impl FromStr for PolicyKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("unknown policy `{s}`: expected one of none, reject-when-full, queue-wait, shed")
            })
    }
}

/// How long, after arrivals stop, the run waits for work in progress.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Runs `scenario` under `policy` with every stream's rate multiplied by
/// `factor`. Deterministic: the same inputs give the same report.
pub fn run(scenario: &Scenario, policy: PolicyKind, factor: f64) -> Report {
    if scenario.fleet.is_some() {
        return crate::fleet::run(scenario, policy, factor).report;
    }
    // The runtime's retry-after jitter draws from this thread's generator:
    // seeded, so that a scenario and seed give the same run every time.
    fastrand::seed(scenario.seed ^ 0x7e7a_a17e);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, simulate(scenario.clone(), policy, factor))
}

struct Stream {
    rps: Cell<f64>,
    service_factor: Cell<f64>,
    /// The queue-wait budget: the stream's own or its class's.
    max_wait: Duration,
}

struct Sim {
    scenario: Scenario,
    admission: Admission,
    /// Each stream's guarded fn, as `#[shed]` would declare it.
    policies: Vec<&'static Policy>,
    server: Server,
    streams: Vec<Stream>,
    tallies: Vec<RefCell<Tally>>,
    service_rng: RefCell<fastrand::Rng>,
    /// The start of the measured window (after the warm-up).
    start: Instant,
    /// Calls that arrive from `start` until here are counted.
    window_end: Instant,
    /// Traffic stops here: after the window, for the longest timeout.
    load_end: Instant,
    outstanding: Cell<u64>,
    /// The clients' retry policies, if the scenario has `[clients]`.
    clients: Option<crate::retries::Clients>,
    /// Every call's tenant, if the scenario has `[tenants]`.
    tenants: Option<crate::tenants::Tenants>,
}

async fn simulate(scenario: Scenario, policy: PolicyKind, factor: f64) -> Report {
    let start = Instant::now() + scenario.warmup.map_or(Duration::ZERO, |w| w.0);
    let window_end = start + Duration::from_secs_f64(scenario.seconds);
    let longest_timeout = scenario.traffic.iter().map(|t| t.timeout.0).max();
    let specs = scenario.class_specs();
    let streams: Vec<Stream> = scenario
        .traffic
        .iter()
        .map(|t| Stream {
            rps: Cell::new(t.rps * factor),
            service_factor: Cell::new(1.0),
            max_wait: t.max_wait.map(|d| d.0).unwrap_or_else(|| {
                specs
                    .iter()
                    .find(|s| s.name() == t.class)
                    .map_or(Duration::from_millis(50), |s| s.default_max_wait())
            }),
        })
        .collect();
    let admission = Admission::new(&scenario, policy);
    let policies = scenario
        .traffic
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Policy::leak(
                format!("traffic#{}", i + 1),
                t.class.clone(),
                t.max_wait.map(|d| d.0),
                t.weight,
            )
        })
        .collect();
    let sim = Rc::new(Sim {
        tallies: scenario
            .traffic
            .iter()
            .map(|_| RefCell::default())
            .collect(),
        service_rng: RefCell::new(fastrand::Rng::with_seed(scenario.seed ^ 0x5eed_5e41)),
        start,
        window_end,
        load_end: window_end + longest_timeout.unwrap_or_default(),
        outstanding: Cell::new(0),
        clients: scenario
            .clients
            .as_ref()
            .map(|c| crate::retries::Clients::new(c, scenario.traffic.len(), start, window_end)),
        tenants: scenario.tenants.as_ref().map(crate::tenants::Tenants::new),
        streams,
        admission,
        policies,
        server: Server::new(scenario.server.as_ref()),
        scenario,
    });
    let limit_trace = Rc::new(RefCell::new(Vec::new()));
    if let (Some(limiter), Some(adaptive)) = (sim.admission.limiter(), &sim.scenario.adaptive) {
        let trace = limit_trace.clone();
        // The controller runs on this thread's runtime in virtual time.
        let controller = adaptive_controller(adaptive);
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<u32>();
        controller.spawn_observed(limiter.clone(), move |_, limit| {
            let _ = sender.send(limit);
        });
        tokio::task::spawn_local(async move {
            while let Some(limit) = receiver.recv().await {
                trace.borrow_mut().push(limit);
            }
        });
    }
    let overload_watch = Arc::new(std::sync::Mutex::new(None::<shed::OverloadState>));
    if let (Some(limiter), Some(o)) = (sim.admission.limiter(), &sim.scenario.overload) {
        let defaults = shed::OverloadController::new();
        let mut controller = defaults.thresholds(o.enter.unwrap_or(1.25), o.exit.unwrap_or(0.9));
        if let Some(alpha) = o.smoothing {
            controller = controller.smoothing(alpha);
        }
        if let Some(tick) = o.tick {
            controller = controller.tick(tick.0);
        }
        controller.spawn_watched(limiter.clone(), overload_watch.clone());
    }
    if let (Some(limiter), Some(tenants)) = (sim.admission.limiter(), &sim.scenario.tenants) {
        crate::tenants::hold_back(tenants, limiter, start);
    }
    let seconds_trace = Rc::new(RefCell::new(Vec::new()));
    if let Some(limiter) = sim.admission.limiter() {
        let (limiter, trace) = (limiter.clone(), seconds_trace.clone());
        tokio::task::spawn_local(async move {
            let mut second =
                tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
            loop {
                second.tick().await;
                trace.borrow_mut().push(limiter.capacity());
            }
        });
    }

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
    for stream in 0..sim.streams.len() {
        tokio::task::spawn_local(arrivals(sim.clone(), stream));
    }

    tokio::time::sleep_until(sim.load_end).await;
    let drain_end = sim.load_end + DRAIN_LIMIT;
    while sim.outstanding.get() > 0 && Instant::now() < drain_end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut report = sim.report(policy, factor);
    let limits = seconds_trace.borrow();
    for (second, point) in report.timeline.iter_mut().enumerate() {
        point.limit = limits.get(second).copied();
    }
    if let (Some(clients), Some(config)) = (&sim.clients, &sim.scenario.clients) {
        // The trigger: from the first event to the last.
        let at = || sim.scenario.events.iter().map(|e| e.at.0.as_secs_f64());
        let trigger = at().reduce(f64::min).zip(at().reduce(f64::max));
        report.clients = Some(clients.report(config.policy, sim.scenario.seconds, trigger));
    }
    report.tenants = sim.tenants.as_ref().map(crate::tenants::Tenants::report);
    if let Some(state) = *overload_watch.lock().expect("not poisoned") {
        report.shedding_transitions = Some(state.transitions);
    }
    if sim.scenario.adaptive.is_some() && policy == PolicyKind::Shed {
        report.adaptive = sim.scenario.adaptive.as_ref().map(|a| a.algorithm.clone());
        report.limit_direction_changes = Some(direction_changes(&limit_trace.borrow()));
    }
    report
}

/// The configuration the `shed` policy runs a scenario with. A scenario
/// that omits `[limiter]` (or its `capacity`), `[[class]]` and
/// `[adaptive]` gets exactly [`Config::new`]: the library's defaults, the
/// adaptive capacity included, as the process-wide limiter runs them when
/// nobody configured it (less the environment). A pinned capacity measures
/// every call, as before.
pub fn shed_config(scenario: &Scenario) -> Config {
    let l = &scenario.limiter;
    let mut config = Config::new();
    if l.pinned {
        config = config.capacity(l.capacity).service_time_sampling(1);
    }
    if !scenario.classes.is_empty() {
        config = config.classes(scenario.class_specs());
    }
    if let Some(bound) = l.queue_bound {
        config = config.queue_bound(bound);
    }
    if let Some(mode) = &l.mode {
        config = config.mode(mode.parse::<Mode>().expect("validated"));
    }
    if l.codel {
        let defaults = shed::Codel::default();
        config = config.codel(shed::Codel::new(
            l.codel_target.map_or(defaults.target, |d| d.0),
            l.codel_interval.map_or(defaults.interval, |d| d.0),
        ));
    }
    if l.lifo {
        config = config.adaptive_lifo(true);
    }
    if let Some(on) = l.retries_yield {
        config = config.retries_yield(on);
    }
    if let Some(initial) = l.initial {
        config = config.adaptive(shed::adaptive::AutoSettings {
            initial,
            ..shed::adaptive::AutoSettings::default()
        });
    }
    if let Some(tiers) = scenario.tenants.as_ref().and_then(|t| t.tiers()) {
        config = config.tiers(tiers);
    }
    config
}

/// The controller a scenario's `[adaptive]` table describes.
fn adaptive_controller(config: &crate::scenario::AdaptiveConfig) -> shed::adaptive::AdaptiveLimit {
    let algorithm = crate::Algorithm::parse(&config.algorithm).expect("validated");
    let mut controller = algorithm
        .controller(config.target.map(|t| t.0))
        .limits(config.min, config.max);
    if let Some(initial) = config.initial {
        controller = controller.initial(initial);
    }
    if let Some(window) = config.window {
        controller = controller.window(window.0);
    }
    controller
}

/// How many times a sequence turns from rising to falling or back.
pub fn direction_changes(limits: &[u32]) -> u32 {
    let mut changes = 0;
    let mut last_direction = 0i8;
    for pair in limits.windows(2) {
        let direction = (pair[1] as i64 - pair[0] as i64).signum() as i8;
        if direction != 0 {
            if last_direction != 0 && direction != last_direction {
                changes += 1;
            }
            last_direction = direction;
        }
    }
    changes
}

/// Sends a stream's calls, open loop: arrivals do not wait for answers.
async fn arrivals(sim: Rc<Sim>, stream: usize) {
    let traffic = &sim.scenario.traffic[stream];
    let mut rng = fastrand::Rng::with_seed(sim.scenario.seed.wrapping_add(stream as u64 * 7919));
    // Tenants have a generator of their own: the arrivals stay as they
    // are without tenants.
    let mut tenant_rng = fastrand::Rng::with_seed(rng.get_seed() ^ 0x7e4a_4175);
    let mut next = Instant::now();
    loop {
        let rps = sim.streams[stream].rps.get();
        next += traffic.arrivals.gap(rps, &mut rng);
        if next >= sim.load_end {
            return;
        }
        tokio::time::sleep_until(next).await;
        if rps > 0.0 && sim.clients.is_some() {
            tokio::task::spawn_local(requests::request(sim.clone(), stream));
        } else if rps > 0.0 {
            let tenant = sim.tenants.as_ref().map(|t| t.draw(&mut tenant_rng));
            tokio::task::spawn_local(call(sim.clone(), stream, 0, tenant));
        }
    }
}

/// One call of `tenant` (an index into the scenario's tenants) from its
/// client's point of view, retries included.
async fn call(sim: Rc<Sim>, stream: usize, attempt: u32, tenant: Option<usize>) {
    let traffic = &sim.scenario.traffic[stream];
    let arrival = Instant::now();
    let deadline = arrival + traffic.timeout.0;
    // Calls of the warm-up and of the load after the window compete, but
    // are not counted.
    let counted = (sim.start..sim.window_end).contains(&arrival);
    let tenants = sim.tenants.as_ref().zip(tenant);
    if counted {
        sim.tallies[stream]
            .borrow_mut()
            .offer(attempt > 0, arrival - sim.start);
        if let Some((tenants, i)) = tenants {
            tenants.offer(i);
        }
    }
    sim.outstanding.set(sim.outstanding.get() + 1);

    // The client gives up at its timeout and, if it may, tries again; the
    // server does not notice and carries on.
    let answered = Rc::new(Cell::new(false));
    let may_retry = attempt < traffic.retries;
    if may_retry {
        let (sim, answered) = (sim.clone(), answered.clone());
        tokio::task::spawn_local(async move {
            tokio::time::sleep_until(deadline).await;
            if !answered.get() {
                tokio::task::spawn_local(call(sim, stream, attempt + 1, tenant));
            }
        });
    }

    let key = tenants.and_then(|(tenants, i)| tenants.key(i));
    let outcome = sim.serve(stream, arrival, deadline, key).await;
    let done = Instant::now();
    answered.set(true);
    sim.outstanding.set(sim.outstanding.get() - 1);
    match outcome {
        Ok(()) if counted => {
            sim.tallies[stream].borrow_mut().served(
                done - arrival,
                done <= deadline,
                arrival - sim.start,
            );
            if let Some((tenants, i)) = tenants {
                tenants.served(i, done <= deadline);
            }
        }
        Ok(()) => {}
        Err(refusal) => {
            if counted {
                sim.tallies[stream].borrow_mut().shed(&refusal.reason);
                if let Some((tenants, i)) = tenants {
                    tenants.shed(i, &refusal.reason);
                }
            }
            if may_retry && done < deadline {
                let delay = match traffic.retry.unwrap_or(RetryDelay::Immediate) {
                    RetryDelay::Immediate => Duration::ZERO,
                    RetryDelay::RetryAfter => refusal.retry_after,
                    RetryDelay::After(d) => d,
                };
                tokio::time::sleep(delay).await;
                tokio::task::spawn_local(call(sim, stream, attempt + 1, tenant));
            }
        }
    }
}

impl Sim {
    /// The time a call of `stream` takes once admitted, drawn now.
    fn service_time(&self, stream: usize) -> Duration {
        let traffic = &self.scenario.traffic[stream];
        let mean = traffic.service.0.as_secs_f64() * self.streams[stream].service_factor.get();
        let seconds = traffic
            .service_dist
            .draw(mean, &mut self.service_rng.borrow_mut());
        Duration::from_secs_f64(seconds)
    }

    /// Runs one admitted call on the server.
    async fn work(&self, stream: usize) {
        self.server.execute(self.service_time(stream)).await;
    }

    /// Admits a call of `stream` (of `tenant`, if keyed) that arrived at
    /// `arrival` and serves it, or refuses it.
    async fn serve(
        &self,
        stream: usize,
        arrival: Instant,
        deadline: Instant,
        tenant: Option<&shed::Tenant>,
    ) -> Result<(), Refused> {
        let call = Call {
            policy: self.policies[stream],
            max_wait: self.streams[stream].max_wait,
            arrival,
            deadline: self.scenario.traffic[stream].deadline.then_some(deadline),
            tenant,
        };
        self.admission.serve(call, || self.work(stream)).await
    }

    fn report(&self, policy: PolicyKind, factor: f64) -> Report {
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
        let ticks_per_second = (Duration::from_secs(1).as_nanos() / TICK.as_nanos()) as usize;
        let timeline = (0..self.scenario.seconds.ceil() as usize)
            .map(|second| crate::report::Second {
                second: second as u32,
                served_in_time: all
                    .per_tick
                    .iter()
                    .skip(second * ticks_per_second)
                    .take(ticks_per_second)
                    .sum(),
                offered: all
                    .offered_per_tick
                    .iter()
                    .skip(second * ticks_per_second)
                    .take(ticks_per_second)
                    .sum(),
                limit: None,
            })
            .collect();
        let phases = phase_reports(&self.scenario.phases(factor), &all.per_tick);
        Report {
            scenario: self.scenario.name.clone(),
            policy: policy.name().to_string(),
            factor,
            seconds,
            capacity_rps: (self.scenario.capacity_rps() * 10.0).round() / 10.0,
            total: all.counts(seconds),
            classes,
            timeline,
            adaptive: None,
            limit_direction_changes: None,
            shedding_transitions: None,
            clients: None,
            tenants: None,
            phases,
        }
    }
}
