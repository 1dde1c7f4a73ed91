//! Scenarios: what traffic hits which server, read from TOML files.
//!
//! ```toml
//! name = "seed-asyncio"
//! seconds = 2          # the measured window
//! warmup = "1s"         # optional: load before the window, not counted
//! seed = 7
//!
//! [limiter]             # optional: without it (or its capacity), shed runs the library's defaults
//! capacity = 8          # slots (pins shed's capacity; the anchors' slots, default 256)
//! anchor_capacity = 8   # optional: the anchors' slots alone (shed keeps its defaults)
//! queue_bound = 10000   # optional: most weight waiting at once
//! mode = "enforce"      # optional: enforce | observe | off
//! codel = true          # optional: CoDel on the wait queue (codel_target = "5ms", codel_interval = "100ms")
//! lifo = true           # optional: adaptive LIFO (newest first while the queue stands)
//! retries_yield = false # optional: retries wait in arrival order (default: behind first attempts)
//! initial = 64          # optional: the slots the adaptive default starts from (`AutoSettings::initial`)
//!
//! [[class]]             # optional: override or add classes
//! name = "critical"
//! share = 1.0
//! floor = 0
//! max_wait = "50ms"
//!
//! [[traffic]]
//! class = "critical"
//! rps = 4000
//! arrivals = "poisson"  # or "uniform"
//! service = "5ms"
//! service_dist = "const" # or "exp", "lognormal" (a heavy tail), "bimodal" (cache hits and misses)
//! timeout = "250ms"
//! weight = 1
//! max_wait = "50ms"     # optional, as in #[shed(max_wait = ...)]
//! deadline = false      # optional: carry the timeout into the server as a deadline
//! retries = 0           # optional: client retries of a refused or timed-out call
//! retry = "immediate"   # optional: immediate | retry_after | a duration like "100ms"
//!
//! [server]              # optional: a bottleneck behind the admission
//! workers = 8
//! model = "fifo"        # fifo (workers with an internal queue) or ps (processor sharing)
//!
//! [adaptive]            # optional: an adaptive limit for the shed policy
//! algorithm = "aimd"    # auto | fixed | aimd | vegas | gradient2 (see `Algorithm`)
//! min = 4
//! max = 256
//! initial = 64          # optional: default limiter.capacity
//! window = "100ms"
//! target = "40ms"       # aimd's latency target
//!
//! [overload]            # optional: hysteresis for the shed policy
//! enter = 1.25          # smoothed occupancy that starts shedding low classes
//! exit = 0.9
//! smoothing = 0.3
//! tick = "1s"
//!
//! [tenants]             # optional: every call's tenant (see `tenants`)
//! [[tenants.group]]
//! name = "quiet"
//! count = 9
//!
//! [clients]             # optional: clients with a retry policy (see `retries`)
//! policy = "budget"     # none | immediate | backoff | budget | budget+throttle
//!
//! [[event]]
//! at = "1s"
//! service_factor = 4.0  # or rps = 2000
//! class = "critical"    # optional: only this class's streams
//!
//! [fleet]               # optional: replicas behind a balancer (see the fleet module)
//! replicas = 4
//! balancer = "weighted"
//! ```

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shed::ClassSpec;

/// A scenario that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed, has an unknown key or a value of the wrong kind.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// The parser's message: the key, its line, and what was expected.
        message: String,
    },
    /// The values do not make a scenario.
    #[error("{file}: {}", problems.join("; "))]
    Invalid {
        /// The file.
        file: String,
        /// Every problem found.
        problems: Vec<String>,
    },
}

/// A duration written as a string such as `"50ms"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(text.trim())
            .map(Dur)
            .map_err(|e| {
                serde::de::Error::custom(format!(
                    "expected a duration like \"50ms\", got \"{text}\" ({e})"
                ))
            })
    }
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponential gaps: an open-loop Poisson process.
    #[default]
    Poisson,
    /// Equal gaps.
    Uniform,
}

