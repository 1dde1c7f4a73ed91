//! The startup check over a large program: 10,000 guarded fns.
//!
//! `cargo bench -p shed-bench --bench startup_check` measures building the
//! policy table (what `shed::policies()` does once inventory has collected
//! the registrations: sort by name, file and line) and `check_against`
//! over it (what `Config::check` does next), for 10,000 policies in three
//! classes, every one valid, so the whole table is walked. The policies
//! are built at run time (`Policy::leak`), the same structure the
//! attribute's `static`s have, without compiling 10,000 fns.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use shed::{Config, Policy, PolicyTable};

const FNS: usize = 10_000;

fn policies() -> Vec<&'static Policy> {
    let classes = ["critical", "background", "optional"];
    (0..FNS)
        // Reverse order, so that building the table really sorts.
        .rev()
        .map(|i| {
            Policy::leak(
                format!("app::module_{}::Handler{}::get", i / 100, i % 100),
                classes[i % 3],
                None,
                1 + (i % 4) as u32,
            )
        })
        .collect()
}

fn startup_check(c: &mut Criterion) {
    let policies = policies();
    let config = Config::new();
    let table = PolicyTable::from_policies(policies.iter().copied());
    assert!(
        config.check_against(&table).is_ok(),
        "every policy is valid"
    );

    let mut group = c.benchmark_group("startup_check_10k");
    group.bench_function("build_table", |b| {
        b.iter(|| PolicyTable::from_policies(black_box(&policies).iter().copied()))
    });
    group.bench_function("check_against", |b| {
        b.iter(|| config.check_against(black_box(&table)))
    });
    // Both together: what `Config::check()` costs at startup.
    group.bench_function("build_and_check", |b| {
        b.iter(|| {
            let table = PolicyTable::from_policies(black_box(&policies).iter().copied());
            config.check_against(&table)
        })
    });
    group.finish();
}

criterion_group!(benches, startup_check);
criterion_main!(benches);
