//! One replica of a fleet: a process with its own admission (the real
//! limiter under `shed`) and its own server model, which can be slowed,
//! lost, stopped and started again cold.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use shed::{LoadReporter, Policy, Readiness};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::admission::{Admission, Call};
use crate::scenario::Scenario;
use crate::server::Server;
use crate::PolicyKind;

/// How long shed's readiness measures a refusal rate over.
const READINESS_WINDOW: Duration = Duration::from_secs(1);

/// Why a replica did not answer a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// Counted under this reason.
    pub(crate) reason: String,
    /// Whether the balancer may send the request to another replica: a
    /// refusal before any work (a 503, a refused connection), not a
    /// request lost with its replica or refused as unable to meet its
    /// deadline (a 504).
    pub(crate) retryable: bool,
}

impl Refusal {
    pub(crate) fn new(reason: impl Into<String>, retryable: bool) -> Self {
        Self {
            reason: reason.into(),
            retryable,
        }
    }
}

/// One run of a replica's process, from a start to its loss or stop.
pub(crate) struct Process {
    admission: Admission,
    server: Server,
    /// When it started; `None` for a process already running (warm) when
    /// the simulation began.
    started: Option<Instant>,
    /// The load reports it would attach to its responses (`shed` only).
    reporter: Option<LoadReporter>,
    /// Its readiness check (`shed` only; the others are always ready).
    readiness: Option<Arc<Readiness>>,
    /// Set when the process dies: what it was doing fails.
    death: Death,
}

/// A process's death, which its requests in progress wait on. They learn
/// of it in the order they began waiting, so that a run is the same
/// every time: tokio's `watch` channel, used before, parks each receiver
/// on one of eight queues drawn from the runtime's own random generator,
/// which no seed reaches, and wakes the queues in turn, so the requests
/// a lost replica failed were retried on the others in a different order
/// from run to run (the weighted balancer's run with retries of
/// `fleet-lost-replica` gave three different reports in 30).
#[derive(Default)]
struct Death {
    dead: Cell<bool>,
    notify: Notify,
}

impl Death {
    fn kill(&self) {
        self.dead.set(true);
        self.notify.notify_waiters();
    }

    /// Returns once the process is dead.
    async fn wait(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Queued before the check, so a death between them still wakes it.
        notified.as_mut().enable();
        if !self.dead.get() {
            notified.await;
        }
    }
}

impl Process {
    fn start(scenario: &Scenario, policy: PolicyKind, report_interval: Duration) -> Self {
        let admission = Admission::new(scenario, policy);
        let (reporter, readiness) = match admission.limiter() {
            Some(limiter) => (
                Some(LoadReporter::new(limiter.clone()).interval(report_interval)),
                Some(
                    Readiness::new(limiter.clone())
                        .window(READINESS_WINDOW)
                        .start(),
                ),
            ),
            None => (None, None),
        };
        Self {
            admission,
            server: Server::new(scenario.server.as_ref()),
            started: Some(Instant::now()),
            reporter,
            readiness,
            death: Death::default(),
        }
    }
}

/// What the balancer can read from a replica at a refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Its load report, if it makes them (`shed` only).
    pub report: Option<shed::LoadReport>,
    /// Its readiness check.
    pub ready: bool,
}

/// A replica: the process running now, if any, and what slows it.
pub(crate) struct Replica {
    process: RefCell<Option<Rc<Process>>>,
    /// The factor on its service times set by `slow` events.
    slow: Cell<f64>,
}

impl Replica {
    /// A replica whose process was running before the simulation began:
    /// warm.
    pub(crate) fn running(
        scenario: &Scenario,
        policy: PolicyKind,
        report_interval: Duration,
    ) -> Self {
        let process = Process {
            started: None,
            ..Process::start(scenario, policy, report_interval)
        };
        Self {
            process: RefCell::new(Some(Rc::new(process))),
            slow: Cell::new(1.0),
        }
    }

    /// Whether a process is running.
    pub(crate) fn is_up(&self) -> bool {
        self.process.borrow().is_some()
    }

    /// Starts a new process (cold), replacing any running one.
    pub(crate) fn start(&self, scenario: &Scenario, policy: PolicyKind, report_interval: Duration) {
        self.lose();
        *self.process.borrow_mut() =
            Some(Rc::new(Process::start(scenario, policy, report_interval)));
    }

    /// The process dies: requests in progress fail.
    pub(crate) fn lose(&self) {
        if let Some(process) = self.process.borrow_mut().take() {
            process.death.kill();
        }
    }