impl Arrivals {
    /// The gap to the next arrival at `rps` calls a second; while the rate
    /// is zero, the stream checks again every 10 ms.
    pub fn gap(self, rps: f64, rng: &mut fastrand::Rng) -> std::time::Duration {
        if rps <= 0.0 {
            return std::time::Duration::from_millis(10);
        }
        let mean_gap = 1.0 / rps;
        std::time::Duration::from_secs_f64(match self {
            Arrivals::Uniform => mean_gap,
            Arrivals::Poisson => -mean_gap * (1.0 - rng.f64()).ln(),
        })
    }
}

/// How service times vary around their mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ServiceDist {
    /// Always the mean.
    #[default]
    Const,
    /// Exponentially distributed around the mean.
    Exp,
    /// Lognormal around the mean, with a σ of 1 (of the logarithm): a
    /// real service's heavy tail, where most calls are quick and a few
    /// take far longer (the median is 0.61 of the mean, the p99 6.2
    /// times it; a coefficient of variation of 1.31, where exponential
    /// times have 1).
    Lognormal,
    /// Two kinds of call in one handler, as a cache in front of a slower
    /// store serves them: nine in ten hit and take 0.17 of the mean, one
    /// in ten misses and takes 8.5 times it (fifty times a hit), each
    /// exponential around its own mean. A coefficient of variation of
    /// 3.7; the median is 0.8 of a hit, the p99 19.5 times the mean.
    Bimodal,
}

/// The σ of the logarithm of [`ServiceDist::Lognormal`] service times.
const LOGNORMAL_SIGMA: f64 = 1.0;
/// The share of [`ServiceDist::Bimodal`] calls that miss.
const MISS_SHARE: f64 = 0.1;
/// How many times longer a [`ServiceDist::Bimodal`] miss takes than a hit.
const MISS_OVER_HIT: f64 = 50.0;

impl ServiceDist {
    /// A service time of mean `mean` seconds, drawn from `rng`; random
    /// draws are rounded to whole milliseconds, which keeps the mean:
    /// tokio's timer fires on millisecond ticks, so a fractional sleep
    /// would end at the next tick, and at 5 ms the slots would serve
    /// about 10% less than the scenario's capacity.
    pub fn draw(self, mean: f64, rng: &mut fastrand::Rng) -> f64 {
        let drawn = match self {
            ServiceDist::Const => return mean,
            ServiceDist::Exp => -mean * (1.0 - rng.f64()).ln(),
            ServiceDist::Lognormal => {
                // Box-Muller: a standard normal from two uniforms; the
                // first is in (0, 1], so its logarithm is finite.
                let (u, v) = (1.0 - rng.f64(), rng.f64());
                let normal = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                let sigma = LOGNORMAL_SIGMA;
                mean * (sigma * normal - sigma * sigma / 2.0).exp()
            }
            ServiceDist::Bimodal => {
                let hit = mean / (1.0 - MISS_SHARE + MISS_SHARE * MISS_OVER_HIT);
                let own = if rng.f64() < MISS_SHARE {
                    hit * MISS_OVER_HIT
                } else {
                    hit
                };
                -own * (1.0 - rng.f64()).ln()
            }
        };
        (drawn * 1000.0).round() / 1000.0
    }
}

/// When a client retries a refused or timed-out call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryDelay {
    /// At once.
    Immediate,
    /// After the refusal's `retry_after` (timeouts retry at once).
    RetryAfter,
    /// After a fixed delay.
    After(Duration),
}

impl<'de> Deserialize<'de> for RetryDelay {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.trim() {
            "immediate" => Ok(RetryDelay::Immediate),
            "retry_after" => Ok(RetryDelay::RetryAfter),
            other => humantime::parse_duration(other)
                .map(RetryDelay::After)
                .map_err(|_| serde::de::Error::custom(format!(
                    "expected \"immediate\", \"retry_after\" or a duration like \"100ms\", got \"{text}\""
                ))),
        }
    }
}

