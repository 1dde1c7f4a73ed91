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

/// A value written once by whoever settles a waiter, under the queue lock,
/// and published by the `SeqCst` store of the waiter's status; read only
/// by someone who saw that store. Under `loom`, loom's cell, which checks
/// that the accesses never overlap.
#[derive(Debug)]
pub(crate) struct PublishedCell<T>(
    #[cfg(not(shed_loom))] std::cell::UnsafeCell<T>,
    #[cfg(shed_loom)] loom::cell::UnsafeCell<T>,
);

// SAFETY: the cell is written and read only as `write` and `read` require
// (never at once), and `T` is sent between the threads that do.
unsafe impl<T: Send> Sync for PublishedCell<T> {}

impl<T: Copy> PublishedCell<T> {
    pub(crate) fn new(value: T) -> Self {
        #[cfg(not(shed_loom))]
        return Self(std::cell::UnsafeCell::new(value));
        #[cfg(shed_loom)]
        return Self(loom::cell::UnsafeCell::new(value));
    }

    /// Sets the value through an exclusive reference (a waiter nobody
    /// shares).
    #[cfg_attr(shed_loom, allow(dead_code))] // the spare is not modelled
    pub(crate) fn set(&mut self, value: T) {
        *self = Self::new(value);
    }

    /// Writes the value.
    ///
    /// # Safety
    ///
    /// No other access to the cell may overlap: the caller holds the lock
    /// every writer takes, and nobody reads before the store that
    /// publishes this write (made after it).
    pub(crate) unsafe fn write(&self, value: T) {
        #[cfg(not(shed_loom))]
        // SAFETY: no overlapping access (the caller's contract).
        unsafe {
            *self.0.get() = value;
        }
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        self.0.with_mut(|p| unsafe { *p = value });
    }

    /// Reads the value.
    ///
    /// # Safety
    ///
    /// The caller saw the store that published the last write, and no
    /// write comes after it.
    pub(crate) unsafe fn read(&self) -> T {
        #[cfg(not(shed_loom))]
        // SAFETY: the write happened before (the caller's contract).
        return unsafe { *self.0.get() };
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        return self.0.with(|p| unsafe { *p });
    }
}