    /// Multiplies its service times by `factor` from now on.
    pub(crate) fn slow_down(&self, factor: f64) {
        self.slow.set(factor);
    }

    /// How long its process has run (`Duration::MAX` if warm from the
    /// start), if it runs.
    pub(crate) fn uptime(&self) -> Option<Duration> {
        self.process.borrow().as_ref().map(|p| p.uptime())
    }

    /// The factor on its service times set by `slow` events.
    pub(crate) fn slow_factor(&self) -> f64 {
        self.slow.get()
    }

    /// What a balancer reads from it now: nothing from a replica that is
    /// down (its health check fails).
    pub(crate) fn read(&self) -> Option<Reading> {
        let process = self.process.borrow().clone()?;
        let ready = process.readiness.as_ref().is_none_or(|r| r.is_ready());
        Some(Reading {
            report: process.reporter.as_ref().map(LoadReporter::report),
            ready,
        })
    }

    /// Serves one request: admission, then the work on its server.
    /// `work(slow, uptime)` draws the service time once the request is
    /// admitted, from the replica's `slow` factor and its process's uptime
    /// (how cold it is). `deadline` travels with the request if given.
    pub(crate) async fn serve(
        &self,
        policy: &'static Policy,
        max_wait: Duration,
        deadline: Option<Instant>,
        work: impl FnOnce(f64, Duration) -> Duration,
    ) -> Result<(), Refusal> {
        let Some(process) = self.process.borrow().clone() else {
            return Err(Refusal::new("connection refused", true));
        };
        let factor = self.slow.get();
        let serve = process.serve(policy, max_wait, deadline, work, factor);
        // Biased: polled in this order, not tokio's random one, so a run
        // is the same every time (a request done at the instant of the
        // loss is answered).
        tokio::select! {
            biased;
            result = serve => result,
            () = process.death.wait() => Err(Refusal::new("replica lost", false)),
        }
    }
}

impl Process {
    /// How long it has run: forever, for a warm one.
    fn uptime(&self) -> Duration {
        self.started.map_or(Duration::MAX, |s| s.elapsed())
    }

    async fn serve(
        &self,
        policy: &'static Policy,
        max_wait: Duration,
        deadline: Option<Instant>,
        work: impl FnOnce(f64, Duration) -> Duration,
        slow: f64,
    ) -> Result<(), Refusal> {
        let call = Call {
            policy,
            max_wait,
            arrival: Instant::now(),
            deadline,
            tenant: None,
        };
        // Drawn once admitted, at the speed of that moment.
        let result = self
            .admission
            .serve(call, || async {
                let time = work(slow, self.uptime());
                self.server.execute(time).await;
            })
            .await;
        if let (Some(reporter), Admission::Shed(_)) = (&self.reporter, &self.admission) {
            // Every response carries a load report, as behind the
            // runtime's `OrcaLayer`: each is a sample of the occupancy.
            reporter.report();
        }
        result.map_err(|refused| Refusal::new(refused.reason, refused.retryable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_lost_replicas_requests_fail_in_the_order_they_came() {
        // Run to run, a lost replica's requests are retried in the order
        // they fail: a random order made the same scenario give
        // different reports.
        let scenario = Scenario::from_toml(
            r#"
            name = "t"
            seconds = 1
            [limiter]
            capacity = 16
            [[traffic]]
            rps = 100
            service = "1s"
            timeout = "10s"
            "#,
            "t.toml",
        )
        .unwrap();
        let local = tokio::task::LocalSet::new();
        let failed = local
            .run_until(async {
                let replica = Rc::new(Replica::running(
                    &scenario,
                    PolicyKind::Shed,
                    Duration::from_secs(1),
                ));
                let policy = Policy::leak("t", "critical", None, 1);
                let failed = Rc::new(RefCell::new(Vec::new()));
                for i in 0..8 {
                    let (replica, failed) = (replica.clone(), failed.clone());
                    tokio::task::spawn_local(async move {
                        let work = |_, _| Duration::from_secs(1);
                        let result = replica.serve(policy, Duration::from_secs(1), None, work);
                        let refusal = result.await.unwrap_err();
                        failed.borrow_mut().push((i, refusal.reason));
                    });
                    // Each begins before the next is sent.
                    tokio::task::yield_now().await;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                replica.lose();
                tokio::time::sleep(Duration::from_millis(10)).await;
                failed.take()
            })
            .await;
        let in_order: Vec<_> = (0..8).map(|i| (i, "replica lost".to_string())).collect();
        assert_eq!(failed, in_order);
    }
}
