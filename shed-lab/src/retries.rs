//! Clients that retry, and what their retries do to an overloaded service.
//!
//! A scenario's `[clients]` table gives every `[[traffic]]` stream a
//! client with a retry policy (one client per stream: its calls share a
//! budget and a throttle):
//!
//! ```toml
//! [clients]
//! policy = "budget"        # none | immediate | backoff | budget | budget+throttle
//! retries = 3              # most retries of one request (default 3)
//! delay = "1s"             # immediate: a fixed wait before each retry (default none)
//! backoff_base = "100ms"   # backoff: the first retry's ceiling (default 100 ms)
//! backoff_max = "10s"      # and the largest (default 10 s)
//! budget_ratio = 0.1       # budget: retries per first attempt (default 0.1)
//! budget_min_per_second = 1.0
//! budget_window = "10s"
//! throttle_k = 2.0         # budget+throttle: the SRE book's K (default 2)
//! throttle_window = "120s" # its sliding window (default: the runtime's, 120 s)
//! ```
//!
//! The policies, from the seed's failure to the runtime's client layer:
//!
//! - `none`: a refused or timed-out request fails;
//! - `immediate`: retry a refusal or a timeout at once (after `delay`),
//!   up to `retries` times — the second seed's retry storm;
//! - `backoff`: the same, after an exponential backoff with full jitter;
//! - `budget`: what `shed::client::ClientLayer` does: retry only refusals
//!   (a timed-out call may have run), never sooner than the refusal's
//!   `Retry-After` plus the backoff, and only while the retry budget
//!   allows;
//! - `budget+throttle`: and adaptive client-side throttling (Google SRE
//!   book, K = 2) before every attempt.
//!
//! The backoff, the budget and the throttle are the runtime's own
//! ([`shed::client::Backoff`], [`RetryBudget`], [`AdaptiveThrottle`]), on
//! the lab's paused clock: nothing here re-implements them. Every retry
//! carries its attempt number ([`shed::with_attempt`]), so a server that
//! ranks retries below first attempts (`retries_yield`, on by default)
//! sees them as such.
//!
//! What a run reports ([`ClientReport`]): goodput (requests answered in
//! time, retries included, per request), amplification (retries sent /
//! first attempts sent, over the run and second by second) and the time
//! to recover after the scenario's last event.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shed::client::{AdaptiveThrottle, Backoff, Reservation, RetryBudget};
use tokio::time::Instant;

use crate::report::TICK;
use crate::scenario::{Dur, Scenario};
use crate::{PolicyKind, Report};

/// A client's retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientPolicy {
    /// No retries.
    None,
    /// Retry refusals and timeouts at once (or after a fixed delay).
    Immediate,
    /// Retry refusals and timeouts after exponential backoff with full jitter.
    Backoff,
    /// Retry refusals only, after `Retry-After` plus backoff, under a budget.
    Budget,
    /// [`Budget`](ClientPolicy::Budget) with adaptive client-side throttling.
    BudgetThrottle,
}

impl ClientPolicy {
    /// Every policy, from the storm to the client layer.
    pub const ALL: [ClientPolicy; 5] = [
        ClientPolicy::None,
        ClientPolicy::Immediate,
        ClientPolicy::Backoff,
        ClientPolicy::Budget,
        ClientPolicy::BudgetThrottle,
    ];

    /// The name used in scenarios, on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            ClientPolicy::None => "none",
            ClientPolicy::Immediate => "immediate",
            ClientPolicy::Backoff => "backoff",
            ClientPolicy::Budget => "budget",
            ClientPolicy::BudgetThrottle => "budget+throttle",
        }
    }
}

impl fmt::Display for ClientPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClientPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                format!("unknown client policy `{s}`: expected one of none, immediate, backoff, budget, budget+throttle")
            })
    }
}

impl<'de> Deserialize<'de> for ClientPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The `[clients]` table (see the module's documentation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientsConfig {
    /// The retry policy of every stream's client.
    pub policy: ClientPolicy,
    /// Most retries of one request.
    #[serde(default = "three")]
    pub retries: u32,
    /// `immediate`: a fixed wait before each retry.
    pub delay: Option<Dur>,
    /// The backoff's first ceiling.
    pub backoff_base: Option<Dur>,
    /// The backoff's largest ceiling.
    pub backoff_max: Option<Dur>,
    /// Retries allowed per first attempt.
    pub budget_ratio: Option<f64>,
    /// Retries allowed per second whatever the traffic.
    pub budget_min_per_second: Option<f64>,
    /// The budget's window.
    pub budget_window: Option<Dur>,
    /// The throttle's K.
    pub throttle_k: Option<f64>,
    /// The throttle's window.
    pub throttle_window: Option<Dur>,
}

