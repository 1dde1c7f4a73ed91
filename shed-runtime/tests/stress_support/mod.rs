//! The stress harness: builds a limiter, runs random workers against it on
//! a multi-thread runtime while a controller thread changes it, then
//! drains and checks that everything was given back.

pub mod churn;
pub mod switches;
pub mod wake_clock;
pub mod workload;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use fastrand::Rng;
use shed_runtime::{ClassSpec, Codel, Config, Limiter, Mode, Reason};

pub use churn::Churn;
use workload::{Deliberate, Shared, Tally, CLASSES};

/// How long each scenario runs, in seconds (may be fractional).
pub const ENV_SECS: &str = "SHED_STRESS_SECS";
/// The seed of the workload (default: taken from the clock, and printed).
pub const ENV_SEED: &str = "SHED_STRESS_SEED";

/// How long the checks wait for every task to finish after the run. A
/// drain takes milliseconds; only a waiter nobody wakes takes longer (the
/// patient calls' budget is far beyond this).
const HANG: Duration = Duration::from_secs(10);

/// One scenario.
pub struct Plan {
    pub name: &'static str,
    /// Capacity at the start, and the largest capacity and weight.
    pub max_capacity: u32,
    pub codel: bool,
    pub lifo: bool,
    pub churn: Churn,
    /// Workers making random calls, and light workers making weight-1 calls.
    pub workers: usize,
    pub light_workers: usize,
    /// How long the watch tolerates calls queued with nothing in flight.
    pub stall_limit: Duration,
    /// Whether held permits may never exceed the capacity (only sound when
    /// the capacity never falls and the mode stays `enforce`).
    pub strict_capacity: bool,
    /// Whether classes have floors (served before rank, so they get
    /// around a blocked head of the top class).
    pub floors: bool,
    /// Worker threads of the runtime.
    pub runtime_threads: usize,
    /// The queue bound, in multiples of the capacity.
    pub queue_bound: u64,
    /// Whether the calls go to the process-wide limiter (installed with
    /// this plan's configuration), outside any call context, as a
    /// `#[shed]` fn's do: the only limiter whose permits give their slots
    /// back on the inline path (one `fetch_sub`, no reference count).
    /// Only one scenario of the binary may set it.
    pub process_wide: bool,
    /// Whether the limiter runs the adaptive default, as with nothing
    /// configured (no capacity, queue bound or sampling given, and
    /// `critical` on the budget it learns): it starts at 2 slots and the
    /// completions move it, up to `max_capacity` for the weights. The
    /// churn must leave the capacity alone (setting it pins it).
    pub adaptive: bool,
}

impl Plan {
    /// The defaults: 32 slots, every kind of churn, 40 + 4 workers.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            max_capacity: 32,
            codel: false,
            lifo: false,
            churn: Churn::ALL,
            workers: 40,
            light_workers: 4,
            stall_limit: Duration::from_millis(250),
            strict_capacity: false,
            floors: true,
            runtime_threads: 2,
            queue_bound: 4,
            process_wide: false,
            adaptive: false,
        }
    }
}

fn settings() -> (Duration, u64) {
    let secs = std::env::var(ENV_SECS)
        .ok()
        .map(|s| s.parse::<f64>().expect("SHED_STRESS_SECS is a number"))
        .unwrap_or(1.0);
    let seed = std::env::var(ENV_SEED)
        .ok()
        .map(|s| {
            s.parse::<u64>()
                .expect("SHED_STRESS_SEED is a whole number")
        })
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    (Duration::from_secs_f64(secs), seed)
}