/// The `[limiter]` table. Without it (or without its `capacity`), the
/// `shed` policy runs exactly the library's default configuration, adaptive
/// capacity included, and the anchors get [`shed::DEFAULT_CAPACITY`] slots.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimiterConfig {
    /// Slots: the anchors' capacity, and shed's when `pinned`.
    #[serde(default = "default_capacity")]
    pub capacity: u32,
    /// Whether the scenario gives the capacity (else shed's is adaptive).
    #[serde(skip)]
    pub pinned: bool,
    /// The anchors' slots alone, when they differ from `capacity`: a
    /// scenario that runs shed's defaults (no `capacity`) can still give
    /// the anchors the capacity that a person tuning them by hand would set.
    pub anchor_capacity: Option<u32>,
    /// Most weight waiting at once (default: four times the capacity).
    pub queue_bound: Option<u64>,
    /// `enforce`, `observe` or `off`.
    pub mode: Option<String>,
    /// CoDel on the wait queue (defaults: target 5 ms, interval 100 ms).
    #[serde(default)]
    pub codel: bool,
    /// CoDel's target wait.
    pub codel_target: Option<Dur>,
    /// CoDel's interval.
    pub codel_interval: Option<Dur>,
    /// Adaptive LIFO: serve the newest waiter first while the queue stands.
    #[serde(default)]
    pub lifo: bool,
    /// Whether retries wait behind first attempts (default: the library's, on).
    pub retries_yield: Option<bool>,
    /// The slots the adaptive default starts from, when the capacity is
    /// not pinned (`AutoSettings::initial`; default 2).
    pub initial: Option<u32>,
}

fn default_capacity() -> u32 {
    shed::DEFAULT_CAPACITY
}

impl LimiterConfig {
    /// The slots of the anchor policies (none, reject-when-full,
    /// queue-wait): `anchor_capacity`, else `capacity`.
    pub fn anchor_slots(&self) -> u32 {
        self.anchor_capacity.unwrap_or(self.capacity)
    }

    /// How the header of a report names the slots: the pinned capacity,
    /// or shed's adaptive default beside the anchors' slots.
    pub fn slots_label(&self) -> String {
        if self.pinned && self.anchor_capacity.is_none_or(|a| a == self.capacity) {
            format!("{} slots", self.capacity)
        } else if self.pinned {
            format!("{} slots, anchors {}", self.capacity, self.anchor_slots())
        } else {
            format!("shed adaptive, anchors {} slots", self.anchor_slots())
        }
    }
}

impl Default for LimiterConfig {
    fn default() -> Self {
        Self {
            capacity: default_capacity(),
            pinned: false,
            anchor_capacity: None,
            queue_bound: None,
            mode: None,
            codel: false,
            codel_target: None,
            codel_interval: None,
            lifo: false,
            retries_yield: None,
            initial: None,
        }
    }
}

/// A `[[class]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// The class's name.
    pub name: String,
    /// Priority rank (0 first); defaults to after the configured classes.
    pub rank: Option<u32>,
    /// Share of the capacity.
    pub share: Option<f64>,
    /// Reserved slots.
    pub floor: Option<u32>,
    /// Default queue-wait budget.
    pub max_wait: Option<Dur>,
}

/// A `[[traffic]]` table: one stream of calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// The class of the stream's calls.
    #[serde(default = "critical")]
    pub class: String,
    /// Offered calls per second.
    pub rps: f64,
    /// How arrivals are spaced.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// Mean service time.
    pub service: Dur,
    /// How service times vary.
    #[serde(default)]
    pub service_dist: ServiceDist,
    /// The client's timeout.
    pub timeout: Dur,
    /// Slots per call.
    #[serde(default = "one")]
    pub weight: u32,
    /// The call's queue-wait budget, as in `#[shed(max_wait = ...)]`.
    pub max_wait: Option<Dur>,
    /// Whether the client's timeout travels to the server as a deadline.
    #[serde(default)]
    pub deadline: bool,
    /// Client retries of a refused or timed-out call.
    #[serde(default)]
    pub retries: u32,
    /// When retries happen.
    pub retry: Option<RetryDelay>,
}

