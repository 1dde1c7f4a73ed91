//! The scale of the default queue-wait budgets: guessed from the calls
//! measured so far until the first window closes, then learned from each
//! window's service time (`Auto::service_time`).
//!
//! Guesses come from completions on any thread, without the controller's
//! lock; a learned scale comes from a window's close, under it.
//!
//! # Why a learned scale is never overwritten by a guess
//!
//! The word holds the scale's `f64` bits, its sign bit set until a window
//! taught it: -0 before anything, a negative number for a guess (its
//! magnitude is the scale), the learned scale itself after (0 included).
//! A guesser reads the word ([`BudgetScale::unlearned`]) and later
//! replaces exactly what it read, with a compare-and-swap
//! ([`BudgetScale::guess`]). A learned scale replaces whatever is there.
//! So:
//!
//! - a guess whose read came after the learned scale reads the sign bit
//!   clear, and makes no guess;
//! - a guess whose read came before it finds, at its compare-and-swap,
//!   either the word it read (the scale is not learned yet: the guess
//!   lands, and the learned scale that follows replaces it) or another
//!   one (the learned scale, or a later guess): it fails.
//!
//! The word is a single atomic, so every access sees one modification
//! order and `Relaxed` suffices: no other memory is published through it.
//! The loom model below checks a guess racing a learned scale
//! (`loom_a_guess_never_replaces_a_learned_scale`).

use crate::sync::{AtomicU64, Ordering};

/// The default budgets' scale; see the module docs.
#[derive(Debug)]
pub(crate) struct BudgetScale(AtomicU64);

/// What a guesser read: the word its guess may replace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unlearned(u64);

impl BudgetScale {
    /// Nothing guessed nor learned.
    pub(crate) fn new() -> Self {
        Self(AtomicU64::new((-0f64).to_bits()))
    }

    /// The scale, guessed or learned; `None` before either, or for a
    /// scale of 0 (which a checked `wait_factor` and a no-load latency
    /// above 0 never give): the classes' own budgets then.
    pub(crate) fn get(&self) -> Option<f64> {
        let scale = f64::from_bits(self.0.load(Ordering::Relaxed)).abs();
        (scale > 0.0).then_some(scale)
    }

    /// What a guess may replace, unless a scale was learned.
    pub(crate) fn unlearned(&self) -> Option<Unlearned> {
        let word = self.0.load(Ordering::Relaxed);
        f64::from_bits(word)
            .is_sign_negative()
            .then_some(Unlearned(word))
    }

    /// Guesses `scale` (positive), unless the word changed since `read`.
    pub(crate) fn guess(&self, read: Unlearned, scale: f64) {
        if scale > 0.0 {
            let _ = self.0.compare_exchange(
                read.0,
                (-scale).to_bits(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Learns `scale` (0 or more): guesses stop.
    pub(crate) fn learn(&self, scale: f64) {
        // A swap, not a store: the same here (the old word is dropped),
        // and loom models a read-modify-write racing a plain store wrongly
        // (tokio-rs/loom#254: the store can be lost under the other's
        // write), where two read-modify-writes it models as they are.
        self.0.swap(scale.max(0.0).to_bits(), Ordering::Relaxed);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn guesses_stand_until_a_scale_is_learned_and_none_after() {
        let scale = BudgetScale::new();
        assert_eq!(scale.get(), None);
        let read = scale.unlearned().expect("nothing learned");
        scale.guess(read, 4.0);
        assert_eq!(scale.get(), Some(4.0));
        scale.guess(scale.unlearned().unwrap(), 3.0);
        assert_eq!(scale.get(), Some(3.0), "a guess replaces a guess");
        let stale = scale.unlearned().unwrap();
        scale.learn(12.0);
        assert!(scale.unlearned().is_none());
        scale.guess(stale, 5.0);
        assert_eq!(scale.get(), Some(12.0), "read before the learned scale");
        scale.learn(0.0);
        assert!(scale.unlearned().is_none(), "a learned 0 is learned too");
        assert_eq!(scale.get(), None);
    }
}

#[cfg(all(test, shed_loom))]
mod loom_tests {
    use loom::thread;

    use super::*;
    use crate::sync::Arc;

    /// A completion guesses while a window's close learns: in every
    /// interleaving the learned scale is the last word.
    #[test]
    fn loom_a_guess_never_replaces_a_learned_scale() {
        loom::model(|| {
            let scale = Arc::new(BudgetScale::new());
            let guesser = {
                let scale = scale.clone();
                thread::spawn(move || {
                    if let Some(read) = scale.unlearned() {
                        scale.guess(read, 4.0);
                    }
                })
            };
            scale.learn(12.0);
            guesser.join().unwrap();
            assert_eq!(scale.get(), Some(12.0));
        });
    }
}
