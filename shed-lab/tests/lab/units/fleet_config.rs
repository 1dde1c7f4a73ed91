use std::time::Duration;

use shed_lab::fleet::config::*;

fn config(text: &str) -> FleetConfig {
    toml::from_str(text).unwrap()
}

#[test]
fn a_cold_replica_speeds_up_linearly_to_full_speed() {
    let fleet = config("replicas = 2\ncold = \"2s\"\ncold_factor = 3.0");
    assert_eq!(fleet.cold_factor_at(Duration::ZERO), 3.0);
    assert_eq!(fleet.cold_factor_at(Duration::from_secs(1)), 2.0);
    assert_eq!(fleet.cold_factor_at(Duration::from_secs(5)), 1.0);
    assert_eq!(fleet.cold_factor_at(Duration::MAX), 1.0, "warm");
    assert_eq!(config("replicas = 2").cold_factor_at(Duration::ZERO), 1.0);
}

#[test]
fn events_must_name_a_replica_and_only_slow_takes_a_factor() {
    let fleet = config(
        "replicas = 2
         [[event]]
         at = \"1s\"
         replica = 2
         action = \"slow\"
         [[event]]
         at = \"1s\"
         replica = 0
         action = \"lose\"
         factor = 2.0",
    );
    let problems = fleet.problems().join("; ");
    assert!(
        problems.contains("fleet event #1: `replica` = 2 but replicas are numbered 0 to 1"),
        "{problems}"
    );
    assert!(
        problems.contains("fleet event #1: `slow` needs a positive `factor`"),
        "{problems}"
    );
    assert!(
        problems.contains("fleet event #2: only `slow` takes a `factor`"),
        "{problems}"
    );
}
