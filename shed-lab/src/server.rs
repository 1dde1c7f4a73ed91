//! Server models with a real bottleneck, behind whatever admission the
//! policy does: once admitted concurrency exceeds the bottleneck, every
//! admitted call gets slower.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Notify, Semaphore};
use tokio::time::Instant;

use crate::scenario::{ServerConfig, ServerModel};

/// How admitted work is executed.
pub(crate) enum Server {
    /// Every admitted call runs at full speed at once (no bottleneck
    /// behind the admission): the default.
    Unbounded,
    /// `workers` servers with a FIFO queue inside the server, where no
    /// shedding rule sees it.
    Fifo(Arc<Semaphore>),
    /// `workers` worth of capacity shared equally by every admitted call.
    Ps(Rc<ProcessorSharing>),
}

impl Server {
    pub(crate) fn new(config: Option<&ServerConfig>) -> Server {
        match config {
            None => Server::Unbounded,
            Some(c) => match c.model {
                ServerModel::Fifo => Server::Fifo(Arc::new(Semaphore::new(c.workers as usize))),
                ServerModel::Ps => {
                    let ps = Rc::new(ProcessorSharing::new(f64::from(c.workers)));
                    tokio::task::spawn_local(ps.clone().run());
                    Server::Ps(ps)
                }
            },
        }
    }

    /// Does `work` seconds of work (at full speed).
    pub(crate) async fn execute(&self, work: Duration) {
        match self {
            Server::Unbounded => tokio::time::sleep(work).await,
            Server::Fifo(workers) => {
                let _worker = workers.acquire().await.expect("never closed");
                tokio::time::sleep(work).await;
            }
            Server::Ps(ps) => ps.execute(work).await,
        }
    }
}

/// Processor sharing in virtual time: `n` active calls each progress at
/// `min(1, workers / n)` of full speed.
pub(crate) struct ProcessorSharing {
    workers: f64,
    jobs: RefCell<Vec<(f64, Option<oneshot::Sender<()>>)>>,
    last: Cell<Instant>,
    changed: Notify,
}

impl ProcessorSharing {
    fn new(workers: f64) -> Self {
        Self {
            workers,
            jobs: RefCell::new(Vec::new()),
            last: Cell::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    fn rate(&self, n: usize) -> f64 {
        if n == 0 {
            1.0
        } else {
            (self.workers / n as f64).min(1.0)
        }
    }

    /// Applies the progress made since the last change and completes
    /// finished jobs.
    fn advance(&self) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.last.get()).as_secs_f64();
        self.last.set(now);
        let mut jobs = self.jobs.borrow_mut();
        let rate = self.rate(jobs.len());
        for job in jobs.iter_mut() {
            job.0 -= elapsed * rate;
        }
        // Timers fire on whole milliseconds: finish what is within one.
        jobs.retain_mut(|(left, done)| {
            if *left <= 1e-4 {
                if let Some(done) = done.take() {
                    let _ = done.send(());
                }
                false
            } else {
                true
            }
        });
    }

    async fn execute(&self, work: Duration) {
        self.advance();
        let (done, finished) = oneshot::channel();
        self.jobs
            .borrow_mut()
            .push((work.as_secs_f64(), Some(done)));
        self.changed.notify_one();
        let _ = finished.await;
    }

    async fn run(self: Rc<Self>) {
        loop {
            self.advance();
            let next = {
                let jobs = self.jobs.borrow();
                let rate = self.rate(jobs.len());
                jobs.iter()
                    .map(|(left, _)| left / rate)
                    .fold(f64::INFINITY, f64::min)
            };
            if next.is_finite() {
                let wake = Instant::now() + Duration::from_secs_f64(next.max(0.0));
                // Biased: polled in this order, with no draw from the
                // runtime's unseeded generator (either order ends the
                // same here, but a run must not depend on it).
                tokio::select! {
                    biased;
                    _ = tokio::time::sleep_until(wake) => {}
                    _ = self.changed.notified() => {}
                }
            } else {
                self.changed.notified().await;
            }
        }
    }
}
