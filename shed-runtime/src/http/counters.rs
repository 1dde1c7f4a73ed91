//! What the HTTP layer counts beyond the limiter's own counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one [`ShedLayer`](super::ShedLayer) (shared by its clones),
/// also published as metrics:
///
/// | series | type | meaning |
/// |---|---|---|
/// | `shed_http_hold_expired_total{class}` | counter | response bodies that reached their maximum hold time; their slots were given back early |
/// | `shed_http_degraded_total` | counter | responses answered by a `#[shed]` fallback, marked `shed-degraded: fallback` |
#[derive(Debug, Default)]
pub struct HttpCounters {
    hold_expired: AtomicU64,
    degraded: AtomicU64,
}

impl HttpCounters {
    /// Response bodies whose slots were given back at the maximum hold
    /// time rather than at their end.
    pub fn hold_expired(&self) -> u64 {
        self.hold_expired.load(Ordering::Relaxed)
    }

    /// Responses that carried a fallback's answer.
    pub fn degraded(&self) -> u64 {
        self.degraded.load(Ordering::Relaxed)
    }

    pub(crate) fn count_hold_expired(&self, class: &'static str) {
        self.hold_expired.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("shed_http_hold_expired_total", "class" => class).increment(1);
    }

    pub(crate) fn count_degraded(&self) {
        self.degraded.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("shed_http_degraded_total").increment(1);
    }
}
