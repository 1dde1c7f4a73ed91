//! The simulator: open-loop traffic against a server with a fixed number
//! of slots, in virtual time, under one of four admission policies.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use shed::{Config, Limiter, Mode, Policy};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use crate::report::{Report, Tally};
use crate::scenario::{Arrivals, RetryDelay, Scenario, ServiceDist};

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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, simulate(scenario.clone(), policy, factor))
}

/// The server side of one policy.
enum Server {
    Fifo(Arc<Semaphore>),
    Tower(tower::limit::GlobalConcurrencyLimitLayer),
    QueueWait(Arc<Semaphore>),
    Shed {
        limiter: Limiter,
        policies: Vec<&'static Policy>,
    },
}

/// Why a call was refused, and when its client may retry.
struct Refusal {
    reason: String,
    retry_after: Duration,
}

struct Stream {
    rps: Cell<f64>,
    service_factor: Cell<f64>,
    /// The queue-wait budget: the stream's own or its class's.
    max_wait: Duration,
}

struct Sim {
    scenario: Scenario,
    server: Server,
    streams: Vec<Stream>,
    tallies: Vec<RefCell<Tally>>,
    service_rng: RefCell<fastrand::Rng>,
    arrivals_end: Instant,
    outstanding: Cell<u64>,
}

async fn simulate(scenario: Scenario, policy: PolicyKind, factor: f64) -> Report {
    let start = Instant::now();
    let specs = scenario.class_specs();
    let capacity = scenario.limiter.capacity;
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
    let server = match policy {
        PolicyKind::None => Server::Fifo(Arc::new(Semaphore::new(capacity as usize))),
        PolicyKind::QueueWait => Server::QueueWait(Arc::new(Semaphore::new(capacity as usize))),
        PolicyKind::RejectWhenFull => Server::Tower(
            tower::limit::GlobalConcurrencyLimitLayer::new(capacity as usize),
        ),
        PolicyKind::Shed => {
            let mut config = Config::new()
                .capacity(capacity)
                .classes(specs.clone())
                .service_time_sampling(1);
            if let Some(bound) = scenario.limiter.queue_bound {
                config = config.queue_bound(bound);
            }
            if let Some(mode) = &scenario.limiter.mode {
                config = config.mode(mode.parse::<Mode>().expect("validated"));
            }
            let l = &scenario.limiter;
            if l.codel {
                let defaults = shed::Codel::default();
                config = config.codel(shed::Codel {
                    target: l.codel_target.map_or(defaults.target, |d| d.0),
                    interval: l.codel_interval.map_or(defaults.interval, |d| d.0),
                });
            }
            config = config.adaptive_lifo(l.lifo);
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
            Server::Shed {
                limiter: config.build().expect("validated scenario"),
                policies,
            }
        }
    };
    let sim = Rc::new(Sim {
        tallies: scenario
            .traffic
            .iter()
            .map(|_| RefCell::default())
            .collect(),
        service_rng: RefCell::new(fastrand::Rng::with_seed(scenario.seed ^ 0x5eed_5e41)),
        arrivals_end: start + Duration::from_secs_f64(scenario.seconds),
        outstanding: Cell::new(0),
        streams,
        server,
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
    for stream in 0..sim.streams.len() {
        tokio::task::spawn_local(arrivals(sim.clone(), stream));
    }

    tokio::time::sleep_until(sim.arrivals_end).await;
    let drain_end = sim.arrivals_end + DRAIN_LIMIT;
    while sim.outstanding.get() > 0 && Instant::now() < drain_end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sim.report(policy, factor)
}

/// Sends a stream's calls, open loop: arrivals do not wait for answers.
async fn arrivals(sim: Rc<Sim>, stream: usize) {
    let traffic = &sim.scenario.traffic[stream];
    let mut rng = fastrand::Rng::with_seed(sim.scenario.seed.wrapping_add(stream as u64 * 7919));
    let mut next = Instant::now();
    loop {
        let rps = sim.streams[stream].rps.get();
        if rps <= 0.0 {
            next += Duration::from_millis(10);
        } else {
            let mean_gap = 1.0 / rps;
            let gap = match traffic.arrivals {
                Arrivals::Uniform => mean_gap,
                Arrivals::Poisson => -mean_gap * (1.0 - rng.f64()).ln(),
            };
            next += Duration::from_secs_f64(gap);
        }
        if next >= sim.arrivals_end {
            return;
        }
        tokio::time::sleep_until(next).await;
        if rps > 0.0 {
            tokio::task::spawn_local(call(sim.clone(), stream, 0));
        }
    }
}

/// One call from its client's point of view, retries included.
async fn call(sim: Rc<Sim>, stream: usize, attempt: u32) {
    let traffic = &sim.scenario.traffic[stream];
    let arrival = Instant::now();
    let deadline = arrival + traffic.timeout.0;
    sim.tallies[stream].borrow_mut().offer(attempt > 0);
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
                tokio::task::spawn_local(call(sim, stream, attempt + 1));
            }
        });
    }

    let outcome = sim.serve(stream, arrival, deadline).await;
    let done = Instant::now();
    answered.set(true);
    sim.outstanding.set(sim.outstanding.get() - 1);
    match outcome {
        Ok(()) => sim.tallies[stream]
            .borrow_mut()
            .served(done - arrival, done <= deadline),
        Err(refusal) => {
            sim.tallies[stream].borrow_mut().shed(&refusal.reason);
            if may_retry && done < deadline {
                let delay = match traffic.retry.unwrap_or(RetryDelay::Immediate) {
                    RetryDelay::Immediate => Duration::ZERO,
                    RetryDelay::RetryAfter => refusal.retry_after,
                    RetryDelay::After(d) => d,
                };
                tokio::time::sleep(delay).await;
                tokio::task::spawn_local(call(sim, stream, attempt + 1));
            }
        }
    }
}

