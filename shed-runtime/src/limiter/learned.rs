//! Where a limiter keeps the service time it learned for each guarded fn,
//! read on every deadline admission and every timed completion.
//!
//! The process-wide limiter uses each fn's own `static` estimate. Any other
//! limiter must keep its own (limiters are independent values), and still
//! read it without a lock: the first such limiter to need a fn's estimate
//! claims the fn's second inline slot (`PolicyStats::scoped_*`) with one
//! compare-and-swap, and from then on reads it with one atomic load of the
//! owner. Only a further limiter using the same fn at the same time (two
//! scoped limiters alive at once, as in concurrent tests) falls back to a
//! table under a lock. A limiter gives its slots back, reset, when it is
//! dropped, so the next one starts from nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::estimate::ServiceEstimate;
use crate::policy::PolicyStats;

/// No limiter owns a fn's inline slot. Limiter ids start at 1.
pub(crate) const FREE: u32 = 0;

/// The protocol of a fn's inline slot, on the word that names its owner
/// (`PolicyStats::scoped_owner`): in one place, for `std`'s atomic the
/// limiter runs on and `loom`'s atomic its model check runs on
/// (`loom_tests.rs`), so the model checks these very orderings.
pub(crate) trait SlotOwner {
    fn load(&self, order: Ordering) -> u32;
    fn store(&self, owner: u32, order: Ordering);
    fn compare_exchange(&self, from: u32, to: u32) -> bool;

    /// Whether limiter `id` owns the slot. Acquire: pairs with the release
    /// in [`SlotOwner::give_back`], so an owner sees the slot as reset.
    #[inline]
    fn owned_by(&self, id: u32) -> bool {
        self.load(Ordering::Acquire) == id
    }

    /// Claims the slot for limiter `id` if nobody owns it (acquire, as in
    /// [`SlotOwner::owned_by`]).
    fn claim(&self, id: u32) -> bool {
        self.compare_exchange(FREE, id)
    }

    /// Gives the slot back: `reset` (which clears the estimate, with
    /// relaxed stores) happens before the slot is seen free.
    fn give_back(&self, reset: impl FnOnce()) {
        reset();
        self.store(FREE, Ordering::Release);
    }
}

/// The same three operations on std's atomics and on loom's, so the loom
/// model runs the orderings the limiter runs.
macro_rules! slot_owner {
    ($atomic:ty) => {
        impl SlotOwner for $atomic {
            #[inline]
            fn load(&self, order: Ordering) -> u32 {
                self.load(order)
            }

            fn store(&self, owner: u32, order: Ordering) {
                self.store(owner, order);
            }

            fn compare_exchange(&self, from: u32, to: u32) -> bool {
                self.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            }
        }
    };
}

slot_owner!(std::sync::atomic::AtomicU32);
#[cfg(shed_loom)]
slot_owner!(loom::sync::atomic::AtomicU32);

/// The service times one limiter learned, per guarded fn.
pub(crate) struct Learned {
    /// This limiter's id, which it writes into the slots it claims.
    id: u32,
    /// Set once this limiter is the process-wide one.
    pub(super) global: AtomicBool,
    /// Fns whose inline slot another limiter owned when this one first
    /// needed it, and the slots this one claimed (given back on drop).
    others: Mutex<Others>,
}

#[derive(Default)]
struct Others {
    table: HashMap<usize, Arc<ServiceEstimate>>,
    claimed: Vec<&'static PolicyStats>,
}

impl Learned {
    pub(crate) fn new(id: u32) -> Self {
        debug_assert_ne!(id, FREE);
        Self {
            id,
            global: AtomicBool::new(false),
            others: Mutex::default(),
        }
    }

    /// Runs `f` on this limiter's estimate for the fn of `stats`.
    #[inline]
    pub(crate) fn with<R>(
        &self,
        stats: &'static PolicyStats,
        f: impl FnOnce(&ServiceEstimate) -> R,
    ) -> R {
        if self.global.load(Ordering::Relaxed) {
            return f(&stats.global_service);
        }
        if stats.scoped_owner.owned_by(self.id) {
            return f(&stats.scoped_service);
        }
        self.with_unclaimed(stats, f)
    }

    /// The slow path, once per fn for the slot's owner: claims the inline
    /// slot if it is free and this limiter has no estimate in its table
    /// yet (an estimate never moves between the two), else uses the table.
    #[cold]
    fn with_unclaimed<R>(
        &self,
        stats: &'static PolicyStats,
        f: impl FnOnce(&ServiceEstimate) -> R,
    ) -> R {
        let estimate = {
            let mut others = self.others.lock().unwrap_or_else(|p| p.into_inner());
            let key = std::ptr::from_ref(stats) as usize;
            match others.table.get(&key) {
                Some(estimate) => Arc::clone(estimate),
                None => {
                    if stats.scoped_owner.claim(self.id) {
                        others.claimed.push(stats);
                        drop(others);
                        return f(&stats.scoped_service);
                    }
                    Arc::clone(others.table.entry(key).or_default())
                }
            }
        };
        f(&estimate)
    }
}

impl Drop for Learned {
    fn drop(&mut self) {
        let others = self.others.get_mut().unwrap_or_else(|p| p.into_inner());
        for stats in others.claimed.drain(..) {
            // Nobody else writes a slot this limiter owns, and this
            // limiter is gone: reset, then free it for the next.
            stats
                .scoped_owner
                .give_back(|| stats.scoped_service.reset());
        }
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;

    fn stats() -> &'static PolicyStats {
        Box::leak(Box::new(PolicyStats::new()))
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn limiters_alive_together_learn_apart_and_a_successor_starts_afresh() {
        let stats = stats();
        let now = Instant::now();
        let first = Learned::new(1);
        let second = Learned::new(2);
        first.with(stats, |e| e.observe(10 * MS, now));
        second.with(stats, |e| e.observe(30 * MS, now));
        assert_eq!(
            stats.scoped_owner.load(Ordering::Relaxed),
            1,
            "first claimed"
        );
        assert_eq!(first.with(stats, ServiceEstimate::get), Some(10 * MS));
        assert_eq!(second.with(stats, ServiceEstimate::get), Some(30 * MS));
        drop(first);
        // The second keeps its table entry even though the slot is free.
        assert_eq!(second.with(stats, ServiceEstimate::get), Some(30 * MS));
        assert_eq!(stats.scoped_owner.load(Ordering::Relaxed), FREE);
        let third = Learned::new(3);
        assert_eq!(third.with(stats, ServiceEstimate::get), None, "reset");
        assert_eq!(stats.scoped_owner.load(Ordering::Relaxed), 3);
        third.with(stats, |e| e.observe(5 * MS, now));
        assert_eq!(second.with(stats, ServiceEstimate::get), Some(30 * MS));
        assert_eq!(stats.global_service.get(), None, "the global one untouched");
    }

    #[test]
    fn the_process_wide_limiter_uses_the_static() {
        let stats = stats();
        let global = Learned::new(4);
        global.global.store(true, Ordering::Relaxed);
        global.with(stats, |e| e.observe(7 * MS, Instant::now()));
        assert_eq!(stats.global_service.get(), Some(7 * MS));
        assert_eq!(stats.scoped_owner.load(Ordering::Relaxed), FREE);
    }
}