fn three() -> u32 {
    3
}

impl ClientsConfig {
    /// Clients of `policy` with every other setting at its default.
    pub fn new(policy: ClientPolicy) -> Self {
        Self {
            policy,
            retries: three(),
            delay: None,
            backoff_base: None,
            backoff_max: None,
            budget_ratio: None,
            budget_min_per_second: None,
            budget_window: None,
            throttle_k: None,
            throttle_window: None,
        }
    }

    /// What is wrong with the table, if anything.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.retries > 100 {
            problems.push(format!(
                "`clients.retries` must be at most 100, got {}",
                self.retries
            ));
        }
        if let Some(r) = self.budget_ratio {
            if !(r >= 0.0 && r.is_finite()) {
                problems.push(format!("`clients.budget_ratio` must be ≥ 0, got {r}"));
            }
        }
        if let Some(k) = self.throttle_k {
            if !(k >= 1.0 && k.is_finite()) {
                problems.push(format!("`clients.throttle_k` must be ≥ 1, got {k}"));
            }
        }
        for (key, window) in [
            ("budget_window", self.budget_window),
            ("throttle_window", self.throttle_window),
        ] {
            if window.is_some_and(|w| w.0.is_zero()) {
                problems.push(format!("`clients.{key}` must be positive"));
            }
        }
        problems
    }
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failure {
    /// The server refused it before running it, with this `Retry-After`.
    Refused(Duration),
    /// The client's timeout passed first (the server may still run it).
    TimedOut,
}

/// One stream's client: its policy and the runtime's pieces it uses.
pub(crate) struct Client {
    policy: ClientPolicy,
    retries: u32,
    delay: Duration,
    backoff: Backoff,
    budget: Option<RetryBudget>,
    throttle: Option<AdaptiveThrottle>,
}

impl Client {
    /// Built inside the run, so the budget's and throttle's windows start
    /// on its clock.
    pub(crate) fn new(config: &ClientsConfig) -> Self {
        let defaults = Backoff::default();
        let backoff = Backoff::new(
            config.backoff_base.map_or(defaults.ceiling(1), |d| d.0),
            config
                .backoff_max
                .map_or(defaults.ceiling(u32::MAX), |d| d.0),
        );
        let budget = matches!(
            config.policy,
            ClientPolicy::Budget | ClientPolicy::BudgetThrottle
        )
        .then(|| {
            let mut budget = RetryBudget::new();
            if let Some(ratio) = config.budget_ratio {
                budget = budget.ratio(ratio);
            }
            if let Some(floor) = config.budget_min_per_second {
                budget = budget.min_per_second(floor);
            }
            if let Some(window) = config.budget_window {
                budget = budget.window(window.0);
            }
            budget
        });
        let throttle = (config.policy == ClientPolicy::BudgetThrottle).then(|| {
            let mut throttle = AdaptiveThrottle::new();
            if let Some(k) = config.throttle_k {
                throttle = throttle.k(k);
            }
            if let Some(window) = config.throttle_window {
                throttle = throttle.window(window.0);
            }
            throttle
        });
        Self {
            policy: config.policy,
            retries: config.retries,
            delay: config.delay.map_or(Duration::ZERO, |d| d.0),
            backoff,
            budget,
            throttle,
        }
    }

    /// Whether attempt `attempt` (1 = the first) may be sent, as the
    /// client layer decides before every attempt: a retry's budget
    /// `reservation` is redeemed, then the throttle, if any, decides.
    pub(crate) fn admit(&self, attempt: u32, reservation: Option<Reservation>) -> Admit {
        if reservation.is_some_and(|r| !r.redeem()) {
            return Admit::Revoked;
        }
        if !self.throttle.as_ref().is_none_or(AdaptiveThrottle::admit) {
            return Admit::Throttled;
        }
        if attempt == 1 {
            if let Some(budget) = &self.budget {
                budget.deposit();
            }
        }
        Admit::Sent
    }

    /// Records how a sent attempt ended (`accepted`: not refused for
    /// overload, and answered before the timeout).
    pub(crate) fn answered(&self, accepted: bool) {
        if let Some(throttle) = &self.throttle {
            throttle.record(true, accepted);
        }
    }

