//! What a limiter has counted, as the public [`LimiterStats`] snapshot.

use crate::limiter::counters::REASONS;
use crate::limiter::Limiter;
use crate::rejected::Reason;

/// Counts of one class, as of a [`Limiter::stats`] call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ClassStats {
    /// The class's name.
    pub class: &'static str,
    /// Whether the class is switched on.
    pub enabled: bool,
    /// Weight the class holds now.
    pub in_flight: u64,
    /// Calls admitted so far.
    pub admitted: u64,
    /// Calls refused so far, by reason (reasons with no refusal are left out).
    pub refused: Vec<(Reason, u64)>,
    /// Refusals that observe mode let through, by reason.
    pub observed_refusals: Vec<(Reason, u64)>,
    /// Calls with a deadline that finished before it (for the HTTP layer,
    /// when the response body ended).
    pub served_in_time: u64,
    /// Calls with a deadline that finished after it: wasted work.
    pub late: u64,
    /// Refused calls answered by their `fallback` instead.
    pub fallbacks: u64,
}

impl ClassStats {
    /// Refusals for one reason.
    pub fn refused_for(&self, reason: Reason) -> u64 {
        self.refused
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }

    /// All refusals of the class.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().map(|(_, n)| n).sum()
    }
}

/// A snapshot of a limiter's state and counters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct LimiterStats {
    /// Current capacity in slots (a `u32`, as everywhere).
    pub capacity: u32,
    /// Weight held by admitted calls.
    pub in_flight: u64,
    /// Calls waiting for slots.
    pub queued: usize,
    /// Weight waiting for slots.
    pub queued_weight: u64,
    /// Per-class counts, in configuration order.
    pub classes: Vec<ClassStats>,
}

impl LimiterStats {
    /// The stats of one class.
    pub fn class(&self, name: &str) -> Option<&ClassStats> {
        self.classes.iter().find(|c| c.class == name)
    }
}

fn nonzero(counts: [u64; REASONS]) -> Vec<(Reason, u64)> {
    Reason::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| (*r, n))
        .collect()
}

impl Limiter {
    /// A snapshot of the limiter's state and counters (takes the queue
    /// lock briefly; meant for tests, admin endpoints and reporters).
    pub fn stats(&self) -> LimiterStats {
        let core = &self.inner.core;
        let snapshot = core.snapshot();
        let (queued, queued_weight) = core.queued();
        let (_, admitted) = self.inner.totals.read(core);
        LimiterStats {
            capacity: u32::try_from(snapshot.capacity).unwrap_or(u32::MAX),
            in_flight: snapshot.in_flight,
            queued,
            queued_weight,
            classes: core
                .classes
                .iter()
                .enumerate()
                .map(|(i, class)| {
                    let (refused, observed) = class.counters.snapshot();
                    let (served_in_time, late, fallbacks) = class.counters.outcomes();
                    ClassStats {
                        served_in_time,
                        late,
                        fallbacks,
                        class: class.spec.name(),
                        enabled: class.is_enabled(),
                        in_flight: core.class_in_flight(i),
                        admitted: admitted[i],
                        refused: nonzero(refused),
                        observed_refusals: nonzero(observed),
                    }
                })
                .collect(),
        }
    }
}
