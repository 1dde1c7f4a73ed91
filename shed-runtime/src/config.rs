//! Configuration of a limiter (and of the process-wide one), the
//! environment switches, and the startup check of the policy table.
//!
//! One job per submodule: this one builds a limiter from a [`Config`];
//! `env` reads the operator's variables, `check` is the startup check,
//! `report` says what is in force, `error` holds what a check returns.

mod check;
mod env;
mod error;
mod report;

use env::EnvSettings;
pub use env::{ENV_CAPACITY, ENV_CLASSES, ENV_MODE};
pub use error::{ConfigErrors, Problem};
use report::{announce, report_env_warnings, report_once};

use std::time::Duration;

use crate::adaptive::{AutoControl, AutoSettings};
use crate::class::ClassSpec;
use crate::limiter::controller::SharedController;
use crate::limiter::discipline::{Codel, Discipline};
use crate::limiter::ClassState;
use crate::limiter::MAX_CAPACITY;
use crate::mode::Mode;
use crate::policy::policies;
use crate::Limiter;

/// A fixed capacity used where one is needed and none was given: when an
/// explicit capacity is invalid and the process-wide limiter must still be
/// built. A limiter nobody configured does not use it: its capacity is
/// adaptive (see [`Config`]).
pub const DEFAULT_CAPACITY: u32 = 256;

