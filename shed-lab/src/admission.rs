//! The admission step of one server process under one policy, shared by
//! the single-instance engine and each replica of a fleet: take slots (or
//! refuse), run the call's work, give the slots back.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shed::{Limiter, Policy, Tenant};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use crate::engine::shed_config;
use crate::scenario::Scenario;
use crate::PolicyKind;

/// The `Retry-After` of the anchors' refusals (they give none of their
/// own; a client honouring it waits a second).
const ANCHOR_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How one process admits calls.
pub(crate) enum Admission {
    /// An unbounded FIFO queue behind the slots.
    Fifo(Arc<Semaphore>),
    /// tower's `LoadShed` + `ConcurrencyLimit`.
    Tower(tower::limit::GlobalConcurrencyLimitLayer),
    /// FIFO behind the slots; refused once it got them after `max_wait`.
    QueueWait(Arc<Semaphore>),
    /// The real limiter, configured from the scenario.
    Shed(Limiter),
}

/// One call as the admission sees it.
pub(crate) struct Call<'a> {
    /// Its guarded fn (class, weight, budget).
    pub(crate) policy: &'static Policy,
    /// The queue-wait budget of the `queue-wait` policy.
    pub(crate) max_wait: Duration,
    /// When it arrived (what `queue-wait` measures its wait from).
    pub(crate) arrival: Instant,
    /// The client's deadline, if it travels with the call.
    pub(crate) deadline: Option<Instant>,
    /// The caller's tenant, if the scenario keys calls by tenant: the
    /// limiter's fair lanes, tiers and tally see it; the anchors ignore it.
    pub(crate) tenant: Option<&'a Tenant>,
}

/// A call refused by the admission.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused {
    /// Counted under this reason.
    pub(crate) reason: String,
    /// When its client may retry.
    pub(crate) retry_after: Duration,
    /// Whether another server could take it: refused before any work,
    /// not as unable to meet its deadline (a 504).
    pub(crate) retryable: bool,
}

impl Refused {
    fn anchor(reason: &str) -> Self {
        Self {
            reason: reason.into(),
            retry_after: ANCHOR_RETRY_AFTER,
            retryable: true,
        }
    }
}

impl Admission {
    /// The admission of `policy` for `scenario`'s `[limiter]`.
    pub(crate) fn new(scenario: &Scenario, policy: PolicyKind) -> Self {
        let capacity = scenario.limiter.anchor_slots() as usize;
        match policy {
            PolicyKind::None => Admission::Fifo(Arc::new(Semaphore::new(capacity))),
            PolicyKind::QueueWait => Admission::QueueWait(Arc::new(Semaphore::new(capacity))),
            PolicyKind::RejectWhenFull => {
                Admission::Tower(tower::limit::GlobalConcurrencyLimitLayer::new(capacity))
            }
            PolicyKind::Shed => {
                Admission::Shed(shed_config(scenario).build().expect("validated scenario"))
            }
        }
    }

    /// The limiter, under the `shed` policy.
    pub(crate) fn limiter(&self) -> Option<&Limiter> {
        match self {
            Admission::Shed(limiter) => Some(limiter),
            _ => None,
        }
    }

    /// Admits `call` and runs `work()` in its slots, or refuses it. The
    /// work's future is made only once the call is admitted, so whatever
    /// it draws (its service time) is drawn for admitted calls only.
    pub(crate) async fn serve<W, F>(&self, call: Call<'_>, work: W) -> Result<(), Refused>
    where
        W: FnOnce() -> F,
        F: Future<Output = ()>,
    {
        let arrival = call.arrival;
        let weight = call.policy.weight();
        match self {
            Admission::Fifo(slots) => {
                let _permit = slots.acquire_many(weight).await.expect("never closed");
                work().await;
                Ok(())
            }
            Admission::QueueWait(slots) => {
                let permit = slots.acquire_many(weight).await.expect("never closed");
                if arrival.elapsed() > call.max_wait {
                    drop(permit);
                    return Err(Refused::anchor("max_wait"));
                }
                work().await;
                Ok(())
            }
            Admission::Tower(limit) => {
                // tower's service is `Fn`; it is called once, when admitted.
                let work = Cell::new(Some(work));
                let service = tower::service_fn(|()| {
                    let work = work.take().expect("called once");
                    async move {
                        work().await;
                        Ok::<(), std::convert::Infallible>(())
                    }
                });
                let mut stack = tower::ServiceBuilder::new()
                    .load_shed()
                    .layer(limit.clone())
                    .service(service);
                let ready = stack.ready().await.expect("load_shed is always ready");
                ready
                    .call(())
                    .await
                    .map_err(|_overloaded| Refused::anchor("overloaded"))
            }
            Admission::Shed(limiter) => {
                let guarded = shed::run_guarded(call.policy, async move { work().await });
                let scoped = async {
                    match call.deadline {
                        Some(deadline) => {
                            limiter.scope(shed::with_deadline(deadline, guarded)).await
                        }
                        None => limiter.scope(guarded).await,
                    }
                };
                let result = match call.tenant {
                    Some(tenant) => tenant.clone().scope(scoped).await,
                    None => scoped.await,
                };
                result.map_err(|rejected| Refused {
                    reason: rejected.reason().to_string(),
                    retry_after: rejected.retry_after(),
                    retryable: rejected.reason() != shed::Reason::Deadline,
                })
            }
        }
    }
}
