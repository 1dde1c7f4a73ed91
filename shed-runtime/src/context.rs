//! What a task carries for the guarded calls it makes: the limiter they
//! use (if not the process-wide one), the caller's deadline, the caller's
//! tenant and which attempt of the caller's request this is. One
//! task-local holds them all, so a guarded call looks them up once.

use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::time::Instant;

/// The limiter set by [`Limiter::scope`](crate::Limiter::scope), opaque
/// here: the context sits below the limiter and knows nothing of it (the
/// limiter turns it back into itself, see `Limiter::from_scoped`).
pub(crate) type ScopedLimiter = Arc<dyn Any + Send + Sync>;

tokio::task_local! {
    static CONTEXT: CallContext;
}

/// Whether any call context was ever entered in this process. Until one
/// is, no task can be in one, and a guarded call skips the task-local
/// lookup. Set before the context is: a call that runs inside it runs
/// after the store on the same task (a later poll on another thread is
/// ordered after it by the scheduler's hand-over), so it reads `true`.
static ENTERED: AtomicBool = AtomicBool::new(false);

/// Notes that a call context is being entered (see [`ENTERED`]).
fn entering() {
    if !ENTERED.load(Ordering::Relaxed) {
        ENTERED.store(true, Ordering::Relaxed);
    }
}

#[derive(Clone, Default)]
pub(crate) struct CallContext {
    limiter: Option<ScopedLimiter>,
    deadline: Option<Instant>,
    /// A hash of the caller's tenant key.
    tenant: Option<u64>,
    /// The caller's tenant's plan (its tier, see [`crate::Tiers`]).
    plan: Option<Arc<str>>,
    /// The caller's tenant's name, for the heaviest-tenants summary.
    name: Option<Arc<str>>,

    /// The caller's attempt number (1 = first; 0 = not known, read as 1).
    attempt: u32,
}

/// The current limiter (`None`: the process-wide one) and deadline; `None`
/// outside any call context (the task's calls then have no tenant and are
/// first attempts: see [`Caller::OUTSIDE`]).
#[inline]
pub(crate) fn current() -> Option<(Option<ScopedLimiter>, Option<Instant>)> {
    if !ENTERED.load(Ordering::Relaxed) {
        return None;
    }
    CONTEXT.try_with(|c| (c.limiter.clone(), c.deadline)).ok()
}

pub(crate) fn current_limiter() -> Option<ScopedLimiter> {
    CONTEXT.try_with(|c| c.limiter.clone()).ok().flatten()
}

pub(crate) fn current_deadline() -> Option<Instant> {
    CONTEXT.try_with(|c| c.deadline).ok().flatten()
}

pub(crate) fn current_tenant() -> Option<u64> {
    CONTEXT.try_with(|c| c.tenant).ok().flatten()
}

/// The caller's tenant hash, name and plan, for the heaviest-tenants
/// tally (a call that waits reads them with [`current_caller`]).
pub(crate) fn current_tenant_detail() -> (Option<u64>, Option<Arc<str>>, Option<Arc<str>>) {
    CONTEXT
        .try_with(|c| (c.tenant, c.name.clone(), c.plan.clone()))
        .unwrap_or((None, None, None))
}

/// What a call that must wait needs of its caller, read in one lookup:
/// its attempt number (1 = first) and its tenant's hash, name and plan.
pub(crate) struct Caller {
    pub(crate) attempt: u32,
    pub(crate) tenant: Option<u64>,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) plan: Option<Arc<str>>,
}

impl Caller {
    /// The caller of a task outside any call context: a first attempt,
    /// without a tenant.
    pub(crate) const OUTSIDE: Caller = Caller {
        attempt: 1,
        tenant: None,
        name: None,
        plan: None,
    };
}

pub(crate) fn current_caller() -> Caller {
    CONTEXT
        .try_with(|c| Caller {
            attempt: c.attempt.max(1),
            tenant: c.tenant,
            name: c.name.clone(),
            plan: c.plan.clone(),
        })
        .unwrap_or(Caller::OUTSIDE)
}

pub(crate) fn current_attempt() -> u32 {
    CONTEXT.try_with(|c| c.attempt).unwrap_or(0).max(1)
}

/// Runs `future` with the context it is first polled in, changed by
/// `change`. Reading the context at the first poll, not when the scope is
/// built, matters: in `limiter.scope(with_deadline(d, call))` the deadline
/// scope is built outside the limiter's scope but runs inside it.
pub(crate) async fn scope<F: Future>(
    change: impl FnOnce(&mut CallContext),
    future: F,
) -> F::Output {
    let mut context = CONTEXT.try_with(CallContext::clone).unwrap_or_default();
    change(&mut context);
    entering();
    CONTEXT.scope(context, future).await
}

pub(crate) fn scope_limiter<F: Future>(
    limiter: ScopedLimiter,
    future: F,
) -> impl Future<Output = F::Output> {
    scope(move |c| c.limiter = Some(limiter), future)
}

/// Tightens the deadline: the earlier of the current one and `deadline`.
pub(crate) fn scope_deadline<F: Future>(
    deadline: Instant,
    future: F,
) -> impl Future<Output = F::Output> {
    scope(
        move |c| {
            c.deadline = Some(match c.deadline {
                Some(outer) if outer < deadline => outer,
                _ => deadline,
            })
        },
        future,
    )
}

pub(crate) fn scope_tenant<F: Future>(tenant: u64, future: F) -> impl Future<Output = F::Output> {
    scope(
        move |c| {
            c.tenant = Some(tenant);
            c.name = None;
            c.plan = None;
        },
        future,
    )
}

pub(crate) fn scope_tenant_detail<F: Future>(
    tenant: u64,
    name: Option<Arc<str>>,
    plan: Option<Arc<str>>,
    future: F,
) -> impl Future<Output = F::Output> {
    scope(
        move |c| {
            c.tenant = Some(tenant);
            c.name = name;
            c.plan = plan;
        },
        future,
    )
}

/// Runs `f` (which decides an admission, synchronously) as a call of
/// `tenant`, with no plan or name (the macro's `tenant = ...`).
pub(crate) fn sync_scope_tenant<R>(tenant: u64, f: impl FnOnce() -> R) -> R {
    let mut context = CONTEXT.try_with(CallContext::clone).unwrap_or_default();
    context.tenant = Some(tenant);
    context.name = None;
    context.plan = None;
    entering();
    CONTEXT.sync_scope(context, f)
}

pub(crate) fn scope_attempt<F: Future>(attempt: u32, future: F) -> impl Future<Output = F::Output> {
    scope(move |c| c.attempt = attempt, future)
}
