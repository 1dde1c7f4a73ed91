//! placeholder
pub use shed_runtime::*;
