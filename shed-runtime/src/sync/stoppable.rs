//! State behind an off switch: work on it runs one caller at a time and
//! only while the switch is on, and turning it off waits for the work in
//! progress.
//!
//! The default adaptive limit closes its windows this way, and a pin of
//! the capacity (or a warm-up ramp) turns it off before it sets its own:
//! once [`Stoppable::stop`] returns, no window sets a limit over the pin.
//!
//! # Why it is enough
//!
//! `stop` swaps the switch off, then takes the lock and lets it go;
//! [`Stoppable::try_with`] takes the lock, then reads the switch. The
//! lock orders the two:
//!
//! - If `try_with` took the lock first, `stop`'s turn with the lock waits
//!   for it, so the work `try_with` ran (the limit it set) happens before
//!   `stop` returns, and the caller's next write lands after it.
//! - If `stop` took the lock first, its swap came before its unlock, which
//!   comes before `try_with`'s lock: `try_with` reads the switch off and
//!   runs nothing.
//!
//! Either way nothing runs on the state after `stop` returns, which is why
//! the switch itself may be read with `Relaxed` ordering: the lock carries
//! the ordering. Without the read under the lock, a caller that saw the
//! switch on before the swap could run after `stop` returned; without the
//! turn with the lock in `stop`, one already running could finish after
//! it. The loom model below checks both ways (`loom_stop_waits_for_work_in_progress`).

use super::{AtomicBool, Mutex, MutexGuard, Ordering};

/// State that runs work only while on; see the module docs.
#[derive(Debug)]
pub(crate) struct Stoppable<T> {
    on: AtomicBool,
    state: Mutex<T>,
}

impl<T> Stoppable<T> {
    /// `state`, switched on.
    pub(crate) fn new(state: T) -> Self {
        Self {
            on: AtomicBool::new(true),
            state: Mutex::new(state),
        }
    }

    /// Whether it is on: a hint for skipping work early, which
    /// [`Stoppable::try_with`] checks again under the lock.
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Runs `f` on the state and returns what it returns, unless the
    /// switch is off or another caller holds the state (`None`: that
    /// caller is doing the work). A lock poisoned by a panic in `f` runs
    /// nothing more: the state is not to be trusted after it.
    pub(crate) fn try_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut state = self.state.try_lock().ok()?;
        // Read under the lock (see the module docs).
        if !self.on.load(Ordering::Relaxed) {
            return None;
        }
        Some(f(&mut state))
    }

    /// Switches it off; returns whether it was on. Returns only once no
    /// work runs on the state, and none will until [`Stoppable::start`].
    pub(crate) fn stop(&self) -> bool {
        let was = self.on.swap(false, Ordering::Relaxed);
        // Taken and let go: whoever held it has finished, and whoever
        // takes it next reads the switch off.
        drop(self.lock());
        was
    }

    /// Switches it back on.
    pub(crate) fn start(&self) {
        self.on.store(true, Ordering::Relaxed);
    }

    /// The state, whether on or off, once no one else holds it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        super::lock(&self.state)
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn nothing_runs_while_stopped_and_work_resumes_once_started() {
        let state = Stoppable::new(0);
        assert_eq!(state.try_with(|n| *n += 1), Some(()));
        assert!(state.stop());
        assert!(!state.stop(), "already off");
        assert_eq!(state.try_with(|n| *n += 1), None);
        state.start();
        assert!(state.is_on());
        assert_eq!(state.try_with(|n| *n += 1), Some(()));
        assert_eq!(*state.lock(), 2);
    }

    #[test]
    fn a_caller_finds_the_state_busy_while_another_holds_it() {
        let state = Stoppable::new(0);
        let held = state.lock();
        assert_eq!(state.try_with(|n| *n += 1), None);
        drop(held);
        assert_eq!(state.try_with(|n| *n += 1), Some(()));
    }
}

#[cfg(all(test, shed_loom))]
mod loom_tests {
    use loom::thread;

    use super::*;
    use crate::sync::{Arc, AtomicU64};

    /// A window closing on another thread (it sets the limit to 2) while
    /// this one stops the controller and pins the limit at 100: in every
    /// interleaving the pin is the last word.
    #[test]
    fn loom_stop_waits_for_work_in_progress() {
        loom::model(|| {
            let controller = Arc::new(Stoppable::new(()));
            let limit = Arc::new(AtomicU64::new(1));
            let closer = {
                let (controller, limit) = (controller.clone(), limit.clone());
                thread::spawn(move || {
                    // As a completion does: the hint first, then the lock.
                    if controller.is_on() {
                        controller.try_with(|()| limit.store(2, Ordering::Relaxed));
                    }
                })
            };
            controller.stop();
            limit.store(100, Ordering::Relaxed);
            closer.join().unwrap();
            assert_eq!(limit.load(Ordering::Relaxed), 100);
        });
    }
}
