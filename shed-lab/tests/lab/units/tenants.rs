use shed_lab::tenants::*;

#[test]
fn water_filling_gives_light_tenants_all_and_shares_the_rest() {
    // 9 tenants offer 10 each, one offers 100; 100 were served.
    let mut offered = vec![10; 9];
    offered.push(100);
    let fair = max_min_fair(&offered, 100);
    assert_eq!(fair[..9], [10.0; 9]);
    assert_eq!(fair[9], 10.0);
    // 190 served: the light ones are whole, the heavy one has the rest.
    assert_eq!(max_min_fair(&offered, 190)[9], 100.0);
    assert_eq!(max_min_fair(&[0, 4], 2), vec![0.0, 2.0]);
}

#[test]
fn jain_is_one_when_equal_and_one_over_n_when_one_has_all() {
    assert_eq!(jain(&[0.5; 4]), 1.0);
    assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), 0.25);
}

#[test]
fn draws_follow_the_groups_loads_and_zipf_ranks() {
    let config: TenantsConfig = toml::from_str(
        r#"
        [[group]]
        name = "quiet"
        count = 9
        [[group]]
        name = "noisy"
        count = 1
        load = 9
        [[group]]
        name = "zipf"
        count = 1000
        load = 0.018
        distribution = "zipf"
        "#,
    )
    .unwrap();
    let tenants = Tenants::new(&config);
    let mut rng = fastrand::Rng::with_seed(1);
    let mut hits = vec![0u32; tenants.len()];
    for _ in 0..100_000 {
        hits[tenants.draw(&mut rng)] += 1;
    }
    let (quiet, noisy) = (hits[..9].iter().sum::<u32>(), hits[9]);
    assert!((noisy as f64 / quiet as f64 - 1.0).abs() < 0.05);
    // Zipf: rank 1 about twice rank 2, ten times rank 10.
    let zipf = &hits[10..];
    assert!(
        zipf[0] > zipf[1] * 3 / 2 && zipf[0] > zipf[9] * 6,
        "{:?}",
        &zipf[..10]
    );
    assert_eq!(tenants.tenant(9).name(), "noisy-0");
}
