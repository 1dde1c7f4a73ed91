//! A class's gate: whether its calls may take the guard's fast path, and
//! whether that path must take from the class's own word, in one byte
//! that the fast path reads with one load (instead of the limiter's mode,
//! the class's switch, the overload controller's fraction and the class's
//! kind, one load and one branch each).
//!
//! # Bits and their sources
//!
//! - `DISABLED`: the class is switched off. The bit *is* the switch: no
//!   other copy exists.
//! - `OFF`: the limiter's mode is `off`, a copy of `Inner::mode`, kept by
//!   `Inner::set_mode`.
//! - `HELD_BACK`: the overload controller admits less than all of the
//!   class, a copy of `fraction < FULL`, kept by
//!   `ClassState::set_admit_fraction`.
//! - `TRACKED`: the class keeps a word of its own; fixed at construction.
//!
//! The fast path admits only with the gate open (no `DISABLED`, `OFF` or
//! `HELD_BACK`); a closed gate sends the call through every check, which
//! reads the sources themselves. A reader of the gate may see a change of
//! a source a moment late, as it could before, when it read the source
//! without ordering: a call that looked just before the change.
//!
//! # Why a copy never stays behind its source
//!
//! A writer stores its source, then brings the bit up to date with
//! [`Gate::follow`]: it reads the source, writes the bit, and reads the
//! source again, repeating until the second read agrees with what it
//! wrote. Every one of these accesses is `SeqCst`, so they fall in one
//! total order. Take the last store to the source, by writer W, and the
//! last write of the bit, by writer X (in that order). X's read after that
//! write agreed with it. If that read came after W's store, it read the
//! final value, so the bit agrees with the source. If it came before, W's
//! `follow`, which starts after W's store, wrote the bit after that read,
//! so after X's write: X's was not the last, a contradiction. So once the
//! writers are done, every copy agrees with its source, however they
//! interleaved (a loom model checks two writers).

use crate::sync::{AtomicU8, Ordering};

/// What the gate lets the fast path do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open {
    /// Admit on the limiter's word alone (a class without a word).
    Untracked,
    /// Admit on the class's word, then the limiter's.
    Tracked,
    /// Go through every check.
    Closed,
}

/// A class's gate (see the module docs).
#[derive(Debug)]
pub(crate) struct Gate(AtomicU8);

impl Gate {
    /// The class is switched off.
    pub(crate) const DISABLED: u8 = 1;
    /// The limiter's mode is `off`.
    pub(crate) const OFF: u8 = 1 << 1;
    /// The overload controller holds part of the class back.
    pub(crate) const HELD_BACK: u8 = 1 << 2;
    /// The class keeps a word of its own.
    const TRACKED: u8 = 1 << 3;

    pub(crate) fn new(enabled: bool, tracked: bool) -> Self {
        let disabled = if enabled { 0 } else { Self::DISABLED };
        let tracked = if tracked { Self::TRACKED } else { 0 };
        Self(AtomicU8::new(disabled | tracked))
    }

    /// What the fast path may do: one load.
    // Always: on the fast path that `guard::try_admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn open(&self) -> Open {
        match self.0.load(Ordering::Relaxed) {
            0 => Open::Untracked,
            Self::TRACKED => Open::Tracked,
            _ => Open::Closed,
        }
    }

    /// Whether `bit` is set.
    #[inline]
    pub(crate) fn has(&self, bit: u8) -> bool {
        self.0.load(Ordering::Relaxed) & bit != 0
    }

    /// Sets or clears `bit`, leaving the others as they are.
    pub(crate) fn set(&self, bit: u8, on: bool) {
        if on {
            self.0.fetch_or(bit, Ordering::SeqCst);
        } else {
            self.0.fetch_and(!bit, Ordering::SeqCst);
        }
    }

    /// Brings `bit`, a copy, up to date with `source` (read with
    /// `SeqCst`), after a store to the source: see the module docs. Loops
    /// only while other writers change the source meanwhile.
    pub(crate) fn follow(&self, bit: u8, source: impl Fn() -> bool) {
        loop {
            let on = source();
            self.set(bit, on);
            if source() == on {
                return;
            }
        }
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_gate_opens_only_with_every_closing_bit_clear() {
        let gate = Gate::new(true, false);
        assert_eq!(gate.open(), Open::Untracked);
        for bit in [Gate::DISABLED, Gate::OFF, Gate::HELD_BACK] {
            gate.set(bit, true);
            assert_eq!(gate.open(), Open::Closed);
            assert!(gate.has(bit));
            gate.set(bit, false);
        }
        assert_eq!(Gate::new(true, true).open(), Open::Tracked);
        assert_eq!(Gate::new(false, true).open(), Open::Closed);
        gate.follow(Gate::OFF, || true);
        assert_eq!(
            (gate.open(), gate.has(Gate::DISABLED)),
            (Open::Closed, false)
        );
    }
}
