//! The operator's switches in the environment (`SHED_CLASSES`, `SHED_MODE`,
//! `SHED_CAPACITY`, `SHED_WARM_UP`): reading them, and which of them apply.

use super::{Config, Problem};
use crate::limiter::MAX_CAPACITY;
use crate::mode::Mode;
use std::time::Duration;

/// The variable that switches classes on and off: `background=off,optional=on`.
pub const ENV_CLASSES: &str = "SHED_CLASSES";
/// The variable that sets the mode: `enforce` (default), `observe` or `off`.
pub const ENV_MODE: &str = "SHED_MODE";
/// The variable that pins the capacity in slots (or `auto`: adaptive).
pub const ENV_CAPACITY: &str = "SHED_CAPACITY";

/// The operator's settings from the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct EnvSettings {
    /// `SHED_CAPACITY`: `Some(None)` for `auto`.
    pub(super) capacity: Option<Option<u32>>,
    pub(super) mode: Option<Mode>,
    /// `SHED_CLASSES`, as written.
    pub(super) classes: Option<String>,
    /// `SHED_WARM_UP` (zero: off).
    pub(super) warm_up: Option<Duration>,
}

impl Config {
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
        if let Some(raw) = var(crate::limiter::warm_up::ENV_WARM_UP) {
            match crate::limiter::warm_up::parse(&raw) {
                Ok(length) => self.env.warm_up = Some(length),
                Err(message) => self.env_problems.push(Problem::env(
                    crate::limiter::warm_up::ENV_WARM_UP,
                    &raw,
                    message,
                )),
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

    /// The class switches of `SHED_CLASSES`, if they are all valid.
    pub(super) fn valid_switches(&self) -> Vec<(String, bool)> {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::policy::PolicyTable;

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

    /// The variables in `vars`, as [`Config::env_from`] reads them.
    pub(in crate::config) fn env<'a>(
        vars: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Option<String> + 'a {
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
}
