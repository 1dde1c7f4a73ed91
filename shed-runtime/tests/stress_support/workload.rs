//! The calls the stress workers make: a random admission path, weight,
//! body and way of being cancelled, and what came of each call.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use fastrand::Rng;
use shed_runtime::__private::Decision;
use shed_runtime::{Limiter, Permit, Policy, Reason, Rejected};

use super::switches::{admitted_while_off, Switches};
use super::wake_clock::FirstWake;

/// The payload of the panics the workload raises on purpose; any other
/// panic is a finding.
pub struct Deliberate;

/// Classes of the stress limiters, in configuration order.
pub const CLASSES: [&str; 4] = ["critical", "optional", "background", "batch"];

/// A budget no call reaches during a run: a call with it waits until it is
/// served, so a waiter that is never woken shows up as a hung task.
pub const PATIENT: Duration = Duration::from_secs(30);

/// What one worker shares with the others and with the checks.
pub struct Shared {
    pub limiter: Limiter,
    pub stop: AtomicBool,
    /// The largest capacity and weight of the run.
    pub max_weight: u32,
    /// Whether the capacity and mode stay put, so that the weight of the
    /// permits held must never exceed the capacity.
    pub strict_capacity: bool,
    /// Policies for `acquire_as` and the attribute's path: every class,
    /// light to full-capacity weights, default and patient budgets.
    pub policies: Vec<&'static Policy>,
    /// Weight of the permits the workload holds right now (counted after
    /// admission and before release, so never more than the truth).
    pub live: AtomicU64,
    pub tally: Tally,
    /// Broken invariants and unexpected panics, as found.
    pub findings: Mutex<Vec<String>>,
    /// When classes were switched off and on.
    pub switches: Switches,
    /// Whether the mode stays `enforce`, so that no call of a class that
    /// is off may be admitted.
    pub enforce_only: bool,
    /// Whether the calls go to the process-wide limiter outside any call
    /// context (see `Plan::process_wide`).
    pub process_wide: bool,
    /// Calls the controller started, awaited with the workers.
    pub spawned: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The highest capacity the watch saw.
    pub highest_capacity: AtomicU32,
}

impl Shared {
    /// The policy of `class` with `weight`, patient or on the class's budget.
    pub fn policy(&self, class: &str, weight: u32, patient: bool) -> &'static Policy {
        let budget = patient.then_some(PATIENT);
        self.policies
            .iter()
            .find(|p| p.class() == class && p.weight() == weight && p.max_wait() == budget)
            .expect("policy of the run")
    }

    pub fn find(&self, finding: String) {
        self.findings.lock().unwrap().push(finding);
    }

    fn hold(self: &Arc<Self>, permit: Permit) -> Held {
        let weight = permit.weight();
        let live = self.live.fetch_add(weight, Ordering::SeqCst) + weight;
        if self.strict_capacity && live > u64::from(self.limiter.capacity()) {
            self.find(format!(
                "over-admitted: permits of weight {live} held, capacity {}",
                self.limiter.capacity()
            ));
        }
        Held {
            shared: Arc::clone(self),
            permit: Some(permit),
        }
    }
}

/// A permit the workload holds, counted in [`Shared::live`].
struct Held {
    shared: Arc<Shared>,
    permit: Option<Permit>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let permit = self.permit.take().expect("held once");
        self.shared
            .live
            .fetch_sub(permit.weight(), Ordering::SeqCst);
        drop(permit);
    }
}

/// Counts of what the workload did, printed after the run.
#[derive(Default)]
pub struct Tally {
    pub admitted: AtomicU64,
    /// Admitted with slots (not bypassed in mode `off`).
    pub admitted_with_slots: AtomicU64,
    /// By the reason's place in `Reason::all()` (room for more reasons).
    pub refused: [AtomicU64; 16],
    pub timed_out: AtomicU64,
    pub selected_away: AtomicU64,
    pub aborted: AtomicU64,
    pub panicked: AtomicU64,
}