/// The limiter of a scenario: four classes, three of them with shares and
/// two with floors (unless the plan says otherwise), short budgets, a queue bound of
/// (by default, as in the library) four times the capacity.
/// Capacities from `max` down are tried until the configuration accepts
/// one, so that a smaller maximum capacity does not break the test.
fn build(plan: &Plan) -> Limiter {
    let mut capacity = plan.max_capacity;
    loop {
        let critical = ClassSpec::new("critical", 0);
        let mut config = Config::new().classes([
            if plan.adaptive {
                critical
            } else {
                critical.max_wait(Duration::from_millis(20))
            },
            ClassSpec::new("optional", 1)
                .share(0.75)
                .floor(if plan.floors { 2 } else { 0 })
                .max_wait(Duration::from_millis(10)),
            ClassSpec::new("background", 2)
                .share(0.5)
                .floor(u32::from(plan.floors))
                .max_wait(Duration::from_millis(5)),
            ClassSpec::new("batch", 3)
                .share(0.25)
                .max_wait(Duration::from_millis(2)),
        ]);
        if plan.churn.warm_ups {
            config = config.warm_up(Duration::from_millis(30));
        }
        if !plan.adaptive {
            config = config
                .capacity(capacity)
                .queue_bound(u64::from(capacity) * plan.queue_bound)
                .service_time_sampling(4);
        }
        if plan.codel {
            config = config.codel(Codel::new(
                Duration::from_millis(1),
                Duration::from_millis(20),
            ));
        }
        config = config.adaptive_lifo(plan.lifo);
        if plan.process_wide {
            let installed = config
                .install()
                .expect("the process-wide limiter, installed once");
            return installed.clone();
        }
        match config.build() {
            Ok(limiter) => return limiter,
            Err(e) if capacity > 1 && e.to_string().contains("capacity") => capacity /= 2,
            Err(e) => panic!("stress limiter: {e}"),
        }
    }
}

/// Silences the panics the workload raises on purpose.
fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Deliberate>() {
                default(info);
            }
        }));
    });
}

