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
use std::sync::Arc;

/// Runs `future` as calls of tenant `key`: see [`Tenant`].
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
) -> impl Future<Output = F::Output> + use<K, F> {
    crate::context::scope_tenant(tenant_hash(key), future)
}

/// Runs `future` as calls of tenant `key` on `plan`: like [`with_tenant`],
/// and while the class waits, its calls rank by the plan's tier (see
/// [`Tiers`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use shed_runtime::{with_tenant_plan, Limiter, Tiers};
/// let limiter = Limiter::builder()
///     .tiers(Tiers::new(["premium", "free"]))
///     .build()
///     .unwrap();
/// let served = with_tenant_plan("customer-42", "free", async {
///     limiter.acquire("critical", 1, "checkout").await.is_ok()
/// })
/// .await;
/// # assert!(served);
/// # }
/// ```
pub fn with_tenant_plan<F: Future>(
    key: &str,
    plan: impl Into<Arc<str>>,
    future: F,
) -> impl Future<Output = F::Output> {
    Tenant::new(key).plan(plan).scope(future)
}

/// A caller's tenant as an integration hands it on: its key (named in the
/// heaviest-tenants summary) and, optionally, its plan (its tier, see
/// [`Tiers`]). The key must be what authentication established (an API
/// key's owner, a token's subject), never a header the client chooses.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let tenant = shed_runtime::Tenant::new("customer-42").plan("premium");
/// assert_eq!(tenant.name(), "customer-42");
/// tenant.scope(async { /* guarded calls of customer-42 */ }).await;
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    hash: u64,
    name: Arc<str>,
    plan: Option<Arc<str>>,
}

impl Tenant {
    /// The tenant of `key`; the same key gives the same cohort as
    /// [`with_tenant`]`(key)`.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        let name = key.into();
        Self {
            hash: tenant_hash(&*name),
            name,
            plan: None,
        }
    }

    /// The tenant's plan (a name listed in the limiter's [`Tiers`]).
    pub fn plan(mut self, plan: impl Into<Arc<str>>) -> Self {
        self.plan = Some(plan.into());
        self
    }

    /// The tenant's key.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `future` as this tenant's calls (see [`with_tenant`]).
    pub fn scope<F: Future>(self, future: F) -> impl Future<Output = F::Output> {
        crate::context::scope_tenant_detail(self.hash, Some(self.name), self.plan, future)
    }
}

/// Tenants' plans, each a rank within every class: while a class's calls
/// wait, a plan's calls are served before those of the plans listed after
/// it (`free` yields before `premium`), and when the queue is full, a
/// later plan's waiters make room for an earlier plan's arrival. Among
/// tenants of one plan, the queue is fair (each tenant in turn).
///
/// Tiers only order waiting calls: with free slots, every plan is admitted
/// at once. Configured in one place ([`Config::tiers`](crate::Config::tiers))
/// and shown by [`Config::describe`](crate::Config::describe).
///
/// ```
/// let tiers = shed_runtime::Tiers::new(["premium", "standard", "free"]).unplanned("free");
/// assert_eq!(tiers.to_string(), "premium>standard>free (unplanned: free)");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tiers {
    names: Vec<Arc<str>>,
    /// The rank of calls with no plan or an unknown one.
    unplanned: Option<usize>,
}

impl Tiers {
    /// The most tiers a limiter ranks; further names share the last rank.
    pub const MAX: usize = 8;

    /// Plans from the first served to the last. Calls with no plan, or a
    /// plan not listed, rank with the last (see [`Tiers::unplanned`]).
    pub fn new<S: Into<Arc<str>>>(plans: impl IntoIterator<Item = S>) -> Self {
        Self {
            names: plans.into_iter().map(Into::into).collect(),
            unplanned: None,
        }
    }

    /// Ranks calls with no plan, or an unknown one, with `plan` instead of
    /// the last tier (ignored if `plan` is not listed).
    pub fn unplanned(mut self, plan: &str) -> Self {
        self.unplanned = self.names.iter().position(|n| &**n == plan);
        self
    }

    /// The plans, first served first.
    pub fn plans(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// The rank of `plan` within a class (0 is served first). Inline for
    /// the common case, a limiter without plans (every waiting call asks).
    #[inline]
    pub(crate) fn rank(&self, plan: Option<&str>) -> u8 {
        if self.names.is_empty() {
            return 0;
        }
        self.rank_of_plan(plan)
    }

    fn rank_of_plan(&self, plan: Option<&str>) -> u8 {
        let last = self.names.len() - 1;
        let rank = plan
            .and_then(|p| self.names.iter().position(|n| &**n == p))
            .unwrap_or_else(|| self.unplanned.unwrap_or(last));
        rank.min(Self::MAX - 1) as u8
    }
}

impl std::fmt::Display for Tiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plans: Vec<&str> = self.plans().collect();
        write!(f, "{}", plans.join(">"))?;
        let unplanned = self.unplanned.unwrap_or(plans.len().saturating_sub(1));
        match plans.get(unplanned) {
            Some(plan) => write!(f, " (unplanned: {plan})"),
            None => Ok(()),
        }
    }
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
