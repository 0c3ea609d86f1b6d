//! The pipeline's VRL programs compile with the vrl crate of Vector 0.50, and each does
//! what the configuration relies on.

mod common;

use regex::Regex;
use std::collections::BTreeSet;
use vrl_check::config;
use vrl_check::topology::Transform;
use vrl_check::{program, repo_root};

fn vrl_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("infra/vector"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "vrl"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_vrl_file_compiles() {
    let files = vrl_files();
    assert!(files.len() >= 3, "validate, enrich and deadletter at least: {files:?}");
    let errors: Vec<String> = files.iter().filter_map(|f| program::compile_file(f).err()).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_vrl_file_is_the_program_of_a_remap() {
    let topology = common::setup();
    let used: BTreeSet<_> = topology
        .config
        .transforms
        .values()
        .filter(|options| config::text(options, "type") == Some("remap"))
        .filter_map(|options| config::text(options, "file"))
        .map(|file| repo_root().join(file).canonicalize().unwrap())
        .collect();
    let present: BTreeSet<_> = vrl_files().into_iter().map(|f| f.canonicalize().unwrap()).collect();
    assert_eq!(used, present);
}

#[test]
fn enrich_can_neither_fail_nor_abort_so_no_valid_record_is_held_back() {
    let topology = common::setup();
    let Transform::Remap(enrich) = &topology.transforms["enrich"] else { panic!("enrich is a remap") };
    let info = enrich.program.info();
    assert!(!info.fallible && !info.abortable, "{} may fail or abort", enrich.origin);
}

#[test]
fn validate_checks_each_agent_record_against_its_own_schema_file() {
    let source = std::fs::read_to_string(repo_root().join("infra/vector/validate.vrl")).unwrap();
    let call = Regex::new(r#"validate_json_schema\(\.message, "schema/records/([a-z0-9.]+)\.schema\.json"\)"#).unwrap();
    let checked: BTreeSet<String> = call.captures_iter(&source).map(|c| c[1].to_string()).collect();
    let agent: BTreeSet<String> = common::agent_records().into_iter().collect();
    assert_eq!(checked, agent, "one schema check per record the agent sends (schema/topics.json)");
    for record in &checked {
        assert!(common::schema_file(record).is_file(), "{record}: no schema file");
        let branch = format!(r#"schema == "{record}""#);
        assert!(source.contains(&branch), "validate.vrl picks {record}'s schema by the record's own `schema`");
    }
}

#[test]
fn the_socket_sources_remaps_compile_knowing_its_fields_as_vector_does() {
    let topology = common::setup();
    let fed_by_sockets: Vec<&str> = topology
        .config
        .transforms
        .values()
        .filter(|options| config::text(options, "type") == Some("remap"))
        .filter(|options| {
            config::inputs(options).iter().any(|input| {
                topology.config.sources.get(input).is_some_and(|source| config::text(source, "type") == Some("socket"))
            })
        })
        .filter_map(|options| config::text(options, "file"))
        .collect();
    assert!(!fed_by_sockets.is_empty());
    for file in fed_by_sockets {
        let source = std::fs::read_to_string(repo_root().join(file)).unwrap();
        program::compile_for_socket_events(&source, file).unwrap_or_else(|e| panic!("{e}"));
        let needless = format!("x = string(.message) ?? \"\"\n{source}");
        assert!(program::compile_for_socket_events(&needless, file).is_err(), "the socket's fields are known: .message is bytes");
    }
}
