//! The process-wide limiter: built on first use from the defaults and
//! the environment, or installed from a [`Config`] at startup. It sits
//! above the limiter and the configuration, which know nothing of it.

use std::sync::{Arc, OnceLock};

use crate::config::{Config, ConfigErrors};
use crate::limiter::Limiter;

static GLOBAL: OnceLock<Limiter> = OnceLock::new();

impl Limiter {
    /// The process-wide limiter. Unless [`Config::install`](crate::Config::install) set it up
    /// first, it is created on first use from the defaults (an adaptive
    /// capacity, see [`Config`](crate::Config)) and the environment (`SHED_CLASSES`,
    /// `SHED_MODE`, `SHED_CAPACITY`); a malformed variable is reported once
    /// and ignored, and the configuration in force is logged once.
    pub fn global() -> &'static Limiter {
        GLOBAL.get_or_init(|| Config::from_env().build_lenient().into_global())
    }

    pub(crate) fn install_global(limiter: Limiter) -> Result<&'static Limiter, ConfigErrors> {
        let mut fresh = Some(limiter);
        let installed = GLOBAL.get_or_init(|| fresh.take().expect("taken once").into_global());
        if fresh.is_some() {
            return Err(ConfigErrors::already_installed());
        }
        Ok(installed)
    }

    /// The value of the `limiter` label on this limiter's metrics: none for
    /// the process-wide limiter, its id for any other, so that two
    /// limiters never write the same series.
    pub(crate) fn metrics_label(&self) -> Option<u32> {
        let global = GLOBAL
            .get()
            .is_some_and(|g| Arc::ptr_eq(&g.inner, &self.inner));
        (!global).then_some(self.inner.id)
    }

    /// The limiter guarded calls use here: the one set by the innermost
    /// [`Limiter::scope`], else the process-wide one.
    pub fn current() -> Limiter {
        match crate::context::current_limiter() {
            Some(scoped) => Limiter::from_scoped(scoped),
            None => Limiter::global().clone(),
        }
    }
}
