//! Benchmarks live in `benches/`; run them with
//! `cargo bench -p shed-bench`. Results and how to read them are in
//! `BENCHMARKS.md`.

pub mod hot_path;
