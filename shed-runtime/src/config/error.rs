//! What a failed check returns: every problem at once, each readable.

use std::fmt;

/// One thing wrong with a configuration or the policy table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    location: Option<String>,
    pub(super) message: String,
    /// Valid `SHED_CLASSES` switches, held until the classes are known.
    pub(super) switches: Option<Vec<(String, bool)>>,
}

impl Problem {
    pub(super) fn plain(message: String) -> Self {
        Self {
            location: None,
            message,
            switches: None,
        }
    }

    pub(super) fn at(location: &str, message: String) -> Self {
        Self {
            location: Some(location.to_string()),
            message,
            switches: None,
        }
    }

    pub(super) fn env(variable: &str, raw: &str, expected: String) -> Self {
        Self::plain(format!(
            "{variable}=`{raw}` is malformed and ignored: {expected}"
        ))
    }

    pub(super) fn pending_switches(raw: String, switches: Vec<(String, bool)>) -> Self {
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
    pub(super) fn from_problems(problems: Vec<Problem>) -> Result<(), ConfigErrors> {
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

#[cfg(test)]
mod tests {
    use crate::Config;

    #[test]
    fn config_errors_debug_as_they_display() {
        let errors = Config::new().capacity(0).build().unwrap_err();
        assert_eq!(format!("{errors:?}"), errors.to_string());
        assert!(!format!("{errors:?}").contains("Problem {"), "{errors:?}");
    }
}
