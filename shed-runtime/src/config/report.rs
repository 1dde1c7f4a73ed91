//! How a configuration is reported: the one line that says what is in
//! force and where each value came from, and the warnings, each once.

use super::{Config, ConfigErrors, Problem, ENV_CAPACITY, ENV_MODE};

impl Config {
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
            format!(
                "{}x the measured service time (times their spread for calls of two lengths)",
                self.auto.wait_factor
            )
        };
        let tiers = match self.tiers.plans().next() {
            Some(_) => format!("; tiers {}", self.tiers),
            None => String::new(),
        };
        format!(
            "shed: {capacity}; {mode}; classes {classes}; default wait budgets {budgets}{tiers}"
        )
    }
}

/// Whether a `tracing` subscriber would see an event here (a global one,
/// or one set for this thread).
fn has_subscriber() -> bool {
    tracing::dispatcher::get_default(|d| !d.is::<tracing::subscriber::NoSubscriber>())
}

pub(super) fn report_once(errors: &ConfigErrors) {
    if has_subscriber() {
        tracing::error!(target: "shed::config", "ignoring invalid shed configuration:\n{errors}");
    } else {
        eprintln!("shed: ignoring invalid shed configuration:\n{errors}");
    }
}

/// Reports malformed environment variables, one readable line each.
pub(super) fn report_env_warnings(warnings: &[Problem]) {
    for warning in warnings {
        if has_subscriber() {
            tracing::warn!(target: "shed::config", "{warning}");
        } else {
            eprintln!("shed: {warning}");
        }
    }
}

/// Logs the configuration in force, once per process-wide limiter.
pub(super) fn announce(description: &str) {
    tracing::info!(target: "shed::config", "{description}");
}

#[cfg(test)]
mod tests {
    use super::super::env::tests::env;
    use super::*;
    use crate::config::ENV_CAPACITY;
    use crate::tracing_capture::Capture;

    #[test]
    fn without_configuration_the_capacity_is_adaptive_and_described_as_such() {
        let config = Config::new().env_from(|_| None);
        assert_eq!(
            config.describe(),
            "shed: capacity=adaptive (default), starting at 2 within 1..=10000; mode=enforce (default); classes critical=on,optional=on,background=on; default wait budgets 4x the measured service time (times their spread for calls of two lengths)"
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
        let lines = capture.lines();
        assert_eq!(
            lines,
            [
                "WARN SHED_MODE=`loud` is malformed and ignored: expected `enforce`, `observe` or `off`",
                "INFO shed: capacity=4 (from SHED_CAPACITY, over 16 in code); mode=enforce (default); classes critical=on,optional=on,background=on; default wait budgets fixed",
            ],
            "readable, not Debug-escaped, once each"
        );
    }
}