fn critical() -> String {
    "critical".into()
}

fn one() -> u32 {
    1
}

/// The `[server]` table: a bottleneck behind the admission.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// How many calls the bottleneck runs at full speed.
    pub workers: u32,
    /// `fifo` (workers with an internal queue) or `ps` (processor sharing).
    #[serde(default)]
    pub model: ServerModel,
}

/// How the bottleneck shares its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ServerModel {
    /// Workers serve calls one at a time, in arrival order.
    #[default]
    Fifo,
    /// Workers' capacity is shared equally by all admitted calls.
    Ps,
}

/// The `[adaptive]` table: an adaptive limit for the `shed` policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveConfig {
    /// An [`Algorithm`](crate::Algorithm)'s name: `auto`, `fixed`, `aimd`,
    /// `vegas` or `gradient2` (`static`: `fixed`).
    pub algorithm: String,
    /// Lowest limit (default: the runtime's, `AdaptiveLimit::DEFAULT_LIMITS`).
    #[serde(default = "default_min")]
    pub min: u32,
    /// Highest limit (default: the runtime's).
    #[serde(default = "default_max")]
    pub max: u32,
    /// The starting limit (default: `limiter.capacity`).
    pub initial: Option<u32>,
    /// How often the limit is reconsidered (default: the runtime's, 100 ms).
    pub window: Option<Dur>,
    /// AIMD's latency target.
    pub target: Option<Dur>,
}

fn default_min() -> u32 {
    shed::adaptive::AdaptiveLimit::DEFAULT_LIMITS.0
}

fn default_max() -> u32 {
    shed::adaptive::AdaptiveLimit::DEFAULT_LIMITS.1
}

/// The `[overload]` table: the hysteresis controller for the `shed` policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadConfig {
    /// Smoothed occupancy that starts shedding low classes (default 1.25).
    pub enter: Option<f64>,
    /// Smoothed occupancy below which they come back (default 0.9).
    pub exit: Option<f64>,
    /// EWMA weight of the newest sample (default 0.3).
    pub smoothing: Option<f64>,
    /// How often the controller samples and ramps (default 1 s).
    pub tick: Option<Dur>,
}

/// An `[[event]]` table: something changes at a time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// When, from the start of the measured window.
    pub at: Dur,
    /// Multiplies the base service time (1.0 restores it).
    pub service_factor: Option<f64>,
    /// Sets the offered rate of the streams concerned.
    pub rps: Option<f64>,
    /// Only the streams of this class (default: all).
    pub class: Option<String>,
}

/// A stretch of a scenario between events.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// When it starts, in seconds from the start of the measured window.
    pub start_s: f64,
    /// When it ends.
    pub end_s: f64,
    /// The best goodput possible in it: everything offered while the slots'
    /// time covers it, else the part of the offered calls that it covers.
    pub ideal_rps: f64,
}