impl Tally {
    fn refuse(&self, reason: Reason) {
        let index = Reason::all().iter().position(|r| *r == reason).unwrap();
        self.refused[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals callers saw for `reason`.
    pub fn refused_for(&self, reason: Reason) -> u64 {
        let index = Reason::all().iter().position(|r| *r == reason).unwrap();
        self.refused[index].load(Ordering::Relaxed)
    }

    pub fn refused_total(&self) -> u64 {
        self.refused.iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }

    pub fn summary(&self) -> String {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let refused: Vec<String> = Reason::all()
            .iter()
            .zip(&self.refused)
            .filter(|(_, n)| get(n) > 0)
            .map(|(r, n)| format!("{r}={}", get(n)))
            .collect();
        format!(
            "admitted {}, refused [{}], cancelled by timeout {} / select {} / abort {}, panicked {}",
            get(&self.admitted),
            refused.join(" "),
            get(&self.timed_out),
            get(&self.selected_away),
            get(&self.aborted),
            get(&self.panicked),
        )
    }
}

/// How a call asks for slots.
#[derive(Clone, Copy)]
enum Path {
    /// `Limiter::acquire`.
    Acquire { class: &'static str, weight: u32 },
    /// `Limiter::acquire_as`.
    AcquireAs(&'static Policy),
    /// What `#[shed]` expands to: the inline decision, then the wait.
    Attribute(&'static Policy),
}

impl Path {
    fn class(self) -> &'static str {
        match self {
            Path::Acquire { class, .. } => class,
            Path::AcquireAs(policy) | Path::Attribute(policy) => policy.class(),
        }
    }
}

/// How the caller gives up on a call, if it does.
#[derive(Clone, Copy)]
enum Cancel {
    Never,
    Timeout(Duration),
    /// `select!` against a future ready after this many polls.
    SelectYields(u32),
    /// `select!` against a sleep.
    SelectSleep(Duration),
    /// `JoinHandle::abort` after this many polls of the caller.
    Abort(u32),
}

#[derive(Clone, Copy)]
enum Body {
    Yields(u32),
    Sleep(Duration),
}

#[derive(Clone, Copy)]
struct Call {
    path: Path,
    deadline: Option<Duration>,
    body: Body,
    panics: bool,
    cancel: Cancel,
}

/// Runs calls until the run stops. A light worker only makes weight-1
/// calls on the default budgets, so that somebody always asks for what
/// must fit (the stall watch relies on it).
pub async fn worker(shared: Arc<Shared>, mut rng: Rng, light: bool) {
    while !shared.stop.load(Ordering::Relaxed) {
        let call = if light {
            light_call(&mut rng, &shared)
        } else {
            random_call(&mut rng, &shared)
        };
        run(&shared, call).await;
    }
}

fn random_weight(rng: &mut Rng, max: u32) -> u32 {
    match rng.u8(0..10) {
        0..=5 => 1,
        6..=7 => rng.u32(1..=max.min(4)),
        8 => rng.u32(1..=max.div_ceil(2)),
        _ => rng.u32(1..=max),
    }
}

fn random_cancel(rng: &mut Rng) -> Cancel {
    match rng.u8(0..20) {
        0..=7 => Cancel::Never,
        8..=11 => Cancel::Timeout(Duration::from_micros(rng.u64(0..3_000))),
        12..=14 => Cancel::SelectYields(rng.u32(0..8)),
        15 => Cancel::SelectSleep(Duration::from_micros(rng.u64(0..3_000))),
        _ => Cancel::Abort(rng.u32(0..8)),
    }
}

fn random_body(rng: &mut Rng) -> Body {
    match rng.u8(0..10) {
        0..=6 => Body::Yields(rng.u32(0..4)),
        7..=8 => Body::Sleep(Duration::from_millis(1)),
        _ => Body::Sleep(Duration::from_micros(rng.u64(0..3_000))),
    }
}

fn random_call(rng: &mut Rng, shared: &Shared) -> Call {
    let path = match rng.u8(0..3) {
        0 => Path::Acquire {
            class: CLASSES[rng.usize(..CLASSES.len())],
            weight: random_weight(rng, shared.max_weight),
        },
        1 => Path::AcquireAs(shared.policies[rng.usize(..shared.policies.len())]),
        _ => Path::Attribute(shared.policies[rng.usize(..shared.policies.len())]),
    };
    Call {
        path,
        deadline: (rng.u8(0..10) == 0).then(|| Duration::from_micros(rng.u64(0..5_000))),
        body: random_body(rng),
        panics: rng.u8(0..20) == 0,
        cancel: random_cancel(rng),
    }
}

fn light_call(rng: &mut Rng, shared: &Shared) -> Call {
    let class = if shared.process_wide && rng.bool() {
        // The class whose calls are released inline, half the time.
        "critical"
    } else {
        CLASSES[rng.usize(..CLASSES.len())]
    };
    Call {
        // On the process-wide limiter, through the attribute's path: its
        // untimed `critical` calls admitted at once are the ones released
        // inline.
        path: if shared.process_wide {
            Path::Attribute(shared.policy(class, 1, false))
        } else {
            Path::Acquire { class, weight: 1 }
        },
        deadline: None,
        body: random_body(rng),
        panics: rng.u8(0..20) == 0,
        cancel: random_cancel(rng),
    }
}

/// The policies of a run: for every class, weights from 1 to `max`, with
/// the class's budget and with a [`PATIENT`] one.
pub fn policies(max: u32) -> Vec<&'static Policy> {
    let mut weights = vec![1, 2, 3, max / 4, max / 2, max];
    weights.retain(|&w| (1..=max).contains(&w));
    weights.dedup();
    let mut policies = Vec::new();
    for class in CLASSES {
        for &weight in &weights {
            for budget in [None, Some(PATIENT)] {
                let name = format!(
                    "stress::{class}::w{weight}{}",
                    if budget.is_some() { "::patient" } else { "" }
                );
                policies.push(Policy::leak(name, class, budget, weight));
            }
        }
    }
    policies
}

async fn run(shared: &Arc<Shared>, call: Call) {
    let attempt = attempt(Arc::clone(shared), call);
    let tally = &shared.tally;
    match call.cancel {
        Cancel::Never => settle(shared, CatchUnwind::new(attempt).await),
        Cancel::Timeout(after) => {
            match tokio::time::timeout(after, CatchUnwind::new(attempt)).await {
                Ok(result) => settle(shared, result),
                Err(_) => count(&tally.timed_out),
            }
        }
        Cancel::SelectYields(polls) => tokio::select! {
            result = CatchUnwind::new(attempt) => settle(shared, result),
            () = yields(polls) => count(&tally.selected_away),
        },
        Cancel::SelectSleep(after) => tokio::select! {
            result = CatchUnwind::new(attempt) => settle(shared, result),
            () = tokio::time::sleep(after) => count(&tally.selected_away),
        },
        Cancel::Abort(polls) => {
            // A spawned task does not inherit the task-local limiter.
            let handle = if shared.process_wide {
                tokio::spawn(attempt)
            } else {
                tokio::spawn(shared.limiter.scope(attempt))
            };
            yields(polls).await;
            handle.abort();
            match handle.await {
                Ok(()) => {}
                Err(e) if e.is_cancelled() => count(&tally.aborted),
                Err(e) => settle(shared, Err(e.into_panic())),
            }
        }
    }
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn settle(shared: &Shared, result: Result<(), Box<dyn Any + Send>>) {
    let Err(payload) = result else {
        return;
    };
    if payload.is::<Deliberate>() {
        count(&shared.tally.panicked);
        return;
    }
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(non-string payload)".into());
    shared.find(format!("unexpected panic: {message}"));
}

/// One call: admission, then (if admitted) the body, which may panic.
async fn attempt(shared: Arc<Shared>, call: Call) {
    let class = call.path.class();
    let before = shared.switches.read(class);
    let admission = FirstWake::new(admit(&shared.limiter, call.path), shared.switches.started());
    let (admitted, times) = match call.deadline {
        Some(within) => shed_runtime::with_deadline_in(within, admission).await,
        None => admission.await,
    };
    let permit = match admitted {
        Ok(permit) => permit,
        Err(rejected) => {
            shared.tally.refuse(rejected.reason());
            return;
        }
    };
    count(&shared.tally.admitted);
    if permit.weight() > 0 {
        count(&shared.tally.admitted_with_slots);
    }
    let after = shared.switches.read(class);
    if shared.enforce_only
        && permit.weight() > 0
        && admitted_while_off(before, after, shared.switches.off_began(class), times)
    {
        shared.find(format!(
            "{class} admitted while switched off: off from {} to {} us, switches since the call started {}, {times:?}, admitted at {} us",
            shared.switches.off_began(class),
            after.changed_us,
            after.epoch.wrapping_sub(before.epoch),
            shared.switches.now_us(),
        ));
    }
    let _held = shared.hold(permit);
    match call.body {
        Body::Yields(polls) => yields(polls).await,
        Body::Sleep(d) => tokio::time::sleep(d).await,
    }
    if call.panics {
        std::panic::panic_any(Deliberate);
    }
}

async fn admit(limiter: &Limiter, path: Path) -> Result<Permit, Rejected> {
    match path {
        Path::Acquire { class, weight } => limiter.acquire(class, weight, "stress::acquire").await,
        Path::AcquireAs(policy) => limiter.acquire_as(policy).await,
        Path::Attribute(policy) => match shed_runtime::__private::admit(policy) {
            Decision::Admitted(permit) => Ok(permit),
            Decision::Refused(rejected) => Err(rejected),
            Decision::Wait(admission) => admission.await,
        },
    }
}

/// Completes after being polled `polls + 1` times, yielding in between.
async fn yields(polls: u32) {
    for _ in 0..polls {
        tokio::task::yield_now().await;
    }
}

/// Catches a panic raised while polling the inner future (as a server's
/// per-request `catch_unwind` does); the future is dropped afterwards.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> CatchUnwind<F> {
    fn new(future: F) -> Self {
        Self(Box::pin(future))
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}