    /// How long to wait before retrying after attempt `attempt` failed,
    /// and the budget's grant for the retry if the client has a budget;
    /// `None` to give up.
    pub(crate) fn retry_wait(
        &self,
        attempt: u32,
        failure: Failure,
    ) -> Option<(Duration, Option<Reservation>)> {
        if attempt > self.retries {
            return None;
        }
        match (self.policy, failure) {
            (ClientPolicy::None, _) => None,
            (ClientPolicy::Immediate, _) => Some((self.delay, None)),
            (ClientPolicy::Backoff, _) => Some((self.backoff.delay(attempt), None)),
            // The client layer retries only what did not run.
            (_, Failure::TimedOut) => None,
            (_, Failure::Refused(retry_after)) => {
                let wait = retry_after + self.backoff.delay(attempt);
                match &self.budget {
                    None => Some((wait, None)),
                    // The budget may defer it: it paces retries.
                    Some(budget) => budget
                        .reserve(Instant::now() + wait)
                        .map(|r| (r.due() - Instant::now(), Some(r))),
                }
            }
        }
    }
}

/// Whether an attempt was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Sent.
    Sent,
    /// Kept back by the throttle.
    Throttled,
    /// A retry the budget granted, not sent when due: the rate of first
    /// attempts had fallen since.
    Revoked,
}

/// Per-tick counts of a run with clients (ticks of [`TICK`] from the start
/// of the measured window).
#[derive(Debug, Default)]
struct Ticks {
    /// Requests arriving (first attempts wanted, throttled or not).
    requests: Vec<u64>,
    /// Requests answered in time, by the tick of their arrival.
    good: Vec<u64>,
    /// Of those, answered at their first attempt.
    first_good: Vec<u64>,
    /// First attempts sent, by the tick they were sent.
    first: Vec<u64>,
    /// Retries sent, by the tick they were sent.
    retries: Vec<u64>,
    /// Attempts refused by the server, by the tick they were sent.
    refused: Vec<u64>,
    /// Attempts the throttle kept back, by tick.
    throttled: Vec<u64>,
    /// Retries granted by the budget and not sent when due, by tick.
    revoked: Vec<u64>,
}

fn bump(v: &mut Vec<u64>, tick: usize) {
    if v.len() <= tick {
        v.resize(tick + 1, 0);
    }
    v[tick] += 1;
}

/// Every stream's client and what they did.
pub(crate) struct Clients {
    pub(crate) streams: Vec<Client>,
    start: Instant,
    window_end: Instant,
    ticks: RefCell<Ticks>,
}

/// What a count is about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    /// A request arrived.
    Request,
    /// A request (arrived at the instant given) was answered in time.
    Good,
    /// And at its first attempt.
    FirstGood,
    /// A first attempt was sent.
    First,
    /// A retry was sent.
    Retry,
    /// An attempt (sent at the instant given) was refused.
    Refused,
    /// The throttle kept an attempt back.
    Throttled,
    /// The budget revoked a retry it had granted, when it was due.
    Revoked,
}

impl Clients {
    pub(crate) fn new(
        config: &ClientsConfig,
        streams: usize,
        start: Instant,
        window_end: Instant,
    ) -> Self {
        Self {
            streams: (0..streams).map(|_| Client::new(config)).collect(),
            start,
            window_end,
            ticks: RefCell::default(),
        }
    }

    /// Counts `event` at `at`, if `at` is in the measured window.
    pub(crate) fn count(&self, event: Event, at: Instant) {
        if !(self.start..self.window_end).contains(&at) {
            return;
        }
        let tick = ((at - self.start).as_nanos() / TICK.as_nanos()) as usize;
        let mut t = self.ticks.borrow_mut();
        let v = match event {
            Event::Request => &mut t.requests,
            Event::Good => &mut t.good,
            Event::FirstGood => &mut t.first_good,
            Event::First => &mut t.first,
            Event::Retry => &mut t.retries,
            Event::Refused => &mut t.refused,
            Event::Throttled => &mut t.throttled,
            Event::Revoked => &mut t.revoked,
        };
        bump(v, tick);
    }

