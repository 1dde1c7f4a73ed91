use std::path::PathBuf;

use shed_lab::cli::*;
use shed_lab::PolicyKind;

fn parse_line(line: &str) -> Result<Args, String> {
    parse(
        line.split_whitespace().map(String::from),
        PathBuf::from("seed.toml"),
    )
}

#[test]
fn no_arguments_run_the_default_scenario_under_every_policy() {
    let args = parse_line("").unwrap();
    assert_eq!(args.scenario, PathBuf::from("seed.toml"));
    assert_eq!(args.policies, PolicyKind::ALL.to_vec());
    assert_eq!(args.factors, [1.0]);
    assert!(!args.json && !args.algorithms && args.plot.is_none() && args.seeds.is_none());
}

#[test]
fn a_scenario_alone_runs_shed_and_a_sweep_runs_every_policy() {
    let alone = parse_line("s.toml").unwrap();
    assert_eq!(alone.scenario, PathBuf::from("s.toml"));
    assert_eq!(alone.policies, [PolicyKind::Shed]);
    let sweep = parse_line("s.toml --sweep 0.5,1,2 --json").unwrap();
    assert_eq!(sweep.policies, PolicyKind::ALL.to_vec());
    assert_eq!(sweep.factors, [0.5, 1.0, 2.0]);
    assert!(sweep.json);
    let one = parse_line("s.toml --sweep 1,2 --policy queue-wait").unwrap();
    assert_eq!(one.policies, [PolicyKind::QueueWait]);
}

#[test]
fn seeds_take_a_half_open_range_and_only_sweep_and_json() {
    let args = parse_line("s.toml --sweep 1,1.5 --seeds 3..7 --json").unwrap();
    assert_eq!(args.seeds, Some(3..7));
    for bad in ["--seeds 7..3", "--seeds 3..3", "--seeds 3", "--seeds a..b"] {
        let message = parse_line(bad).unwrap_err();
        assert!(
            message.contains("--seeds takes a range"),
            "{bad}: {message}"
        );
    }
    for conflict in [
        "--compare",
        "--algorithms",
        "--policy shed",
        "--sweep 1 --plot p.svg",
    ] {
        let message = parse_line(&format!("--seeds 0..2 {conflict}")).unwrap_err();
        assert!(
            message.contains("--sweep and --json only"),
            "{conflict}: {message}"
        );
    }
}

#[test]
fn bad_arguments_say_what_was_expected() {
    let cases = [
        ("--sweep 0,1", "--sweep takes positive factors"),
        ("--sweep inf", "--sweep takes positive factors"),
        ("--policy best", "unknown policy `best`"),
        ("--policy shed --compare", "exclude each other"),
        ("--plot p.svg", "--plot draws a sweep"),
        ("--frobnicate", "unknown flag `--frobnicate`"),
        ("--clients budget,storm", "unknown client policy `storm`"),
        ("a.toml b.toml", "unexpected argument `b.toml`"),
        ("--sweep", "--sweep needs a value"),
        ("--help", "usage: overload"),
    ];
    for (line, expected) in cases {
        let message = parse_line(line).unwrap_err();
        assert!(message.contains(expected), "{line}: {message}");
    }
}
