use shed_lab::algorithm::*;

#[test]
fn every_algorithm_has_its_own_name_and_parses_back() {
    for algorithm in Algorithm::ALL {
        assert_eq!(Algorithm::parse(algorithm.name()), Some(algorithm));
    }
    assert_eq!(Algorithm::names(), "auto, fixed, aimd, vegas, gradient2");
    assert_eq!(Algorithm::parse("static"), Some(Algorithm::Fixed));
    assert_eq!(Algorithm::parse("nosuch"), None);
}
