//! The overload lab's tests, in one binary (each module was a test binary
//! of its own, and each linked the lab again). Run one file's tests with
//! its module path, for example `cargo test -p shed-lab --test lab
//! tenants::`.

use std::path::PathBuf;

use shed_lab::Scenario;

mod adaptive;
mod defaults;
mod fleet;
mod presets;
mod retries;
mod tenants;
/// The tests of the lab's own modules, one file each (as unit tests they
/// made `cargo test` compile the whole lab a second time).
mod units;

/// A preset scenario of `examples/scenarios/`, by file name.
fn preset(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/scenarios")
        .join(format!("{name}.toml"));
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}