    /// The report of a run that measured `seconds` and whose load changed
    /// first at `trigger.0` and last at `trigger.1` (seconds into the
    /// window), if ever.
    pub(crate) fn report(
        &self,
        policy: ClientPolicy,
        seconds: f64,
        trigger: Option<(f64, f64)>,
    ) -> ClientReport {
        let trigger_end = trigger.map(|t| t.1);
        let t = self.ticks.borrow();
        let ticks_per_second = (Duration::from_secs(1).as_nanos() / TICK.as_nanos()) as usize;
        let n_ticks = (seconds / TICK.as_secs_f64()).round() as usize;
        let at = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        let sum = |v: &Vec<u64>, r: std::ops::Range<usize>| r.map(|i| at(v, i)).sum::<u64>();
        let per_second: Vec<ClientSecond> = (0..seconds.ceil() as usize)
            .map(|s| {
                let r = s * ticks_per_second..(s + 1) * ticks_per_second;
                let first = sum(&t.first, r.clone());
                let retries = sum(&t.retries, r.clone());
                ClientSecond {
                    second: s as u32,
                    requests: sum(&t.requests, r.clone()),
                    good: sum(&t.good, r.clone()),
                    first_good: sum(&t.first_good, r.clone()),
                    first_attempts: first,
                    retries,
                    offered: first + retries,
                    refused: sum(&t.refused, r.clone()),
                    throttled: sum(&t.throttled, r.clone()),
                    revoked: sum(&t.revoked, r),
                    amplification: amplification(first, retries),
                }
            })
            .collect();
        let (requests, good) = (sum(&t.requests, 0..n_ticks), sum(&t.good, 0..n_ticks));
        let (first, retries) = (sum(&t.first, 0..n_ticks), sum(&t.retries, 0..n_ticks));
        let recovered_after_s = trigger_end.map(|end| {
            recovery(
                &t.requests,
                &t.good,
                (end / TICK.as_secs_f64()).round() as usize,
                n_ticks,
            )
            .map(|ticks| round1(ticks as f64 * TICK.as_secs_f64()))
        });
        let trigger_first_goodput_rps = trigger.filter(|t| t.1 > t.0).map(|(from, to)| {
            let tick = |s: f64| (s / TICK.as_secs_f64()).round() as usize;
            round1(sum(&t.first_good, tick(from)..tick(to)) as f64 / (to - from))
        });
        ClientReport {
            policy: policy.name().to_string(),
            trigger_first_goodput_rps,
            requests,
            good,
            goodput_rps: round1(good as f64 / seconds),
            good_share: if requests == 0 {
                1.0
            } else {
                round3(good as f64 / requests as f64)
            },
            first_good: sum(&t.first_good, 0..n_ticks),
            first_attempts: first,
            retries,
            refused: sum(&t.refused, 0..n_ticks),
            throttled: sum(&t.throttled, 0..n_ticks),
            revoked: sum(&t.revoked, 0..n_ticks),
            amplification: amplification(first, retries),
            max_amplification: per_second
                .iter()
                .map(|s| s.amplification)
                .fold(1.0, f64::max),
            trigger_end_s: trigger_end,
            recovered_after_s: recovered_after_s.flatten(),
            per_second,
        }
    }
}

/// The share of the requests of a window that must be answered in time
/// for the service to count as recovered.
pub const RECOVERED: f64 = 0.95;
/// The window over which recovery is judged, in ticks (half a second).
const RECOVERY_TICKS: usize = 5;

/// The first tick, counted from `from`, after which every window of
/// `RECOVERY_TICKS` until `end` answers at least `RECOVERED` of its
/// requests in time (by their arrival); `None` if the run ends first.
pub fn recovery(requests: &[u64], good: &[u64], from: usize, end: usize) -> Option<usize> {
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let healthy = |t: usize| {
        let r: u64 = (t..t + RECOVERY_TICKS).map(|i| at(requests, i)).sum();
        let g: u64 = (t..t + RECOVERY_TICKS).map(|i| at(good, i)).sum();
        g as f64 >= RECOVERED * r as f64
    };
    let last = end.checked_sub(RECOVERY_TICKS)?;
    if from > last {
        return None;
    }
    // The earliest start from which no later window falls short.
    let mut first_healthy = None;
    for t in (from..=last).rev() {
        if healthy(t) {
            first_healthy = Some(t);
        } else {
            break;
        }
    }
    first_healthy.map(|t| t - from)
}

