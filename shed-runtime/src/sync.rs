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

/// Where a waiting call leaves its waker for whoever settles it: lock-free
/// (`atomic-waker`), or under `loom` a mutex that loom can model.
#[cfg(not(shed_loom))]
pub(crate) use atomic_waker::AtomicWaker as WakerSlot;

#[cfg(shed_loom)]
#[derive(Debug, Default)]
pub(crate) struct WakerSlot(Mutex<Option<std::task::Waker>>);

#[cfg(shed_loom)]
impl WakerSlot {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn register(&self, waker: &std::task::Waker) {
        let mut slot = lock(&self.0);
        match slot.as_ref() {
            Some(current) if current.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            waker.wake();
        }
    }

    pub(crate) fn take(&self) -> Option<std::task::Waker> {
        lock(&self.0).take()
    }
}
