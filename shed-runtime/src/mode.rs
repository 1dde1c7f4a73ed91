//! The global enforcement mode: enforce, observe (count but admit) or off.

use std::fmt;
use std::str::FromStr;

/// How a limiter applies its decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mode {
    /// Refuse calls that cannot be admitted (the default).
    #[default]
    Enforce,
    /// Make and count every decision, but admit every call: a safe way to
    /// roll shedding out and see what it would refuse. Calls that would
    /// have had to wait are admitted at once and counted under their
    /// class's in-flight weight, so in-flight may exceed the capacity.
    Observe,
    /// Bypass the limiter entirely: no accounting, no refusals.
    Off,
}

impl Mode {
    pub(crate) fn to_u8(self) -> u8 {
        match self {
            Mode::Enforce => 0,
            Mode::Observe => 1,
            Mode::Off => 2,
        }
    }

    pub(crate) fn from_u8(value: u8) -> Self {
        match value {
            1 => Mode::Observe,
            2 => Mode::Off,
            _ => Mode::Enforce,
        }
    }

    /// The spelling used by `SHED_MODE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Observe => "observe",
            Mode::Off => "off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode spelled other than `enforce`, `observe` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`: expected one of `enforce`, `observe`, `off`")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "enforce" => Ok(Mode::Enforce),
            "observe" => Ok(Mode::Observe),
            "off" => Ok(Mode::Off),
            _ => Err(UnknownMode(s.to_string())),
        }
    }
}
