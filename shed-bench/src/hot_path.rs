//! What the hot-path benchmark (`benches/hot_path.rs`) and its instruction
//! counter (`src/bin/hot_path_count.rs`) share: the guarded fns, the
//! static baselines, and the set-up of the paths that wait, so that the
//! counted code is the benchmarked code.

use std::future::Future;
use std::hint::black_box;
use std::time::Duration;

use shed::{shed, Rejected};
use tokio::sync::{Semaphore, SemaphorePermit};

/// The slots of the paths where a call is admitted at once.
pub const SLOTS: usize = 1024;

/// The baselines are statics, as `#[shed]`'s process-wide limiter is: no
/// reference count is cloned per call.
pub static SEMAPHORE: Semaphore = Semaphore::const_new(SLOTS);
/// One slot, for the paths that wait.
pub static ONE_SLOT: Semaphore = Semaphore::const_new(1);

/// Builds `#[shed]`'s process-wide limiter as the Semaphore is built: a
/// fixed capacity (of [`SLOTS`]; the waiting paths then set it to one),
/// and `critical`'s budget the same as the Semaphore's `timeout`. A
/// limiter built adaptive and pinned later by `Limiter::set_capacity`
/// keeps the adaptive default's queue discipline (adaptive LIFO, which
/// reads the clock and the oldest waiter at every dispatch): that is the
/// adaptive default's cost, not a fixed capacity's. Call it before
/// anything touches the process-wide limiter.
pub fn install_limiter(budget: Duration) {
    // Both the bench's groups and the counter call it; the first wins.
    let _ = shed::Config::new()
        .capacity(SLOTS as u32)
        .classes([shed::ClassSpec::new("critical", 0).max_wait(budget)])
        .install();
}

/// The plain call every variant makes.
#[inline(never)]
pub async fn work(x: u64) -> u64 {
    black_box(x).wrapping_mul(31)
}

/// The plain call as a `#[shed]` fn of the `critical` class.
#[shed(class = "critical")]
pub async fn guarded(x: u64) -> Result<u64, Rejected> {
    Ok(work(x).await)
}

/// Holds its slot across one yield, so that the other task's call waits.
#[shed(class = "critical")]
pub async fn guarded_turn(x: u64) -> Result<u64, Rejected> {
    tokio::task::yield_now().await;
    Ok(work(x).await)
}

/// Polls `call` once (it queues behind the held slot) and drops it, as a
/// caller that gives up does; then runs the plain call so that every
/// variant does the same work besides the guard. The call completes on
/// its first poll only if it is already out of budget (a stall longer
/// than the budget between its start and its first poll); it says so
/// itself.
pub async fn cancelled<F: Future<Output = ()>>(call: F, x: u64) -> u64 {
    tokio::select! {
        biased;
        () = call => {}
        () = std::future::ready(()) => {}
    }
    work(x).await
}

/// The held slot of the *cancel while waiting* path: shed's and the
/// Semaphore's, taken on the process-wide limiter set to one slot.
pub async fn hold_the_slot() -> (shed::Permit, SemaphorePermit<'static>) {
    shed::Limiter::global().set_capacity(1);
    let shed = shed::Limiter::global()
        .acquire("critical", 1, "bench::holder")
        .await
        .expect("the free slot");
    (shed, ONE_SLOT.acquire().await.expect("the free slot"))
}
