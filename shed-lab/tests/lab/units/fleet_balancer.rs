use shed_lab::fleet::balancer::*;
use shed_lab::fleet::replica::Reading;
use shed_lab::fleet::{BalancerKind, Weights};

#[test]
fn orca_weights_are_throughput_per_utilization_less_errors() {
    let header = "TEXT application_utilization=0.5,rps_fractional=400,eps=0,\
                  named_metrics.shed_occupancy=0.5";
    assert_eq!(orca_weight(header), Some(800.0));
    let refusing = "TEXT application_utilization=2,rps_fractional=100,eps=100";
    assert_eq!(orca_weight(refusing), Some(100.0 / 3.0));
    assert_eq!(
        orca_weight("TEXT application_utilization=0,rps_fractional=0,eps=0"),
        None
    );
}

#[test]
fn agent_check_weights_are_the_percentage_and_drain_is_zero() {
    assert_eq!(agent_check_weight("up 40%\n"), Some(40.0));
    assert_eq!(agent_check_weight("drain\n"), Some(0.0));
    assert_eq!(agent_check_weight("up\n"), None);
}

#[test]
fn smooth_weighted_round_robin_follows_the_weights_evenly() {
    let balancer = Balancer::new(BalancerKind::Weighted, Weights::Orca, false, 3, 1);
    balancer.set_weight(0, Some(3.0));
    balancer.set_weight(1, Some(1.0));
    // Replica 2 has no weight: it gets the mean, 2.
    let picks: Vec<usize> = (0..12).map(|_| balancer.pick(None).unwrap()).collect();
    let count = |r| picks.iter().filter(|&&p| p == r).count();
    assert_eq!((count(0), count(1), count(2)), (6, 2, 4));
    assert!(
        picks.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
        "spread out: {picks:?}"
    );
}

#[test]
fn least_outstanding_and_p2c_avoid_the_busy_replica() {
    for kind in [BalancerKind::LeastOutstanding, BalancerKind::P2c] {
        let balancer = Balancer::new(kind, Weights::Orca, false, 2, 7);
        for _ in 0..5 {
            balancer.sent(0);
        }
        let to_busy = (0..20).filter(|_| balancer.pick(None) == Some(0)).count();
        assert!(
            to_busy <= 8,
            "{kind:?} sent {to_busy} of 20 to the busy one"
        );
        assert_eq!(balancer.pick(Some(1)), Some(0), "a retry goes elsewhere");
    }
}

#[test]
fn unhealthy_replicas_get_nothing_and_not_ready_ones_only_in_panic() {
    let balancer = Balancer::new(BalancerKind::RoundRobin, Weights::Orca, true, 2, 1);
    balancer.set_healthy(0, false);
    assert!((0..4).all(|_| balancer.pick(None) == Some(1)));
    assert_eq!(balancer.pick(Some(1)), None);
    balancer.set_healthy(0, true);
    let not_ready = Reading {
        report: None,
        ready: false,
    };
    balancer.apply(1, &not_ready);
    assert!((0..4).all(|_| balancer.pick(None) == Some(0)));
    balancer.apply(0, &not_ready);
    assert!(
        balancer.pick(None).is_some(),
        "all not ready: any healthy one"
    );
}
