//! Bounded tenant metrics: counts per class and tier (never a series per
//! tenant), and the heaviest tenants by refused and by admitted calls in a
//! fixed-size space-saving sketch (Metwally et al.), for the periodic
//! summary. Memory is the same for ten tenants or a million.

use std::sync::{Arc, Mutex};

use crate::tenant::Tiers;

/// How many tenants each sketch tracks: any tenant with more than
/// 1/`SLOTS` of the counted calls is among them.
const SLOTS: usize = 16;

/// How many tenants the summary names.
pub const TOP: usize = 3;

#[derive(Debug, Clone)]
struct Entry {
    hash: u64,
    name: Option<Arc<str>>,
    count: u64,
}

/// The space-saving sketch: `SLOTS` counters; a tenant not tracked takes
/// the smallest counter over (its count then overestimates by at most
/// that counter's value).
#[derive(Debug, Default)]
struct SpaceSaving {
    entries: Vec<Entry>,
}

impl SpaceSaving {
    fn add(&mut self, hash: u64, name: Option<&Arc<str>>, count: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.hash == hash) {
            e.count += count;
            if e.name.is_none() {
                e.name = name.cloned();
            }
            return;
        }
        let entry = Entry {
            hash,
            name: name.cloned(),
            count,
        };
        if self.entries.len() < SLOTS {
            self.entries.push(entry);
            return;
        }
        let smallest = self
            .entries
            .iter_mut()
            .min_by_key(|e| e.count)
            .expect("SLOTS > 0");
        let floor = smallest.count;
        *smallest = Entry {
            count: floor + count,
            ..entry
        };
    }

    fn top(&self) -> Vec<(String, u64)> {
        let mut entries = self.entries.clone();
        entries.sort_by_key(|e| std::cmp::Reverse(e.count));
        entries
            .into_iter()
            .take(TOP)
            .map(|e| {
                let name = e
                    .name
                    .map_or_else(|| format!("#{:016x}", e.hash), |n| n.to_string());
                (name, e.count)
            })
            .collect()
    }
}

/// The heaviest tenants of an interval, heaviest first, with their
/// (approximate, never under-) counts of calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaviestTenants {
    /// By calls refused.
    pub refused: Vec<(String, u64)>,
    /// By calls admitted (fast-path admissions are sampled).
    pub admitted: Vec<(String, u64)>,
}

impl std::fmt::Display for HeaviestTenants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[(String, u64)]| {
            v.iter()
                .map(|(n, c)| format!("{n}={c}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        write!(
            f,
            "heaviest tenants: refused {}; admitted {}",
            list(&self.refused),
            list(&self.admitted)
        )
    }
}

#[derive(Debug, Default)]
struct Tally {
    refused: SpaceSaving,
    admitted: SpaceSaving,
    /// Per class, per tier: (admitted, refused), since the start.
    by_tier: Vec<[(u64, u64); Tiers::MAX]>,
}

/// What a limiter counts of its tenants' calls.
#[derive(Debug)]
pub(crate) struct TenantTally(Mutex<Tally>);

impl TenantTally {
    pub(crate) fn new(classes: usize) -> Self {
        Self(Mutex::new(Tally {
            by_tier: vec![[(0, 0); Tiers::MAX]; classes],
            ..Tally::default()
        }))
    }

    /// Counts `count` calls of tenant `hash` in `class` and `tier`,
    /// `admitted` or refused.
    pub(crate) fn record(
        &self,
        (class, tier): (usize, u8),
        (hash, name): (u64, Option<&Arc<str>>),
        admitted: bool,
        count: u64,
    ) {
        let mut tally = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let tier = usize::from(tier).min(Tiers::MAX - 1);
        if let Some(row) = tally.by_tier.get_mut(class) {
            let cell = &mut row[tier];
            if admitted {
                cell.0 += count;
            } else {
                cell.1 += count;
            }
        }
        let sketch = if admitted {
            &mut tally.admitted
        } else {
            &mut tally.refused
        };
        sketch.add(hash, name, count);
    }

    /// The heaviest tenants since the last call, and starts over.
    pub(crate) fn take(&self) -> HeaviestTenants {
        let mut tally = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let heaviest = HeaviestTenants {
            refused: tally.refused.top(),
            admitted: tally.admitted.top(),
        };
        tally.refused = SpaceSaving::default();
        tally.admitted = SpaceSaving::default();
        heaviest
    }

    /// Per class and tier with calls: (class index, tier, admitted, refused).
    pub(crate) fn by_tier(&self) -> Vec<(usize, usize, u64, u64)> {
        let tally = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows = Vec::new();
        for (class, row) in tally.by_tier.iter().enumerate() {
            for (tier, &(admitted, refused)) in row.iter().enumerate() {
                if admitted + refused > 0 {
                    rows.push((class, tier, admitted, refused));
                }
            }
        }
        rows
    }
}

impl super::Limiter {
    /// The heaviest tenants since the last call (by refused and by
    /// admitted calls), and starts counting over: what the periodic
    /// summary names.
    pub fn take_heaviest_tenants(&self) -> HeaviestTenants {
        self.inner.core.tenants.take()
    }

    /// Publishes tenants' calls per class and tier (the tier label is the
    /// plan's name; never a label per tenant).
    pub(crate) fn publish_tier_metrics(&self, base: &[metrics::Label]) {
        let core = &self.inner.core;
        let plans: Vec<&str> = self.inner.tiers.plans().collect();
        for (class, tier, admitted, refused) in core.tenants.by_tier() {
            let tier = plans
                .get(tier)
                .map_or_else(|| "default".to_string(), |p| p.to_string());
            let mut labels = vec![
                metrics::Label::new("class", core.classes[class].spec.name()),
                metrics::Label::new("tier", tier),
            ];
            labels.extend_from_slice(base);
            metrics::counter!("shed_tier_admitted_total", labels.clone()).absolute(admitted);
            metrics::counter!("shed_tier_refused_total", labels).absolute(refused);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heavy_tenants_surface_among_a_million_light_ones() {
        let tally = TenantTally::new(1);
        let heavy: Arc<str> = "heavy".into();
        let second: Arc<str> = "second".into();
        for i in 0..1_000_000u64 {
            // A million distinct light tenants, one call each...
            tally.record((0, 0), (i + 10, None), false, 1);
            // ...and two heavy ones among them.
            if i % 4 == 0 {
                tally.record((0, 0), (1, Some(&heavy)), false, 1);
            }
            if i % 8 == 0 {
                tally.record((0, 0), (2, Some(&second)), false, 1);
            }
        }
        let top = tally.take();
        assert_eq!(top.refused[0].0, "heavy");
        assert_eq!(top.refused[1].0, "second");
        assert!(top.refused[0].1 >= 250_000);
        assert_eq!(tally.0.lock().unwrap().refused.entries.len(), 0, "reset");
        assert_eq!(tally.by_tier(), vec![(0, 0, 0, 1_375_000)]);
    }
}
