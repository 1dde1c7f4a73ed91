//! Fair dispatch across tenants inside a class, on the paused clock: a
//! tenant that floods a class waits behind its own calls while the other
//! tenants of the class keep their service; plans rank within a class.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shed_runtime::{with_tenant_plan, ClassSpec, Limiter, Tenant, Tiers};

const CAPACITY: u32 = 10;
const SERVICE: Duration = Duration::from_millis(10);
const RUN: Duration = Duration::from_secs(2);

fn limiter(tiers: Option<Tiers>) -> Limiter {
    let config = Limiter::builder()
        .capacity(CAPACITY)
        .class(ClassSpec::new("api", 0).max_wait(Duration::from_millis(50)));
    match tiers {
        Some(tiers) => config.tiers(tiers),
        None => config,
    }
    .build()
    .unwrap()
}

/// One tenant's load: calls every `every`, starting at `phase`.
struct Load {
    tenant: Option<&'static str>,
    plan: Option<&'static str>,
    every: Duration,
    phase: Duration,
}

/// Offers every load for [`RUN`]; returns, per load, (offered, served).
async fn run(limiter: &Limiter, loads: &[Load]) -> Vec<(usize, usize)> {
    let counts: Vec<_> = loads
        .iter()
        .map(|_| (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))))
        .collect();
    let mut tasks = Vec::new();
    for (load, (offered, served)) in loads.iter().zip(&counts) {
        let mut at = load.phase;
        while at < RUN {
            let (limiter, offered, served) = (limiter.clone(), offered.clone(), served.clone());
            let (tenant, plan) = (load.tenant, load.plan);
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(at).await;
                offered.fetch_add(1, Ordering::Relaxed);
                let call = async {
                    if let Ok(_permit) = limiter.acquire("api", 1, "call").await {
                        tokio::time::sleep(SERVICE).await;
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                };
                match (tenant, plan) {
                    (Some(t), Some(p)) => with_tenant_plan(t, p, call).await,
                    (Some(t), None) => Tenant::new(t).scope(call).await,
                    _ => call.await,
                }
            }));
            at += load.every;
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    counts
        .iter()
        .map(|(o, s)| (o.load(Ordering::Relaxed), s.load(Ordering::Relaxed)))
        .collect()
}

/// Nine tenants at their fair part of the class (a tenth of its capacity
/// each) and one at ten times its part: 1.9 times the capacity.
fn noisy_neighbour(tenants: bool) -> Vec<Load> {
    const NAMES: [&str; 10] = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"];
    // A tenth of the capacity: one slot, a call every service time.
    let fair = SERVICE;
    let mut loads: Vec<Load> = (1..10)
        .map(|i| Load {
            tenant: tenants.then_some(NAMES[i]),
            plan: None,
            every: fair,
            phase: Duration::from_micros(997 * i as u64),
        })
        .collect();
    loads.push(Load {
        tenant: tenants.then_some(NAMES[0]),
        plan: None,
        every: fair / 10,
        phase: Duration::from_micros(250),
    });
    loads
}

