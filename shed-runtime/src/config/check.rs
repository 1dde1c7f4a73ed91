//! The startup check: the configuration on its own, and against every
//! guarded fn of the policy table.

use super::{Config, ConfigErrors, Problem};
use crate::class::ClassSpec;
use crate::limiter::ClassState;
use crate::limiter::MAX_CAPACITY;
use crate::policy::{policies, Policy, PolicyTable};

impl Config {
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

    pub(super) fn known_classes(&self) -> String {
        self.classes
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Problems of the configuration itself and of the environment.
    pub(super) fn own_problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(capacity) = self.capacity
            && (capacity == 0 || u64::from(capacity) > MAX_CAPACITY)
        {
            problems.push(Problem::plain(format!(
                "capacity must be from 1 to {MAX_CAPACITY} slots, got {capacity}"
            )));
        }
        let a = &self.auto;
        if a.min == 0 || a.min > a.max || u64::from(a.max) > MAX_CAPACITY {
            problems.push(Problem::plain(format!(
                "adaptive limits must satisfy 1 <= min <= max <= {MAX_CAPACITY}, got {}..={}",
                a.min, a.max
            )));
        }
        if !(a.wait_factor.is_finite() && a.wait_factor > 0.0) {
            problems.push(Problem::plain(format!(
                "the adaptive default's wait_factor must be a finite number above 0, got {}",
                a.wait_factor
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
}

#[cfg(test)]
mod tests {
    use crate::adaptive::AutoSettings;
    use crate::Config;

    #[test]
    fn adaptive_settings_out_of_range_are_reported_all_at_once() {
        let settings = AutoSettings {
            min: 0,
            wait_factor: f64::NAN,
            ..AutoSettings::default()
        };
        let errors = Config::new().adaptive(settings).build().unwrap_err();
        let report = errors.to_string();
        assert!(report.contains("1 <= min <= max"), "{report}");
        assert!(
            report.contains("wait_factor must be a finite number above 0, got NaN"),
            "{report}"
        );
        for bad in [f64::INFINITY, -1.0, 0.0] {
            let settings = AutoSettings {
                wait_factor: bad,
                ..AutoSettings::default()
            };
            let report = Config::new()
                .adaptive(settings)
                .build()
                .unwrap_err()
                .to_string();
            assert!(report.contains(&format!("got {bad}")), "{report}");
        }
        let fine = AutoSettings {
            wait_factor: 0.5,
            ..AutoSettings::default()
        };
        assert!(Config::new().adaptive(fine).build().is_ok());
    }
}
