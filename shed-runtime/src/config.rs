//! Configuration of a limiter (and of the process-wide one), the
//! environment switches, and the startup check of the policy table.

use std::fmt;
use std::time::Duration;

use crate::adaptive::{AutoControl, AutoSettings};
use crate::class::{ClassSpec, ClassState};
use crate::limiter::discipline::{Codel, Discipline};
use crate::limiter::state::MAX_CAPACITY;
use crate::mode::Mode;
use crate::policy::{policies, Policy, PolicyTable};
use crate::Limiter;

/// The variable that switches classes on and off: `background=off,optional=on`.
pub const ENV_CLASSES: &str = "SHED_CLASSES";
/// The variable that sets the mode: `enforce` (default), `observe` or `off`.
pub const ENV_MODE: &str = "SHED_MODE";
/// The variable that pins the capacity in slots (or `auto`: adaptive).
pub const ENV_CAPACITY: &str = "SHED_CAPACITY";

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
    /// Whether [`adaptive_lifo`](Config::adaptive_lifo) was called: if not,
    /// it follows the limit (on with the adaptive default).
    lifo_chosen: bool,
    /// Problems found while reading the environment, reported by the check.
    env_problems: Vec<Problem>,
}

/// The operator's settings from the environment.
#[derive(Debug, Clone, Default, PartialEq)]
struct EnvSettings {
    /// `SHED_CAPACITY`: `Some(None)` for `auto`.
    capacity: Option<Option<u32>>,
    mode: Option<Mode>,
    /// `SHED_CLASSES`, as written.
    classes: Option<String>,
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
            lifo_chosen: false,
            env_problems: Vec::new(),
        }
    }

    /// The defaults, then `SHED_CLASSES`, `SHED_MODE` and `SHED_CAPACITY`
    /// from the process environment. The operator's variables win over
    /// what the code sets, before or after this call
    /// (`Config::from_env().capacity(16)` with `SHED_CAPACITY=4` runs 4
    /// slots). A malformed variable is ignored as a whole, and reported
    /// once, in one readable line, when the limiter is built or installed.
    pub fn from_env() -> Self {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Config::from_env) with the variables read by `var`:
    /// what the process-wide limiter nobody configured is built from.
    pub fn from_env_with(var: impl Fn(&str) -> Option<String>) -> Self {
        Self::new().env_from(var)
    }

    /// Applies the environment as read by `var` (for tests, or another
    /// source of settings), with the same precedence and the same
    /// treatment of malformed values as [`from_env`](Config::from_env).
    /// Class switches apply to the classes configured so far and to
    /// classes added later.
    pub fn env_from(mut self, var: impl Fn(&str) -> Option<String>) -> Self {
        if let Some(raw) = var(ENV_MODE) {
            match raw.parse::<Mode>() {
                Ok(mode) => self.env.mode = Some(mode),
                Err(_) => self.env_problems.push(Problem::env(
                    ENV_MODE,
                    &raw,
                    "expected `enforce`, `observe` or `off`".into(),
                )),
            }
        }
        if let Some(raw) = var(ENV_CAPACITY) {
            match raw.trim() {
                "auto" | "adaptive" => self.env.capacity = Some(None),
                n => match n.parse::<u32>() {
                    Ok(n) if n >= 1 && u64::from(n) <= MAX_CAPACITY => {
                        self.env.capacity = Some(Some(n))
                    }
                    _ => self.env_problems.push(Problem::env(
                        ENV_CAPACITY,
                        &raw,
                        format!(
                            "expected `auto` or a whole number of slots from 1 to {MAX_CAPACITY}"
                        ),
                    )),
                },
            }
        }
        if let Some(raw) = var(ENV_CLASSES) {
            match parse_class_switches(&raw) {
                Ok(switches) => {
                    self.env.classes = Some(raw.clone());
                    self.env_problems
                        .push(Problem::pending_switches(raw, switches))
                }
                Err(message) => self
                    .env_problems
                    .push(Problem::env(ENV_CLASSES, &raw, message)),
            }
        }
        self
    }

    /// Pins the capacity at `slots` (at least 1), instead of the adaptive
    /// default. `SHED_CAPACITY`, if the operator set it, wins.
    pub fn capacity(mut self, slots: u32) -> Self {
        self.capacity = Some(slots);
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
    /// up to a power of two) among those that neither waited nor carry a
    /// deadline; those are always measured. Default 64; 1 measures every
    /// call.
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
    /// standing queue served in order (see `BENCHMARKS.md`); off with a
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

    /// The configured classes, in order.
    pub fn class_specs(&self) -> &[ClassSpec] {
        &self.classes
    }

    /// Checks the configuration on its own and against every `#[shed]` fn
    /// linked into the program, returning every problem at once.
    pub fn check(&self) -> Result<(), ConfigErrors> {
        self.check_against(&policies())
    }

    /// Like [`check`](Config::check), against a given table.
    pub fn check_against(&self, table: &PolicyTable) -> Result<(), ConfigErrors> {
        let mut problems = self.own_problems();
        // An adaptive limit may grow to its highest.
        let capacity = u64::from(self.fixed_capacity().unwrap_or(self.auto.max));
        // Each class's limit once, not once per fn: a program may have
        // thousands of guarded fns and few classes.
        let limits: Vec<(&ClassSpec, u64)> = self
            .classes
            .iter()
            .map(|class| (class, ClassState::new(class.clone(), true).limit(capacity)))
            .collect();
        let at = |policy: &Policy| format!("{}:{}", policy.file(), policy.line());
        for policy in table {
            match limits.iter().find(|(c, _)| c.name() == policy.class()) {
                None => problems.push(Problem::at(
                    &at(policy),
                    format!(
                        "`{}` uses class `{}`, which is not configured (known classes: {})",
                        policy.name(),
                        policy.class(),
                        self.known_classes()
                    ),
                )),
                Some(&(class, limit)) if u64::from(policy.weight()) > limit => {
                    problems.push(Problem::at(
                        &at(policy),
                        format!(
                            "`{}` has weight {}, but class `{}` can hold at most {limit} of the {capacity} slots: it could never be admitted",
                            policy.name(),
                            policy.weight(),
                            class.name()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        // The table is sorted by name, so fns that share one are adjacent.
        let entries: Vec<&'static Policy> = table.iter().collect();
        for same in entries.chunk_by(|a, b| a.name() == b.name()) {
            if let [first, _, ..] = same {
                let places: Vec<String> = same.iter().map(|p| at(p)).collect();
                problems.push(Problem::at(
                    &places[0],
                    format!(
                        "the name `{}` is used by {} guarded fns ({}); give each a unique `name = \"...\"`",
                        first.name(),
                        places.len(),
                        places.join(", ")
                    ),
                ));
            }
        }
        ConfigErrors::from_problems(problems)
    }

    fn known_classes(&self) -> String {
        self.classes
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Problems of the configuration itself and of the environment.
    fn own_problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(capacity) = self.capacity {
            if capacity == 0 || u64::from(capacity) > MAX_CAPACITY {
                problems.push(Problem::plain(format!(
                    "capacity must be from 1 to {MAX_CAPACITY} slots, got {capacity}"
                )));
            }
        }
        let a = &self.auto;
        if a.min == 0 || a.min > a.max || u64::from(a.max) > MAX_CAPACITY {
            problems.push(Problem::plain(format!(
                "adaptive limits must satisfy 1 <= min <= max <= {MAX_CAPACITY}, got {}..={}",
                a.min, a.max
            )));
        }
        if self.classes.is_empty() {
            problems.push(Problem::plain(
                "at least one class must be configured".into(),
            ));
        }
        for (i, class) in self.classes.iter().enumerate() {
            if let Err(message) = class.validate() {
                problems.push(Problem::plain(message));
            }
            if self.classes[..i].iter().any(|c| c.name() == class.name()) {
                problems.push(Problem::plain(format!(
                    "class `{}` is configured twice",
                    class.name()
                )));
            }
        }
        problems
    }

    /// What is wrong with the environment: each malformed variable, once.
    /// Such a variable is ignored as a whole (never half applied, never
    /// failing a request or the startup); [`build`](Config::build),
    /// [`install`](Config::install) and the process-wide limiter report it.
    pub fn env_warnings(&self) -> Vec<Problem> {
        let mut warnings = Vec::new();
        for problem in &self.env_problems {
            match &problem.switches {
                Some(switches) => {
                    let unknown: Vec<&str> = switches
                        .iter()
                        .map(|(name, _)| name.as_str())
                        .filter(|name| !self.classes.iter().any(|c| c.name() == *name))
                        .collect();
                    if !unknown.is_empty() {
                        warnings.push(Problem::plain(format!(
                            "{ENV_CLASSES}=`{}` is ignored: it names {}, which {} not configured (known classes: {})",
                            problem.message,
                            unknown.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                            if unknown.len() == 1 { "is" } else { "are" },
                            self.known_classes()
                        )));
                    }
                }
                None => warnings.push(problem.clone()),
            }
        }
        warnings
    }

    /// The configuration in force and where each value came from, in one
    /// line: what the process-wide limiter logs once at startup.
    pub fn describe(&self) -> String {
        let capacity = match (self.env.capacity, self.capacity) {
            (Some(Some(n)), Some(code)) if code != n => {
                format!("capacity={n} (from {ENV_CAPACITY}, over {code} in code)")
            }
            (Some(Some(n)), _) => format!("capacity={n} (from {ENV_CAPACITY})"),
            (Some(None), Some(code)) => {
                format!("capacity=adaptive (from {ENV_CAPACITY}, over {code} in code)")
            }
            (Some(None), None) => format!("capacity=adaptive (from {ENV_CAPACITY})"),
            (None, Some(n)) => format!("capacity={n} (from code)"),
            (None, None) => "capacity=adaptive (default)".to_string(),
        };
        let capacity = match self.fixed_capacity() {
            Some(_) => capacity,
            None => format!(
                "{capacity}, starting at {} within {}..={}",
                self.auto.initial, self.auto.min, self.auto.max
            ),
        };
        let mode = match (self.env.mode, self.mode_set) {
            (Some(m), true) if m != self.mode => {
                format!("mode={m} (from {ENV_MODE}, over {} in code)", self.mode)
            }
            (Some(m), _) => format!("mode={m} (from {ENV_MODE})"),
            (None, true) => format!("mode={} (from code)", self.mode),
            (None, false) => format!("mode={} (default)", self.mode),
        };
        let switches = self.valid_switches();
        let classes = self
            .classes
            .iter()
            .map(|c| {
                let switched = switches.iter().rev().find(|(n, _)| n == c.name());
                let on = switched.map_or(c.is_enabled(), |(_, on)| *on);
                let from = if switched.is_some() {
                    " (from SHED_CLASSES)"
                } else {
                    ""
                };
                format!("{}={}{from}", c.name(), if on { "on" } else { "off" })
            })
            .collect::<Vec<_>>()
            .join(",");
        let budgets = if self.fixed_capacity().is_some() {
            "fixed".to_string()
        } else {
            format!("{}x the measured service time", self.auto.wait_factor)
        };
        format!("shed: {capacity}; {mode}; classes {classes}; default wait budgets {budgets}")
    }
    /// The class switches of `SHED_CLASSES`, if they are all valid.
    fn valid_switches(&self) -> Vec<(String, bool)> {
        self.env_problems
            .iter()
            .filter_map(|p| p.switches.clone())
            .filter(|switches| {
                switches
                    .iter()
                    .all(|(name, _)| self.classes.iter().any(|c| c.name() == name))
            })
            .flatten()
            .collect()
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
                Some(AutoControl::new(auto_settings)),
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
        Limiter::from_parts(
            capacity,
            classes,
            self.queue_bound.unwrap_or(bound),
            mode,
            self.default_service,
            self.sample_every,
            discipline,
            auto,
        )
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
        if config.auto.min == 0 || config.auto.min > config.auto.max {
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

/// Whether a `tracing` subscriber would see an event here (a global one,
/// or one set for this thread).
fn has_subscriber() -> bool {
    tracing::dispatcher::get_default(|d| !d.is::<tracing::subscriber::NoSubscriber>())
}

fn report_once(errors: &ConfigErrors) {
    if has_subscriber() {
        tracing::error!(target: "shed::config", "ignoring invalid shed configuration:\n{errors}");
    } else {
        eprintln!("shed: ignoring invalid shed configuration:\n{errors}");
    }
}

/// Reports malformed environment variables, one readable line each.
fn report_env_warnings(warnings: &[Problem]) {
    for warning in warnings {
        if has_subscriber() {
            tracing::warn!(target: "shed::config", "{warning}");
        } else {
            eprintln!("shed: {warning}");
        }
    }
}

/// Logs the configuration in force, once per process-wide limiter.
fn announce(description: &str) {
    tracing::info!(target: "shed::config", "{description}");
}

/// Parses `background=off,optional=on`. Accepts `on|off|true|false|1|0`,
/// ignores blanks around items and empty items.
fn parse_class_switches(raw: &str) -> Result<Vec<(String, bool)>, String> {
    let mut switches = Vec::new();
    let mut errors = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((name, value)) = item.split_once('=') else {
            errors.push(format!("`{item}` is not `class=on` or `class=off`"));
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            errors.push(format!("`{item}` has no class name"));
            continue;
        }
        match value.to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => switches.push((name.to_string(), true)),
            "off" | "false" | "0" => switches.push((name.to_string(), false)),
            _ => errors.push(format!("`{item}`: expected `on` or `off`, got `{value}`")),
        }
    }
    if errors.is_empty() {
        Ok(switches)
    } else {
        Err(errors.join("; "))
    }
}

/// One thing wrong with a configuration or the policy table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    location: Option<String>,
    message: String,
    /// Valid `SHED_CLASSES` switches, held until the classes are known.
    switches: Option<Vec<(String, bool)>>,
}

impl Problem {
    fn plain(message: String) -> Self {
        Self {
            location: None,
            message,
            switches: None,
        }
    }

    fn at(location: &str, message: String) -> Self {
        Self {
            location: Some(location.to_string()),
            message,
            switches: None,
        }
    }

    fn env(variable: &str, raw: &str, expected: String) -> Self {
        Self::plain(format!(
            "{variable}=`{raw}` is malformed and ignored: {expected}"
        ))
    }

    fn pending_switches(raw: String, switches: Vec<(String, bool)>) -> Self {
        Self {
            location: None,
            message: raw,
            switches: Some(switches),
        }
    }

    /// `file:line` of the guarded fn concerned, if any.
    pub fn location(&self) -> Option<&str> {
        self.location.as_deref()
    }

    /// What is wrong, and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(at) => write!(f, "{at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Every problem a check found. Displays one problem per line; `Debug`
/// shows the same text, so that `install().expect(..)` prints it readably.
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    problems: Vec<Problem>,
}

impl fmt::Debug for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl ConfigErrors {
    fn from_problems(problems: Vec<Problem>) -> Result<(), ConfigErrors> {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors { problems })
        }
    }

    pub(crate) fn already_installed() -> Self {
        Self {
            problems: vec![Problem::plain(
                "the process-wide limiter is already in use (a guarded fn ran, or install was called twice): install the configuration at startup, before the first guarded call".into(),
            )],
        }
    }

    /// The problems, in the order found.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        writeln!(
            f,
            "{n} shed configuration problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            writeln!(f, "  - {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// A class name that is not configured on a limiter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown class `{name}` (known classes: {known})")]
pub struct UnknownClass {
    name: String,
    known: String,
}

impl UnknownClass {
    pub(crate) fn new<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Self {
        Self {
            name: name.to_string(),
            known: known.collect::<Vec<_>>().join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_switches_parse_all_or_nothing() {
        assert_eq!(
            parse_class_switches(" background=off , optional=ON,,"),
            Ok(vec![
                ("background".into(), false),
                ("optional".into(), true)
            ])
        );
        let err = parse_class_switches("background=off,optional,batch=maybe").unwrap_err();
        assert!(err.contains("`optional` is not"), "{err}");
        assert!(err.contains("got `maybe`"), "{err}");
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn malformed_environment_is_ignored_with_one_readable_warning_each() {
        let config = Config::new().env_from(env(&[
            (ENV_CLASSES, "background=off,nosuch=off"),
            (ENV_MODE, "loud"),
            (ENV_CAPACITY, "lots"),
        ]));
        // Not an error: the same in build, install and the global.
        assert_eq!(config.check_against(&PolicyTable::empty()), Ok(()));
        let warnings: Vec<String> = config
            .env_warnings()
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert_eq!(
            warnings[0],
            "SHED_MODE=`loud` is malformed and ignored: expected `enforce`, `observe` or `off`"
        );
        assert!(warnings[1].starts_with("SHED_CAPACITY=`lots` is malformed and ignored"));
        assert_eq!(
            warnings[2],
            "SHED_CLASSES=`background=off,nosuch=off` is ignored: it names `nosuch`, which is not configured (known classes: critical, optional, background)"
        );
        let limiter = config.clone().build().unwrap();
        assert_eq!(
            limiter.class_enabled("background"),
            Some(true),
            "half-applied switches"
        );
        assert_eq!(limiter.mode(), Mode::Enforce);
        assert!(limiter.is_adaptive(), "the capacity stays adaptive");
        let lenient = config.build_lenient();
        assert!(lenient.is_adaptive());
        assert_eq!(lenient.class_enabled("background"), Some(true));
    }

    #[test]
    fn the_operators_variables_win_over_the_code() {
        let vars = [
            (ENV_CAPACITY, "4"),
            (ENV_MODE, "observe"),
            (ENV_CLASSES, "optional=off"),
        ];
        // Before or after the code sets its values.
        for config in [
            Config::new()
                .env_from(env(&vars))
                .capacity(16)
                .mode(Mode::Enforce),
            Config::new()
                .capacity(16)
                .mode(Mode::Enforce)
                .env_from(env(&vars)),
        ] {
            assert_eq!(config.fixed_capacity(), Some(4));
            assert_eq!(
                config.describe(),
                "shed: capacity=4 (from SHED_CAPACITY, over 16 in code); mode=observe (from SHED_MODE, over enforce in code); classes critical=on,optional=off (from SHED_CLASSES),background=on; default wait budgets fixed"
            );
            let limiter = config.build().unwrap();
            assert_eq!(limiter.capacity(), 4);
            assert_eq!(limiter.mode(), Mode::Observe);
            assert_eq!(limiter.class_enabled("optional"), Some(false));
            assert!(!limiter.is_adaptive());
        }
        // `auto` takes a capacity pinned in code back to adaptive.
        let auto = Config::new()
            .capacity(16)
            .env_from(env(&[(ENV_CAPACITY, "auto")]));
        assert_eq!(auto.fixed_capacity(), None);
        assert!(auto.build().unwrap().is_adaptive());
    }

    #[test]
    fn without_configuration_the_capacity_is_adaptive_and_described_as_such() {
        let config = Config::new().env_from(|_| None);
        assert_eq!(
            config.describe(),
            "shed: capacity=adaptive (default), starting at 2 within 1..=10000; mode=enforce (default); classes critical=on,optional=on,background=on; default wait budgets 2x the measured service time"
        );
        let limiter = config.build().unwrap();
        assert!(limiter.is_adaptive());
        assert_eq!(limiter.capacity(), 2);
        let pinned = Config::new().capacity(64).build().unwrap();
        assert!(!pinned.is_adaptive());
        assert_eq!(pinned.capacity(), 64);
        // Setting a capacity at run time pins it too.
        limiter.set_capacity(32);
        assert!(!limiter.is_adaptive());
        assert_eq!(limiter.capacity(), 32);
    }

    /// Collects the events of `tracing` as `LEVEL message` lines.
    #[derive(Default, Clone)]
    struct Capture(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            struct Message(String);
            impl tracing::field::Visit for Message {
                fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn fmt::Debug) {
                    self.0 = format!("{value:?}");
                }
            }
            let mut message = Message(String::new());
            event.record(&mut message);
            let line = format!("{} {}", event.metadata().level(), message.0);
            self.0.lock().unwrap().push(line);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn the_process_wide_limiter_logs_its_configuration_once_and_each_malformed_variable_once() {
        let capture = Capture::default();
        let vars = [(ENV_CAPACITY, "4"), (ENV_MODE, "loud")];
        let limiter = tracing::subscriber::with_default(capture.clone(), || {
            Config::from_env_with(env(&vars))
                .capacity(16)
                .build_lenient()
        });
        assert_eq!(limiter.capacity(), 4);
        let lines = capture.0.lock().unwrap().clone();
        assert_eq!(
            lines,
            [
                "WARN SHED_MODE=`loud` is malformed and ignored: expected `enforce`, `observe` or `off`",
                "INFO shed: capacity=4 (from SHED_CAPACITY, over 16 in code); mode=enforce (default); classes critical=on,optional=on,background=on; default wait budgets fixed",
            ],
            "readable, not Debug-escaped, once each"
        );
    }

    #[test]
    fn config_errors_debug_as_they_display() {
        let errors = Config::new().capacity(0).build().unwrap_err();
        assert_eq!(format!("{errors:?}"), errors.to_string());
        assert!(!format!("{errors:?}").contains("Problem {"), "{errors:?}");
    }
}
