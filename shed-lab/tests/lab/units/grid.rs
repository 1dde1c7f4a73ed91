use shed_lab::grid::*;

#[test]
fn the_grid_scenarios_are_valid_and_the_defaults_leave_the_limiter_unconfigured() {
    for shape in &SHAPES {
        for contender in Contender::ALL {
            let s = scenario(shape, contender, 1);
            let text_free = shed_lab::shed_config(&s);
            if contender == Contender::Defaults {
                assert_eq!(
                    format!("{text_free:?}"),
                    format!("{:?}", shed::Config::new()),
                    "{}",
                    shape.name()
                );
            }
            assert!((s.capacity_rps() - shape.capacity_rps()).abs() < 1e-6);
        }
    }
    let names: std::collections::BTreeSet<String> = SHAPES.iter().map(Shape::name).collect();
    assert_eq!(names.len(), SHAPES.len(), "unique names");
}
