//! The caller's tenant: a key (a customer, an API key's owner, a user)
//! that a task carries for the guarded calls it makes.
//!
//! While a class is partly shed (the overload controller's ramp, or
//! [`Limiter::set_class_admitted_fraction`](crate::Limiter::set_class_admitted_fraction)),
//! calls with a tenant are admitted or refused by *cohort*: a stable hash
//! of the key decides, so the same tenants are served throughout an
//! episode and most users see either all of their calls served or none,
//! instead of every user seeing some failures. Calls without a tenant are
//! thinned evenly, as before.
//!
//! The key must come from a trusted source (the authenticated identity,
//! after authentication), never from a header the client chooses.

use std::future::Future;
use std::hash::{Hash, Hasher};

/// Runs `future` as calls of tenant `key`: see the [module docs](self).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = shed_runtime::Limiter::builder().build().unwrap();
/// // Admit a third of `optional`, by tenant.
/// limiter.set_class_admitted_fraction("optional", 1.0 / 3.0).unwrap();
/// let served = shed_runtime::with_tenant("customer-42", async {
///     limiter.acquire("optional", 1, "recommendations").await.is_ok()
/// })
/// .await;
/// # let _ = served;
/// # }
/// ```
pub fn with_tenant<K: Hash + ?Sized, F: Future>(
    key: &K,
    future: F,
) -> impl Future<Output = F::Output> {
    crate::context::scope_tenant(tenant_hash(key), future)
}

/// A stable hash of a tenant key: the same key gives the same cohort in
/// every process of one build.
pub(crate) fn tenant_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    mix(hasher.finish())
}

/// SplitMix64's finaliser: spreads any key evenly over the `u64`s.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Whether the cohort of `tenant` is admitted when `fraction` parts in
/// `full` are, with the cohorts rotated by `offset` (which moves a little
/// at each new episode, so the same tenants are not always the ones shed).
pub(crate) fn cohort_admitted(tenant: u64, fraction: u32, full: u32, offset: u32) -> bool {
    let full = u64::from(full);
    let position = (tenant % full + u64::from(offset)) % full;
    position < u64::from(fraction)
}
