//! Synchronisation primitives, swapped for `loom`'s model-checked versions
//! under `cfg(shed_loom)` so the limiter's state machine can be model-checked.

#[cfg(shed_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
#[cfg(shed_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(shed_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
#[cfg(not(shed_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: every critical section in this crate
/// leaves the protected data consistent before it can panic, so a poisoned
/// lock carries no broken invariant and refusing to continue would only turn
/// one panic into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(shed_loom)]
    {
        mutex.lock().unwrap()
    }
    #[cfg(not(shed_loom))]
    {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