impl Sim {
    /// The time a call of `stream` takes once admitted, drawn now.
    fn service_time(&self, stream: usize) -> Duration {
        let traffic = &self.scenario.traffic[stream];
        let mean = traffic.service.0.as_secs_f64() * self.streams[stream].service_factor.get();
        let seconds = match traffic.service_dist {
            ServiceDist::Const => mean,
            ServiceDist::Exp => -mean * (1.0 - self.service_rng.borrow_mut().f64()).ln(),
        };
        Duration::from_secs_f64(seconds)
    }

    async fn serve(
        &self,
        stream: usize,
        arrival: Instant,
        deadline: Instant,
    ) -> Result<(), Refusal> {
        let traffic = &self.scenario.traffic[stream];
        match &self.server {
            Server::Fifo(slots) => {
                let _permit = slots
                    .acquire_many(traffic.weight)
                    .await
                    .expect("never closed");
                tokio::time::sleep(self.service_time(stream)).await;
                Ok(())
            }
            Server::QueueWait(slots) => {
                let permit = slots
                    .acquire_many(traffic.weight)
                    .await
                    .expect("never closed");
                if arrival.elapsed() > self.streams[stream].max_wait {
                    drop(permit);
                    return Err(Refusal {
                        reason: "max_wait".into(),
                        retry_after: Duration::from_secs(1),
                    });
                }
                tokio::time::sleep(self.service_time(stream)).await;
                Ok(())
            }
            Server::Tower(limit) => {
                // The service time is drawn when the inner service is
                // called, i.e. only for admitted calls, as for the others.
                let work = tower::service_fn(|()| async {
                    tokio::time::sleep(self.service_time(stream)).await;
                    Ok::<(), std::convert::Infallible>(())
                });
                let mut stack = tower::ServiceBuilder::new()
                    .load_shed()
                    .layer(limit.clone())
                    .service(work);
                let ready = stack.ready().await.expect("load_shed is always ready");
                ready.call(()).await.map_err(|_overloaded| Refusal {
                    reason: "overloaded".into(),
                    retry_after: Duration::from_secs(1),
                })
            }
            Server::Shed { limiter, policies } => {
                let work = async {
                    tokio::time::sleep(self.service_time(stream)).await;
                };
                let guarded = shed::run_guarded(policies[stream], work);
                let result = if traffic.deadline {
                    limiter.scope(shed::with_deadline(deadline, guarded)).await
                } else {
                    limiter.scope(guarded).await
                };
                result.map_err(|rejected| Refusal {
                    reason: rejected.reason().to_string(),
                    retry_after: rejected.retry_after(),
                })
            }
        }
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
        Report {
            scenario: self.scenario.name.clone(),
            policy: policy.name().to_string(),
            factor,
            seconds,
            capacity_rps: (self.scenario.capacity_rps() * 10.0).round() / 10.0,
            total: all.counts(seconds),
            classes,
        }
    }
}
