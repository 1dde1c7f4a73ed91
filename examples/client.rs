//! Calling a shed-guarded service through the client layer (filled in below).
fn main() {}
