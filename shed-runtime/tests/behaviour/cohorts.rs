//! Consistent partial shedding: a class shed to a third is shed by tenant
//! cohort, so most users see all of their calls served or none, where
//! thinning calls evenly gives almost every user some failures.

use shed_runtime::{with_tenant, Config, Limiter};

const USERS: usize = 1_000;
const CALLS: usize = 30;

/// For each user, how many of its calls were admitted.
async fn served_per_user(limiter: &Limiter, tenants: bool) -> Vec<usize> {
    let mut served = vec![0; USERS];
    // Users interleave, as they would in an episode of 10 s.
    for _ in 0..CALLS {
        for (user, count) in served.iter_mut().enumerate() {
            let call = async { limiter.acquire("optional", 1, "lookup").await.is_ok() };
            let admitted = if tenants {
                with_tenant(&format!("user-{user}"), call).await
            } else {
                call.await
            };
            *count += usize::from(admitted);
        }
    }
    served
}

fn all_or_none(served: &[usize]) -> usize {
    served.iter().filter(|&&n| n == 0 || n == CALLS).count()
}

#[tokio::test(start_paused = true)]
async fn a_class_shed_to_a_third_is_shed_by_cohort() {
    let limiter = Config::new().capacity(10_000).build().unwrap();
    limiter
        .set_class_admitted_fraction("optional", 1.0 / 3.0)
        .unwrap();
    let by_cohort = served_per_user(&limiter, true).await;
    let admitted_users = by_cohort.iter().filter(|&&n| n == CALLS).count();
    assert_eq!(all_or_none(&by_cohort), USERS, "every user: all or none");
    assert!(
        (280..=390).contains(&admitted_users),
        "about a third of the users served: {admitted_users}"
    );

    let evenly = served_per_user(&limiter, false).await;
    let total: usize = evenly.iter().sum();
    assert!((total as f64 / (USERS * CALLS) as f64 - 1.0 / 3.0).abs() < 0.01);
    assert!(
        all_or_none(&evenly) < USERS / 20,
        "even thinning fails some calls of nearly everyone"
    );
}

#[tokio::test(start_paused = true)]
async fn the_shed_cohorts_rotate_a_little_between_episodes() {
    let limiter = Config::new().capacity(10_000).build().unwrap();
    let admitted_in_episode = |limiter: Limiter| async move {
        limiter
            .set_class_admitted_fraction("optional", 0.5)
            .unwrap();
        let mut admitted = Vec::new();
        for user in 0..USERS {
            let call = limiter.acquire("optional", 1, "lookup");
            admitted.push(with_tenant(&user, call).await.is_ok());
        }
        limiter
            .set_class_admitted_fraction("optional", 1.0)
            .unwrap();
        admitted
    };
    let first = admitted_in_episode(limiter.clone()).await;
    let second = admitted_in_episode(limiter.clone()).await;
    let same = first.iter().zip(&second).filter(|(a, b)| a == b).count();
    // An eighth of the cohort range moves: about a quarter of the users
    // change sides, three quarters keep their fate.
    assert!(
        (USERS * 6 / 10..USERS * 9 / 10).contains(&same),
        "{same} of {USERS} kept their fate"
    );
}
