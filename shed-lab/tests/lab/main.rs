//! The overload lab's tests, in one binary (each module was a test binary
//! of its own, and each linked the lab again). Run one file's tests with
//! its module path, for example `cargo test -p shed-lab --test lab
//! tenants::`.

mod adaptive;
mod defaults;
mod fleet;
mod presets;
mod retries;
mod tenants;