/// The configuration of a limiter.
///
/// Without any configuration, guarded fns use the process-wide limiter
/// with an **adaptive capacity** ([`Auto`](crate::adaptive::Auto): it
/// starts at 4 slots, grows fast while calls wait for slots and the
/// service shows no queue, and settles near the concurrency the service
/// sustains), default queue-wait budgets scaled to the measured service
/// time, the default classes ([`ClassSpec::defaults`]) and whatever
/// `SHED_CLASSES`, `SHED_MODE` and `SHED_CAPACITY` say.
/// [`capacity`](Config::capacity) (or `SHED_CAPACITY`) pins a fixed
/// capacity instead; a variable set by the operator wins over the code.
/// To configure the process-wide limiter, build a `Config` at startup and
/// [`install`](Config::install) it before the first guarded call; the
/// install checks the configuration and every `#[shed]` fn against it, and
/// reports every problem at once.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::{ClassSpec, Config, Mode};
///
/// let config = Config::new()
///     .capacity(64)
///     .class(ClassSpec::new("batch", 3).share(0.25).max_wait(Duration::from_millis(2)))
///     .mode(Mode::Enforce)
///     .env_from(|name| match name {
///         "SHED_CLASSES" => Some("batch=off".to_string()),
///         _ => None,
///     });
/// let limiter = config.build().unwrap();
/// assert_eq!(limiter.class_enabled("batch"), Some(false));
/// assert_eq!(limiter.capacity(), 64);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// A capacity fixed in code, or `None`: adaptive.
    capacity: Option<u32>,
    /// The adaptive limit's settings, when the capacity is not fixed.
    auto: AutoSettings,
    classes: Vec<ClassSpec>,
    mode: Mode,
    /// Whether the code set the mode.
    mode_set: bool,
    /// What the environment said, applied over the code at build time.
    env: EnvSettings,
    queue_bound: Option<u64>,
    default_service: Duration,
    sample_every: u32,
    discipline: Discipline,
    /// Tenants' plans by rank within a class.
    tiers: crate::tenant::Tiers,
    /// Whether [`adaptive_lifo`](Config::adaptive_lifo) was called: if not,
    /// it follows the limit (on with the adaptive default).
    lifo_chosen: bool,
    /// Problems found while reading the environment, reported by the check.
    env_problems: Vec<Problem>,
    /// The cold-start ramp's length, if any (see [`Config::warm_up`]).
    warm_up: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    /// The defaults, ignoring the environment.
    pub fn new() -> Self {
        Self {
            capacity: None,
            auto: AutoSettings::default(),
            classes: ClassSpec::defaults(),
            mode: Mode::Enforce,
            mode_set: false,
            env: EnvSettings::default(),
            queue_bound: None,
            default_service: Duration::from_millis(1),
            sample_every: 64,
            discipline: Discipline::default(),
            tiers: Default::default(),
            lifo_chosen: false,
            env_problems: Vec::new(),
            warm_up: None,
        }
    }

    /// Pins the capacity at `slots` (at least 1), instead of the adaptive
    /// default. `SHED_CAPACITY`, if the operator set it, wins.
    pub fn capacity(mut self, slots: u32) -> Self {
        self.capacity = Some(slots);
        self
    }

    /// After a start, ramps the capacity up over `length` instead of
    /// admitting the full load at once: from a tenth, linearly (caches are
    /// cold after a restart). [`Limiter::begin_warm_up`] ramps again after
    /// a recovery. `SHED_WARM_UP` (`30s`, `off`), if set, wins. Off by
    /// default. The ramp needs a tokio runtime: a limiter built outside
    /// one starts it at its first `begin_warm_up`. See
    /// [`Limiter::begin_warm_up`] for how it works with the adaptive
    /// default.
    pub fn warm_up(mut self, length: Duration) -> Self {
        self.warm_up = Some(length);
        self
    }

    /// The settings of the adaptive capacity (used unless a capacity is
    /// pinned with [`capacity`](Config::capacity) or `SHED_CAPACITY`).
    pub fn adaptive(mut self, settings: AutoSettings) -> Self {
        self.auto = settings;
        self
    }

    /// The capacity in force: pinned by the environment or the code, or
    /// `None` when it is adaptive.
    pub fn fixed_capacity(&self) -> Option<u32> {
        match self.env.capacity {
            Some(from_env) => from_env,
            None => self.capacity,
        }
    }

    /// Adds a class, or replaces the class of the same name.
    pub fn class(mut self, spec: ClassSpec) -> Self {
        match self.classes.iter_mut().find(|c| c.name() == spec.name()) {
            Some(existing) => *existing = spec,
            None => self.classes.push(spec),
        }
        self
    }

    /// Replaces all classes.
    pub fn classes(mut self, specs: impl IntoIterator<Item = ClassSpec>) -> Self {
        self.classes = specs.into_iter().collect();
        self
    }

    /// The enforcement mode. `SHED_MODE`, if the operator set it, wins.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self.mode_set = true;
        self
    }

    /// The mode in force: the environment's, else the code's.
    fn effective_mode(&self) -> Mode {
        self.env.mode.unwrap_or(self.mode)
    }

    /// The most weight that may wait for slots at once (default: four
    /// times the capacity, or four times the adaptive limit's highest).
    /// Past it, calls are refused with `queue_full`. Under the adaptive
    /// default the queue-wait budgets, which follow the service time, are
    /// what bounds the queue in time.
    pub fn queue_bound(mut self, weight: u64) -> Self {
        self.queue_bound = Some(weight);
        self
    }

    /// The service time assumed for a fn before its first call completes,
    /// used by the deadline check (default 1 ms).
    pub fn default_service_time(mut self, service: Duration) -> Self {
        self.default_service = service;
        self
    }

    /// Measure the service time of about one admitted call in `n` (rounded
    /// up to a power of two) among those without a deadline; those with
    /// one are always measured, and so are those that waited while an
    /// adaptive limit may read the measurements (the default's, until the
    /// capacity is pinned, or a spawned
    /// [`AdaptiveLimit`](crate::adaptive::AdaptiveLimit)). Default 64; 1
    /// measures every call.
    pub fn service_time_sampling(mut self, n: u32) -> Self {
        self.sample_every = n.max(1);
        self
    }

    /// Drops waiters from a standing queue, CoDel-style (see [`Codel`]):
    /// once the queue overflows under measured overload, waiters older than
    /// twice the target are refused (reason `overload`) instead of served
    /// late, so served calls wait at most that long. Off by default.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let limiter = shed_runtime::Config::new()
    ///     .capacity(8)
    ///     .codel(shed_runtime::Codel::new(
    ///         Duration::from_millis(4),
    ///         Duration::from_millis(100),
    ///     ))
    ///     .build()
    ///     .unwrap();
    /// # drop(limiter);
    /// ```
    pub fn codel(mut self, codel: Codel) -> Self {
        self.discipline.detector = codel;
        self.discipline.codel_drops = true;
        self
    }

    /// Adaptive LIFO: within a class, serve the newest waiter first while
    /// the queue stands (by [`Codel`]'s test, with the parameters given to
    /// [`codel`](Config::codel) or the defaults), the oldest first
    /// otherwise. Under heavy overload the newest caller is the one most
    /// likely still waiting; bursts are still served in order. With
    /// [`codel`](Config::codel) drops, arrival order gives a lower p99 up
    /// to about twice the capacity and LIFO a lower one beyond (see
    /// `BENCHMARKS.md`). By default on while the limit is adaptive (no
    /// [`capacity`](Config::capacity)): the defaults grid loses calls to a
    /// standing queue served in order (see `docs/defaults.md`); off with a
    /// fixed capacity.
    pub fn adaptive_lifo(mut self, on: bool) -> Self {
        self.discipline.lifo = on;
        self.lifo_chosen = true;
        self
    }

    /// Whether a retry waits behind the first attempts of its class (on by
    /// default): a call whose [`attempt`](crate::attempt) is above 1 (the
    /// HTTP layer reads it from `grpc-previous-rpc-attempts`,
    /// `x-envoy-attempt-count` or `x-shed-attempt`) is served only when no
    /// first attempt of its class waits, and is the first of its class
    /// evicted from a full queue. Its caller has a plan for failure; a
    /// first attempt's may not. Off: retries wait in arrival order like
    /// any call.
    pub fn retries_yield(mut self, on: bool) -> Self {
        self.discipline.retries_yield = on;
        self
    }

    /// Ranks tenants' plans within every class (see [`Tiers`](crate::Tiers)).
    pub fn tiers(mut self, tiers: crate::tenant::Tiers) -> Self {
        self.tiers = tiers;
        self
    }

    /// The configured classes, in order.
    pub fn class_specs(&self) -> &[ClassSpec] {
        &self.classes
    }

    fn into_limiter(self) -> Limiter {
        let switches = self.valid_switches();
        let mode = self.effective_mode();
        let fixed = self.fixed_capacity();
        let specs: Vec<ClassSpec> = self
            .classes
            .into_iter()
            .map(|spec| {
                let enabled = switches
                    .iter()
                    .rev()
                    .find(|(name, _)| name == spec.name())
                    .map_or(spec.is_enabled(), |(_, on)| *on);
                spec.enabled(enabled)
            })
            .collect();
        // An adaptive limit never goes below what the heaviest guarded fn
        // needs within its class's share: a call refused as too heavy
        // never completes, so the limit would never learn to grow for it.
        let mut auto_settings = self.auto;
        let heaviest = policies()
            .iter()
            .filter_map(|p| {
                let class = specs.iter().find(|c| c.name() == p.class())?;
                Some((f64::from(p.weight()) / class.share_of_capacity()).ceil() as u32)
            })
            .max()
            .unwrap_or(1);
        auto_settings.min = auto_settings.min.max(heaviest).min(auto_settings.max);
        auto_settings.initial = auto_settings.initial.max(auto_settings.min);
        let classes = ClassState::all(specs);
        let (capacity, auto) = match fixed {
            Some(slots) => (u64::from(slots.max(1)).min(MAX_CAPACITY), None),
            None => (
                u64::from(
                    auto_settings
                        .initial
                        .clamp(auto_settings.min, auto_settings.max),
                ),
                Some(std::sync::Arc::new(AutoControl::new(auto_settings)) as SharedController),
            ),
        };
        let mut discipline = self.discipline;
        if auto.is_some() && !self.lifo_chosen {
            discipline.lifo = true;
        }
        let bound = match auto {
            Some(_) => u64::from(self.auto.max) * 4,
            None => capacity * 4,
        };
        let mut limiter = Limiter::from_parts(
            capacity,
            classes,
            self.queue_bound.unwrap_or(bound),
            mode,
            self.default_service,
            self.sample_every,
            discipline,
            auto,
        );
        if let Some(inner) = std::sync::Arc::get_mut(&mut limiter.inner) {
            inner.tiers = self.tiers;
        }
        crate::limiter::warm_up::configure(&limiter, self.env.warm_up.or(self.warm_up));
        limiter
    }

    /// Builds a standalone limiter after checking the configuration on its
    /// own (not the policy table: a standalone limiter may serve only some
    /// fns). Nothing is built if anything is wrong.
    pub fn build(self) -> Result<Limiter, ConfigErrors> {
        ConfigErrors::from_problems(self.own_problems())?;
        report_env_warnings(&self.env_warnings());
        Ok(self.into_limiter())
    }

    /// Checks everything ([`check`](Config::check)) and, only if nothing is
    /// wrong, makes this the process-wide limiter. Fails if guarded calls
    /// already created the process-wide limiter: install at startup.
    pub fn install(self) -> Result<&'static Limiter, ConfigErrors> {
        self.check()?;
        report_env_warnings(&self.env_warnings());
        let description = self.describe();
        let installed = Limiter::install_global(self.into_limiter())?;
        announce(&description);
        Ok(installed)
    }

    /// Builds whatever is valid, reporting problems once instead of failing:
    /// the process-wide limiter nobody configured must never fail a request.
    pub(crate) fn build_lenient(self) -> Limiter {
        if let Err(errors) = ConfigErrors::from_problems(self.own_problems()) {
            report_once(&errors);
        }
        report_env_warnings(&self.env_warnings());
        let mut config = self;
        if config
            .capacity
            .is_some_and(|c| c == 0 || u64::from(c) > MAX_CAPACITY)
        {
            config.capacity = Some(DEFAULT_CAPACITY);
        }
        if config.auto.min == 0
            || config.auto.min > config.auto.max
            || !(config.auto.wait_factor.is_finite() && config.auto.wait_factor > 0.0)
        {
            config.auto = AutoSettings::default();
        }
        config.auto.max = config.auto.max.min(MAX_CAPACITY as u32);
        if config.classes.is_empty() || config.classes.iter().any(|c| c.validate().is_err()) {
            config.classes = ClassSpec::defaults();
        }
        announce(&config.describe());
        config.into_limiter()
    }
}

impl Limiter {
    /// A configuration for a new limiter, starting from the defaults and
    /// ignoring the environment. See [`Config`].
    pub fn builder() -> Config {
        Config::new()
    }
}