/// A whole scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name, reported in results.
    pub name: String,
    /// The measured window, in simulated seconds: calls that arrive in it
    /// are counted. Traffic goes on after it for the longest client
    /// timeout, so the last calls of the window compete with later ones as
    /// they would in the middle of a run.
    pub seconds: f64,
    /// Load before the measured window, not counted (default none): lets
    /// queues reach their steady state, so that a policy is not credited
    /// with the queue it fills at the start and drains after the end.
    pub warmup: Option<Dur>,
    /// The random seed: the same seed gives the same numbers.
    #[serde(default)]
    pub seed: u64,
    /// The limiter (default: the library's defaults).
    #[serde(default)]
    pub limiter: LimiterConfig,
    /// Class overrides and additions.
    #[serde(default, rename = "class")]
    pub classes: Vec<ClassConfig>,
    /// The streams.
    #[serde(rename = "traffic")]
    pub traffic: Vec<Traffic>,
    /// Changes over time.
    #[serde(default, rename = "event")]
    pub events: Vec<Event>,
    /// A bottleneck behind the admission (default: none).
    pub server: Option<ServerConfig>,
    /// An adaptive limit for the `shed` policy (default: a static one).
    pub adaptive: Option<AdaptiveConfig>,
    /// Hysteresis for the `shed` policy (default: none).
    pub overload: Option<OverloadConfig>,
    /// Replicas behind a balancer (default: one instance, no balancer).
    pub fleet: Option<crate::fleet::FleetConfig>,
    /// Clients with a retry policy (default: the streams' own `retries`).
    pub clients: Option<crate::retries::ClientsConfig>,
    /// Every call's tenant (default: none, one anonymous tenant).
    pub tenants: Option<crate::tenants::TenantsConfig>,
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let file = path.as_ref().display().to_string();
        let text = std::fs::read_to_string(path.as_ref()).map_err(|source| ScenarioError::Io {
            file: file.clone(),
            source,
        })?;
        Scenario::from_toml(&text, &file)
    }

    /// Parses and checks a scenario; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let parse_error = |e: toml::de::Error| ScenarioError::Parse {
            file: file.to_string(),
            message: e.to_string().trim_end().replace('\n', "\n  "),
        };
        let mut scenario: Scenario = toml::from_str(text).map_err(parse_error)?;
        let raw: toml::Table = toml::from_str(text).map_err(parse_error)?;
        scenario.limiter.pinned = raw.get("limiter").and_then(|l| l.get("capacity")).is_some();
        let problems = scenario.problems();
        if problems.is_empty() {
            Ok(scenario)
        } else {
            Err(ScenarioError::Invalid {
                file: file.to_string(),
                problems,
            })
        }
    }

    /// The classes in force: the defaults, overridden and extended by the
    /// `[[class]]` tables.
    pub fn class_specs(&self) -> Vec<ClassSpec> {
        let mut specs = ClassSpec::defaults();
        for (i, c) in self.classes.iter().enumerate() {
            let base = specs.iter().find(|s| s.name() == c.name).cloned();
            let rank = c
                .rank
                .or(base.as_ref().map(ClassSpec::rank))
                .unwrap_or(10 + i as u32);
            let name: &'static str = Box::leak(c.name.clone().into_boxed_str());
            let mut spec = ClassSpec::new(name, rank);
            if let Some(base) = &base {
                spec = spec
                    .share(base.share_of_capacity())
                    .floor(base.floor_slots())
                    .max_wait(base.default_max_wait());
            }
            if let Some(share) = c.share {
                spec = spec.share(share);
            }
            if let Some(floor) = c.floor {
                spec = spec.floor(floor);
            }
            if let Some(Dur(max_wait)) = c.max_wait {
                spec = spec.max_wait(max_wait);
            }
            match specs.iter_mut().find(|s| s.name() == c.name) {
                Some(slot) => *slot = spec,
                None => specs.push(spec),
            }
        }
        specs
    }

    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !(self.seconds > 0.0 && self.seconds <= 3600.0) {
            problems.push(format!(
                "`seconds` must be in (0, 3600], got {}",
                self.seconds
            ));
        }
        if self.warmup.is_some_and(|w| w.0 > Duration::from_secs(600)) {
            problems.push("`warmup` must be at most 10 minutes".into());
        }
        if self.limiter.capacity == 0 {
            problems.push("`limiter.capacity` must be at least 1".into());
        }
        if self.limiter.anchor_capacity == Some(0) {
            problems.push("`limiter.anchor_capacity` must be at least 1".into());
        }
        if self.limiter.initial == Some(0) {
            problems.push("`limiter.initial` must be at least 1".into());
        }
        if self.limiter.pinned && self.limiter.initial.is_some() {
            problems.push(
                "`limiter.initial` is where the adaptive default starts: drop it or `limiter.capacity`"
                    .into(),
            );
        }
        if !self.limiter.pinned && self.server.is_none() {
            problems.push(
                "a scenario without `limiter.capacity` needs a `[server]`: its workers are the capacity the default limit must find".into(),
            );
        }
        if let Some(mode) = &self.limiter.mode {
            if let Err(e) = mode.parse::<shed::Mode>() {
                problems.push(format!("`limiter.mode`: {e}"));
            }
        }
        if let Some(server) = &self.server {
            if server.workers == 0 {
                problems.push("`server.workers` must be at least 1".into());
            }
        }
        if let Some(a) = &self.adaptive {
            if crate::Algorithm::parse(&a.algorithm).is_none() {
                problems.push(format!(
                    "`adaptive.algorithm` = \"{}\": expected one of {}",
                    a.algorithm,
                    crate::Algorithm::names()
                ));
            }
            if a.algorithm == "aimd" && a.target.is_none() {
                problems
                    .push("`adaptive.target` is needed for aimd (a latency, like \"50ms\")".into());
            }
            if a.min == 0 || a.min > a.max {
                problems.push(format!(
                    "`adaptive.min` ({}) must be from 1 to `adaptive.max` ({})",
                    a.min, a.max
                ));
            }
        }
        if let Some(clients) = &self.clients {
            problems.extend(clients.problems());
            if self
                .traffic
                .iter()
                .any(|t| t.retries > 0 || t.retry.is_some())
            {
                problems.push(
                    "`[clients]` gives every stream its retries: remove `retries` and `retry` from `[[traffic]]`".into(),
                );
            }
        }
        if let Some(tenants) = &self.tenants {
            problems.extend(tenants.problems());
            let classes = self.class_specs();
            for a in &tenants.admits {
                if !classes.iter().any(|s| s.name() == a.class) {
                    problems.push(format!("`tenants.admit`: `{}` is not a class", a.class));
                }
            }
            if self.fleet.is_some() || self.clients.is_some() {
                problems.push(
                    "`[tenants]` is simulated on one instance without `[clients]`: remove `[fleet]` or `[clients]`".into(),
                );
            }
        }
        if self.traffic.is_empty() {
            problems.push("at least one `[[traffic]]` table is needed".into());
        }
        if let Some(fleet) = &self.fleet {
            problems.extend(fleet.problems());
            if self.traffic.iter().any(|t| t.retries > 0) || self.clients.is_some() {
                problems.push(
                    "client retries (`traffic.retries`, `[clients]`) are not simulated in a fleet: use `fleet.retry`".into(),
                );
            }
            if self.adaptive.is_some() || self.overload.is_some() {
                problems.push(
                    "`[adaptive]` and `[overload]` are not simulated in a fleet: each replica runs the `[limiter]` as configured".into(),
                );
            }
        }
        let specs = self.class_specs();
        let known = specs
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ");
        for c in &self.classes {
            if let Some(share) = c.share {
                if !(share > 0.0 && share <= 1.0) {
                    problems.push(format!(
                        "`class.share` of `{}` must be in (0, 1], got {share}",
                        c.name
                    ));
                }
            }
        }
        for (i, t) in self.traffic.iter().enumerate() {
            let at = format!("traffic #{}", i + 1);
            if !specs.iter().any(|s| s.name() == t.class) {
                problems.push(format!(
                    "{at}: `class` = \"{}\" is not a class (known classes: {known})",
                    t.class
                ));
            }
            if !(t.rps > 0.0 && t.rps.is_finite()) {
                problems.push(format!("{at}: `rps` must be positive, got {}", t.rps));
            }
            if t.weight == 0 {
                problems.push(format!("{at}: `weight` must be at least 1"));
            }
            if t.service.0.is_zero() {
                problems.push(format!("{at}: `service` must be longer than zero"));
            }
            if t.timeout.0.is_zero() {
                problems.push(format!("{at}: `timeout` must be longer than zero"));
            }
        }
        for (i, e) in self.events.iter().enumerate() {
            let at = format!("event #{}", i + 1);
            match (e.service_factor, e.rps) {
                (None, None) | (Some(_), Some(_)) => problems.push(format!(
                    "{at}: give exactly one of `service_factor` or `rps`"
                )),
                (Some(f), None) if !(f > 0.0 && f.is_finite()) => {
                    problems.push(format!("{at}: `service_factor` must be positive, got {f}"))
                }
                (None, Some(r)) if !(r >= 0.0 && r.is_finite()) => {
                    problems.push(format!("{at}: `rps` must be zero or more, got {r}"))
                }
                _ => {}
            }
            if let Some(class) = &e.class {
                if !specs.iter().any(|s| s.name() == class) {
                    problems.push(format!(
                        "{at}: `class` = \"{class}\" is not a class (known classes: {known})"
                    ));
                }
            }
        }
        problems
    }

    /// The stretches between events, each with the best goodput possible
    /// in it at rate factor `factor`.
    pub fn phases(&self, factor: f64) -> Vec<Phase> {
        let mut events: Vec<&Event> = self.events.iter().collect();
        events.sort_by_key(|e| e.at.0);
        let mut rps: Vec<f64> = self.traffic.iter().map(|t| t.rps * factor).collect();
        let mut service_factor = vec![1.0; self.traffic.len()];
        let mut phases = Vec::new();
        let mut start = 0.0;
        let mut at = 0;
        loop {
            // Events at the same moment make one change.
            while let Some(e) = events.get(at).filter(|e| e.at.0.as_secs_f64() <= start) {
                for (i, t) in self.traffic.iter().enumerate() {
                    if e.class.as_ref().is_some_and(|c| *c != t.class) {
                        continue;
                    }
                    if let Some(f) = e.service_factor {
                        service_factor[i] = f;
                    }
                    if let Some(r) = e.rps {
                        rps[i] = r * factor;
                    }
                }
                at += 1;
            }
            let end = events
                .get(at)
                .map_or(self.seconds, |e| e.at.0.as_secs_f64().min(self.seconds));
            phases.push(Phase {
                start_s: start,
                end_s: end,
                ideal_rps: self.ideal_rps(&rps, &service_factor),
            });
            if end >= self.seconds {
                return phases;
            }
            start = end;
        }
    }

    /// Everything offered if the slots can serve it, else the share of it
    /// that the slots' time covers.
    fn ideal_rps(&self, rps: &[f64], service_factor: &[f64]) -> f64 {
        let offered: f64 = rps.iter().sum();
        // Slot-seconds asked for per second.
        let demand: f64 = self
            .traffic
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let slots = if self.server.is_some() {
                    1.0
                } else {
                    f64::from(t.weight)
                };
                rps[i] * t.service.0.as_secs_f64() * service_factor[i] * slots
            })
            .sum();
        let slots = match &self.server {
            Some(server) => f64::from(server.workers),
            None => f64::from(self.limiter.capacity),
        };
        if demand <= slots {
            offered
        } else {
            offered * slots / demand
        }
    }

    /// The service's throughput with every slot busy, for this traffic
    /// mix at its base service times: capacity / Σ(share of calls ×
    /// weight × mean service time).
    pub fn capacity_rps(&self) -> f64 {
        let total_rps: f64 = self.traffic.iter().map(|t| t.rps).sum();
        let share = |t: &Traffic| t.rps / total_rps * t.service.0.as_secs_f64();
        match &self.server {
            // With a bottleneck, its workers are the capacity: one worker a call.
            Some(server) => f64::from(server.workers) / self.traffic.iter().map(share).sum::<f64>(),
            None => {
                let slot_seconds: f64 = self
                    .traffic
                    .iter()
                    .map(|t| share(t) * f64::from(t.weight))
                    .sum();
                f64::from(self.limiter.capacity) / slot_seconds
            }
        }
    }
}