fn amplification(first: u64, retries: u64) -> f64 {
    if first == 0 {
        if retries == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        round3((first + retries) as f64 / first as f64)
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One second of a run with clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientSecond {
    /// The second, from the start of the window.
    pub second: u32,
    /// Requests arriving in it.
    pub requests: u64,
    /// Of those, answered in time (retries included).
    pub good: u64,
    /// Of those, answered in time at their first attempt.
    pub first_good: u64,
    /// First attempts sent in it.
    pub first_attempts: u64,
    /// Retries sent in it.
    pub retries: u64,
    /// Attempts sent in it: first attempts and retries.
    pub offered: u64,
    /// Attempts sent in it that the server refused.
    pub refused: u64,
    /// Attempts the throttle kept back in it.
    pub throttled: u64,
    /// Retries the budget granted and did not send when due, in it.
    pub revoked: u64,
    /// `offered / first_attempts` (1 = no retries).
    pub amplification: f64,
}

/// What the clients of a run saw and did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientReport {
    /// The client policy.
    pub policy: String,
    /// Requests arriving in the window.
    pub requests: u64,
    /// Of those, answered in time, retries included.
    pub good: u64,
    /// `good` per second of the window.
    pub goodput_rps: f64,
    /// `good / requests`.
    pub good_share: f64,
    /// Requests answered in time at their first attempt.
    pub first_good: u64,
    /// Of those, per second from the scenario's first event to its last
    /// (the trigger), if it has two.
    pub trigger_first_goodput_rps: Option<f64>,
    /// First attempts sent.
    pub first_attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Attempts refused by the server.
    pub refused: u64,
    /// Attempts the throttle kept back.
    pub throttled: u64,
    /// Retries the budget granted when their attempt was refused, then did
    /// not send when they were due, the rate of first attempts having
    /// fallen meanwhile: callers that waited out a `Retry-After` for
    /// nothing.
    pub revoked: u64,
    /// `(first attempts + retries) / first attempts` over the window.
    pub amplification: f64,
    /// The highest amplification of any second.
    pub max_amplification: f64,
    /// The scenario's last event (seconds into the window), after which
    /// recovery is measured.
    pub trigger_end_s: Option<f64>,
    /// How long after `trigger_end_s` every half second from then on
    /// answered at least 95% of its requests in time; `None` if it never
    /// did (or the scenario has no event).
    pub recovered_after_s: Option<f64>,
    /// Second by second.
    pub per_second: Vec<ClientSecond>,
}

/// Runs `scenario` with each client policy (the scenario's `[clients]`
/// table, or the defaults, with only the policy changed) under each
/// server policy.
pub fn compare_clients(
    scenario: &Scenario,
    servers: &[PolicyKind],
    clients: &[ClientPolicy],
    factor: f64,
) -> Vec<Report> {
    servers
        .iter()
        .flat_map(|&server| {
            clients.iter().map(move |&client| {
                let mut variant = scenario.clone();
                let mut config = variant
                    .clients
                    .clone()
                    .unwrap_or_else(|| ClientsConfig::new(client));
                config.policy = client;
                variant.clients = Some(config);
                crate::run(&variant, server, factor)
            })
        })
        .collect()
}

/// Renders runs with clients: server policy × client policy → goodput,
/// amplification, time to recover.
pub fn table(reports: &[Report]) -> String {
    let mut out = format!(
        "{:<17} {:<16} {:>9} {:>7} {:>13} {:>9} {:>11} {:>8} {:>9} {:>10}\n",
        "server",
        "clients",
        "goodput",
        "in time",
        "1st, trigger",
        "retries",
        "amplif.",
        "max/s",
        "throttled",
        "recovered"
    );
    for r in reports {
        let Some(c) = &r.clients else { continue };
        let recovered = match (c.trigger_end_s, c.recovered_after_s) {
            (None, _) => "-".to_string(),
            (Some(_), Some(s)) => format!("{s:.1} s"),
            (Some(_), None) => "never".to_string(),
        };
        out.push_str(&format!(
            "{:<17} {:<16} {:>5.0} rps {:>6.1}% {:>13} {:>9} {:>11.3} {:>8.2} {:>9} {:>10}\n",
            r.policy,
            c.policy,
            c.goodput_rps,
            100.0 * c.good_share,
            c.trigger_first_goodput_rps
                .map_or("-".into(), |g| format!("{g:.0} rps")),
            c.retries,
            c.amplification,
            c.max_amplification,
            c.throttled,
            recovered
        ));
    }
    out
}
