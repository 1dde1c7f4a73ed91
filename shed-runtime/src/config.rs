//! Configuration of a limiter (and of the process-wide one), the
//! environment switches, and the startup check of the policy table.

use std::fmt;
use std::time::Duration;

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
/// The variable that sets the capacity in slots.
pub const ENV_CAPACITY: &str = "SHED_CAPACITY";

/// The capacity of a limiter nobody configured, in slots.
pub const DEFAULT_CAPACITY: u32 = 256;

/// The configuration of a limiter.
///
/// Without any configuration, guarded fns use the process-wide limiter
/// with [`DEFAULT_CAPACITY`] slots, the default classes
/// ([`ClassSpec::defaults`]) and whatever `SHED_CLASSES`, `SHED_MODE` and
/// `SHED_CAPACITY` say. To configure it, build a `Config` at startup and
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
    capacity: u32,
    classes: Vec<ClassSpec>,
    mode: Mode,
    queue_bound: Option<u64>,
    default_service: Duration,
    sample_every: u32,
    discipline: Discipline,
    /// Problems found while reading the environment, reported by the check.
    env_problems: Vec<Problem>,
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
            capacity: DEFAULT_CAPACITY,
            classes: ClassSpec::defaults(),
            mode: Mode::Enforce,
            queue_bound: None,
            default_service: Duration::from_millis(1),
            sample_every: 64,
            discipline: Discipline::default(),
            env_problems: Vec::new(),
        }
    }

    /// The defaults, then `SHED_CLASSES`, `SHED_MODE` and `SHED_CAPACITY`
    /// from the process environment. Malformed values are kept as problems
    /// for [`check`](Config::check) and are not applied.
    pub fn from_env() -> Self {
        Self::new().env_from(|name| std::env::var(name).ok())
    }

    /// Applies the environment as read by `var` (for tests, or another
    /// source of settings). A malformed variable is not applied at all and
    /// becomes a problem that [`check`](Config::check) reports. Class
    /// switches apply to the classes configured so far and to classes
    /// added later.
    pub fn env_from(mut self, var: impl Fn(&str) -> Option<String>) -> Self {
        if let Some(raw) = var(ENV_MODE) {
            match raw.parse::<Mode>() {
                Ok(mode) => self.mode = mode,
                Err(e) => self
                    .env_problems
                    .push(Problem::env(ENV_MODE, &raw, e.to_string())),
            }
        }
        if let Some(raw) = var(ENV_CAPACITY) {
            match raw.trim().parse::<u32>() {
                Ok(n) if n >= 1 && u64::from(n) <= MAX_CAPACITY => self.capacity = n,
                _ => self.env_problems.push(Problem::env(
                    ENV_CAPACITY,
                    &raw,
                    format!("expected a whole number of slots from 1 to {MAX_CAPACITY}"),
                )),
            }
        }
        if let Some(raw) = var(ENV_CLASSES) {
            match parse_class_switches(&raw) {
                Ok(switches) => self
                    .env_problems
                    .push(Problem::pending_switches(raw, switches)),
                Err(message) => self
                    .env_problems
                    .push(Problem::env(ENV_CLASSES, &raw, message)),
            }
        }
        self
    }

    /// The total capacity in slots (at least 1).
    pub fn capacity(mut self, slots: u32) -> Self {
        self.capacity = slots;
        self
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

    /// The enforcement mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The most weight that may wait for slots at once (default: four
    /// times the capacity). Past it, calls are refused with `queue_full`.
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
    /// `BENCHMARKS.md`). Off by default.
    pub fn adaptive_lifo(mut self, on: bool) -> Self {
        self.discipline.lifo = on;
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
        let capacity = u64::from(self.capacity);
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
        if self.capacity == 0 || u64::from(self.capacity) > MAX_CAPACITY {
            problems.push(Problem::plain(format!(
                "capacity must be from 1 to {MAX_CAPACITY} slots, got {}",
                self.capacity
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
        for problem in &self.env_problems {
            match &problem.switches {
                Some(switches) => {
                    for (name, _) in switches {
                        if !self.classes.iter().any(|c| c.name() == name) {
                            problems.push(Problem::plain(format!(
                                "{ENV_CLASSES} names class `{name}`, which is not configured (known classes: {})",
                                self.known_classes()
                            )));
                        }
                    }
                }
                None => problems.push(problem.clone()),
            }
        }
        problems
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
        let specs = self
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
        let classes = ClassState::all(specs);
        let capacity = u64::from(self.capacity.max(1)).min(MAX_CAPACITY);
        Limiter::from_parts(
            capacity,
            classes,
            self.queue_bound.unwrap_or(capacity * 4),
            self.mode,
            self.default_service,
            self.sample_every,
            self.discipline,
        )
    }

    /// Builds a standalone limiter after checking the configuration on its
    /// own (not the policy table: a standalone limiter may serve only some
    /// fns). Nothing is built if anything is wrong.
    pub fn build(self) -> Result<Limiter, ConfigErrors> {
        ConfigErrors::from_problems(self.own_problems())?;
        Ok(self.into_limiter())
    }

    /// Checks everything ([`check`](Config::check)) and, only if nothing is
    /// wrong, makes this the process-wide limiter. Fails if guarded calls
    /// already created the process-wide limiter: install at startup.
    pub fn install(self) -> Result<&'static Limiter, ConfigErrors> {
        self.check()?;
        Limiter::install_global(self.into_limiter())
    }

    /// Builds whatever is valid, reporting problems once instead of failing:
    /// the process-wide limiter nobody configured must never fail a request.
    pub(crate) fn build_lenient(self) -> Limiter {
        if let Err(errors) = ConfigErrors::from_problems(self.own_problems()) {
            report_once(&errors);
        }
        let mut config = self;
        if config.capacity == 0 || u64::from(config.capacity) > MAX_CAPACITY {
            config.capacity = DEFAULT_CAPACITY;
        }
        if config.classes.is_empty() || config.classes.iter().any(|c| c.validate().is_err()) {
            config.classes = ClassSpec::defaults();
        }
        config.into_limiter()
    }
}

fn report_once(errors: &ConfigErrors) {
    if tracing::dispatcher::has_been_set() {
        tracing::error!(target: "shed::config", "ignoring invalid shed configuration:\n{errors}");
    } else {
        eprintln!("shed: ignoring invalid shed configuration:\n{errors}");
    }
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
        Self::plain(format!("{variable}=`{raw}` is malformed: {expected}"))
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

/// Every problem a check found. Displays one problem per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    problems: Vec<Problem>,
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

    #[test]
    fn malformed_environment_is_reported_and_not_applied() {
        let config = Config::new().env_from(|name| match name {
            ENV_CLASSES => Some("background=off,nosuch=off".into()),
            ENV_MODE => Some("loud".into()),
            ENV_CAPACITY => Some("lots".into()),
            _ => None,
        });
        let errors = config.check_against(&PolicyTable::empty()).unwrap_err();
        let text = errors.to_string();
        assert_eq!(errors.problems().len(), 3, "{text}");
        assert!(text.contains("SHED_MODE=`loud` is malformed"), "{text}");
        assert!(text.contains("SHED_CAPACITY=`lots` is malformed"), "{text}");
        assert!(
            text.contains("names class `nosuch`, which is not configured (known classes: critical, optional, background)"),
            "{text}"
        );
        let limiter = config.build_lenient();
        assert_eq!(
            limiter.class_enabled("background"),
            Some(true),
            "half-applied switches"
        );
        assert_eq!(limiter.mode(), Mode::Enforce);
        assert_eq!(limiter.capacity(), DEFAULT_CAPACITY);
    }
}
