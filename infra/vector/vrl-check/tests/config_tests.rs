//! vector.yaml's own `tests:` blocks, played as `vector test` plays them.

mod common;

use vrl_check::unit_tests;

#[test]
fn the_configs_unit_tests_pass() {
    let topology = common::setup();
    let reports = unit_tests::run_all(&topology);
    assert!(reports.len() >= 5, "vector.yaml has {} tests", reports.len());
    for report in &reports {
        eprintln!("vector test: {} ... {}", report.name, if report.errors.is_empty() { "ok" } else { "FAILED" });
    }
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.errors.is_empty())
        .map(|r| format!("{}:\n  {}", r.name, r.errors.join("\n  ")))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn a_test_that_expects_what_does_not_happen_fails() {
    // The player must be able to say no: the same configuration, one condition turned false.
    let mut topology = common::setup();
    let test = topology.config.tests[0].clone();
    let mut text = serde_yaml::to_string(&test).unwrap();
    text = text.replacen("%kafka_key == ", "%kafka_key != ", 1);
    topology.config.tests = vec![serde_yaml::from_str(&text).unwrap()];
    let reports = unit_tests::run_all(&topology);
    assert!(!reports[0].errors.is_empty(), "{text}");
}
