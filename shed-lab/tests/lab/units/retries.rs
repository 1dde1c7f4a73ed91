use std::time::Duration;

use shed_lab::retries::*;
use shed_lab::scenario::Dur;

#[test]
fn recovery_is_the_start_of_the_last_healthy_stretch() {
    let requests = vec![10; 30];
    // Healthy until 10, collapsed 10..14, one good tick, a dip at 17,
    // healthy from 18 on.
    let mut good = vec![10; 30];
    for g in &mut good[10..14] {
        *g = 0;
    }
    good[17] = 0;
    // Windows of 5 ticks: one empty tick out of five is 80% < 95%.
    assert_eq!(recovery(&requests, &good, 10, 30), Some(8));
    assert_eq!(recovery(&requests, &good, 20, 30), Some(0));
    let collapsed = vec![0; 30];
    assert_eq!(recovery(&requests, &collapsed, 10, 30), None);
}

#[test]
fn a_clients_table_with_bad_values_says_which() {
    let mut config = ClientsConfig::new(ClientPolicy::BudgetThrottle);
    config.retries = 1000;
    config.budget_ratio = Some(-0.1);
    config.throttle_k = Some(0.5);
    config.throttle_window = Some(Dur(Duration::ZERO));
    let problems = config.problems().join("; ");
    for key in ["retries", "budget_ratio", "throttle_k", "throttle_window"] {
        assert!(problems.contains(&format!("`clients.{key}`")), "{problems}");
    }
    assert!(ClientsConfig::new(ClientPolicy::Budget)
        .problems()
        .is_empty());
}

#[test]
fn policies_parse_by_name_and_say_what_is_expected() {
    for p in ClientPolicy::ALL {
        assert_eq!(p.name().parse::<ClientPolicy>(), Ok(p));
    }
    let e = "storm".parse::<ClientPolicy>().unwrap_err();
    assert!(e.contains("budget+throttle"), "{e}");
}