/// Runs `plan` and panics with every finding (and the seed) if anything
/// was not given back, hung, stalled or panicked unexpectedly.
pub fn run(plan: Plan) {
    quiet_deliberate_panics();
    let (duration, given) = settings();
    let replay = format!(
        "{ENV_SEED}={given} {ENV_SECS}={} cargo test -p shed-runtime --test stress {}",
        duration.as_secs_f64(),
        plan.name
    );
    eprintln!("stress {}: seed {given} (replay: {replay})", plan.name);
    // Each scenario draws its own workload from the seed given.
    let seed = given
        ^ plan
            .name
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));

    assert!(
        !(plan.adaptive && (plan.churn.capacity || plan.churn.low_holds.is_some())),
        "setting the capacity pins it: the adaptive default would stop"
    );
    let limiter = build(&plan);
    let max = if plan.adaptive {
        plan.max_capacity
    } else {
        limiter.capacity()
    };
    let initial = limiter.capacity();
    let shared = Arc::new(Shared {
        limiter: limiter.clone(),
        stop: AtomicBool::new(false),
        max_weight: max,
        strict_capacity: plan.strict_capacity,
        policies: workload::policies(max),
        live: AtomicU64::new(0),
        tally: Tally::default(),
        findings: Mutex::new(Vec::new()),
        switches: switches::Switches::new(),
        enforce_only: !plan.churn.modes,
        process_wide: plan.process_wide,
        spawned: Mutex::new(Vec::new()),
        highest_capacity: AtomicU32::new(initial),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.runtime_threads)
        .enable_all()
        .build()
        .unwrap();

    let workers: Vec<_> = (0..plan.workers + plan.light_workers)
        .map(|i| {
            let rng = Rng::with_seed(
                seed.wrapping_add(i as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            let light = i >= plan.workers;
            let worker = workload::worker(Arc::clone(&shared), rng, light);
            if plan.process_wide {
                rt.spawn(worker)
            } else {
                rt.spawn(limiter.scope(worker))
            }
        })
        .collect();
    let controller = {
        let (shared, churn, rng) = (Arc::clone(&shared), plan.churn, Rng::with_seed(!seed));
        let runtime = rt.handle().clone();
        std::thread::spawn(move || churn::control(&shared, churn, rng, &runtime))
    };
    let watch = {
        let (shared, limit) = (Arc::clone(&shared), plan.stall_limit);
        std::thread::spawn(move || churn::watch(&shared, limit))
    };

    std::thread::sleep(duration);
    shared.stop.store(true, Ordering::SeqCst);
    controller.join().expect("controller");
    watch.join().expect("watch");
    let highest = shared.highest_capacity.load(Ordering::SeqCst);
    if plan.adaptive {
        eprintln!(
            "stress {}: the limit went from {initial} up to {highest}",
            plan.name
        );
    }
    if plan.adaptive && highest <= initial {
        shared.find(format!(
            "the adaptive default never raised the limit from {initial} (stats: {:?})",
            limiter.stats()
        ));
    }

    // Back to a state in which every queued call fits, then drain.
    limiter.set_mode(Mode::Enforce);
    for class in CLASSES {
        shared.switches.switch(&limiter, class, true);
    }
    limiter.set_capacity(max);
    let hung = rt.block_on(async {
        let give_up = tokio::time::Instant::now() + HANG;
        let mut hung = 0;
        let spawned = std::mem::take(&mut *shared.spawned.lock().unwrap());
        for worker in workers.into_iter().chain(spawned) {
            match tokio::time::timeout_at(give_up, worker).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => shared.find(format!("a worker failed: {e}")),
                Err(_) => hung += 1,
            }
        }
        hung
    });
    if hung > 0 {
        shared.find(format!(
            "{hung} tasks still running {HANG:?} after the run stopped (stats: {:?})",
            limiter.stats()
        ));
    }

    check_drained(&limiter, &shared);
    check_counted(&limiter, &shared);
    if hung == 0 {
        rt.block_on(check_full_capacity_admitted(&limiter, &shared));
    }
    rt.shutdown_timeout(Duration::from_secs(1));

    eprintln!("stress {}: {}", plan.name, shared.tally.summary());
    let findings = shared.findings.lock().unwrap();
    assert!(
        findings.is_empty(),
        "stress {} failed (replay: {replay}):\n  {}",
        plan.name,
        findings.join("\n  ")
    );
    assert!(
        shared.tally.admitted.load(Ordering::Relaxed) > 0 && shared.tally.refused_total() > 0,
        "stress {}: the workload neither filled nor overran the limiter: {}",
        plan.name,
        shared.tally.summary()
    );
}

/// Nothing in flight, nothing queued, every class at zero.
fn check_drained(limiter: &Limiter, shared: &Shared) {
    let stats = limiter.stats();
    if stats.in_flight != 0 || stats.queued != 0 || stats.queued_weight != 0 {
        shared.find(format!(
            "not drained: in flight {}, queued {} (weight {})",
            stats.in_flight, stats.queued, stats.queued_weight
        ));
    }
    for class in &stats.classes {
        if class.in_flight != 0 {
            shared.find(format!(
                "class {} holds {} after the run",
                class.class, class.in_flight
            ));
        }
    }
    let live = shared.live.load(Ordering::SeqCst);
    if live != 0 {
        shared.find(format!("the workload still counts {live} held"));
    }
}

/// Every refusal and every admission a caller saw was counted by the
/// limiter. (The limiter may count more: a waiter refused or granted after
/// its caller gave up is counted, but nobody sees it.)
fn check_counted(limiter: &Limiter, shared: &Shared) {
    let stats = limiter.stats();
    for &reason in Reason::all() {
        let counted: u64 = stats.classes.iter().map(|c| c.refused_for(reason)).sum();
        let seen = shared.tally.refused_for(reason);
        if counted < seen {
            shared.find(format!(
                "callers saw {seen} refusals for {reason}, the limiter counted {counted}"
            ));
        }
    }
    let counted: u64 = stats.classes.iter().map(|c| c.admitted).sum();
    let seen = shared.tally.admitted_with_slots.load(Ordering::Relaxed);
    if counted < seen {
        shared.find(format!(
            "callers were admitted {seen} times with slots, the limiter counted {counted}"
        ));
    }
}

/// A call of the full capacity, then of each class's full share, is
/// admitted at once (bounded, so that a stall fails instead of hanging).
async fn check_full_capacity_admitted(limiter: &Limiter, shared: &Shared) {
    let capacity = limiter.capacity();
    let within = Duration::from_secs(1);
    let mut probes = vec![("critical", capacity)];
    for spec in limiter.classes().skip(1) {
        let share = (f64::from(capacity) * spec.share_of_capacity()).floor() as u32;
        probes.push((
            spec.name(),
            share.max(spec.floor_slots().min(capacity)).max(1),
        ));
    }
    for (class, weight) in probes {
        match tokio::time::timeout(within, limiter.acquire(class, weight, "stress::probe")).await {
            Ok(Ok(permit)) => {
                if limiter.in_flight() != u64::from(weight) {
                    shared.find(format!(
                        "probe {class} of weight {weight} admitted, but in flight is {}",
                        limiter.in_flight()
                    ));
                }
                drop(permit);
            }
            Ok(Err(rejected)) => shared.find(format!(
                "probe {class} of weight {weight} on an idle limiter refused: {rejected}"
            )),
            Err(_) => shared.find(format!(
                "probe {class} of weight {weight} on an idle limiter not admitted within {within:?}"
            )),
        }
    }
    check_drained(limiter, shared);
}