#[tokio::test(start_paused = true)]
async fn a_noisy_tenant_waits_behind_itself() {
    let fair = limiter(None);
    let results = run(&fair, &noisy_neighbour(true)).await;
    let (quiet, noisy) = results.split_at(9);
    let quiet_offered: usize = quiet.iter().map(|r| r.0).sum();
    let quiet_served: usize = quiet.iter().map(|r| r.1).sum();
    let total: usize = results.iter().map(|r| r.1).sum();
    eprintln!(
        "fair: quiet {quiet_served}/{quiet_offered}, noisy {:?}, total {total}",
        noisy[0]
    );
    assert!(
        quiet_served as f64 >= 0.99 * quiet_offered as f64,
        "the nine keep their service: {quiet_served} of {quiet_offered}"
    );
    // No capacity wasted: the noisy tenant gets the rest.
    let capacity_calls = (RUN.as_secs_f64() / SERVICE.as_secs_f64()) as usize * CAPACITY as usize;
    assert!(
        total as f64 >= 0.97 * capacity_calls as f64,
        "{total} of {capacity_calls}"
    );

    // The summary names the noisy tenant, and only a bounded few.
    let heaviest = fair.take_heaviest_tenants();
    assert_eq!(heaviest.refused[0].0, "t0", "{heaviest}");
    assert!(heaviest.refused.len() <= 3 && heaviest.admitted.len() <= 3);

    let shared = run(&limiter(None), &noisy_neighbour(false)).await;
    let quiet_shared: usize = shared[..9].iter().map(|r| r.1).sum();
    eprintln!("no tenants: quiet {quiet_shared}/{quiet_offered}");
    assert!(
        (quiet_shared as f64) < 0.8 * quiet_offered as f64,
        "without tenants the flood takes the others' slots: {quiet_shared}"
    );
}

#[tokio::test(start_paused = true)]
async fn premium_is_served_while_free_absorbs_the_shedding() {
    const PREMIUM: [&str; 2] = ["p0", "p1"];
    const FREE: [&str; 6] = ["f0", "f1", "f2", "f3", "f4", "f5"];
    // Twice the capacity: premium a quarter of it, free the rest.
    let mut loads: Vec<Load> = PREMIUM
        .iter()
        .enumerate()
        .map(|(i, &t)| Load {
            tenant: Some(t),
            plan: Some("premium"),
            every: SERVICE * 2 / CAPACITY * 2,
            phase: Duration::from_micros(331 * i as u64),
        })
        .collect();
    loads.extend(FREE.iter().enumerate().map(|(i, &t)| Load {
        tenant: Some(t),
        plan: Some("free"),
        every: SERVICE * 4 / CAPACITY,
        phase: Duration::from_micros(173 * i as u64),
    }));
    let limiter = limiter(Some(Tiers::new(["premium", "free"])));
    let results = run(&limiter, &loads).await;
    let sum = |r: &[(usize, usize)]| r.iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let (premium, free) = (sum(&results[..2]), sum(&results[2..]));
    eprintln!("premium {premium:?}, free {free:?}");
    assert!(premium.1 as f64 >= 0.99 * premium.0 as f64, "{premium:?}");
    assert!(
        free.1 < free.0 * 3 / 4,
        "free absorbs the shedding: {free:?}"
    );
}

/// A tenant among `n` for the `i`-th call, Zipf-distributed (s = 1):
/// P(rank <= k) = ln k / ln n, so a few tenants send most calls.
fn zipf(i: u64, n: u64) -> u64 {
    let u = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64;
    ((n as f64).powf(u) as u64).clamp(1, n)
}

#[tokio::test(start_paused = true)]
async fn a_hundred_thousand_tenants_lose_no_goodput() {
    // Twice the capacity, every call its Zipf-drawn tenant's.
    let goodput = |tenants: bool| async move {
        let limiter = limiter(None);
        let served = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        let every = SERVICE / CAPACITY / 2;
        for i in 0..(RUN.as_nanos() / every.as_nanos()) as u64 {
            let (limiter, served) = (limiter.clone(), served.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(every * i as u32).await;
                let call = async {
                    if let Ok(_permit) = limiter.acquire("api", 1, "call").await {
                        tokio::time::sleep(SERVICE).await;
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                };
                if tenants {
                    Tenant::new(format!("tenant-{}", zipf(i, 100_000)))
                        .scope(call)
                        .await
                } else {
                    call.await
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        served.load(Ordering::Relaxed)
    };
    let (single, many) = (goodput(false).await, goodput(true).await);
    eprintln!("goodput: one tenant {single}, 100,000 tenants {many}");
    assert!(
        (many as f64 - single as f64).abs() <= 0.01 * single as f64,
        "{many} vs {single}"
    );
}
