//! Compile-pass and compile-fail cases of `#[shed]`, run by trybuild:
//! `cargo test -p shed-ui-tests`. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite` and review the diff like code.
