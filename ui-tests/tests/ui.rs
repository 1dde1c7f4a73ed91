#[test]
fn ui() {
    // trybuild builds the cases and their dependencies (shed, tokio, syn...)
    // in a project of its own, with cargo's default dev profile: full debug
    // info, which nobody reads here and which doubled the time of this test
    // on a clean clone (75 s against 33 s, measured one after the other).
    // The workspace's profile does not reach that project; the environment
    // does. An explicit setting in the environment still wins.
    if std::env::var_os("CARGO_PROFILE_DEV_DEBUG").is_none() {
        std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "0");
    }
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
