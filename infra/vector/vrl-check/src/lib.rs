//! Plays infra/vector/vector.yaml with the `vrl` crate, the engine of Vector's `remap`,
//! where Vector itself cannot run: its VRL programs, compiled and run with Vector's remap
//! semantics; its `route` and `log_to_metric` transforms; its sinks, as the records they
//! would send; and its own `tests:` blocks, evaluated as `vector test` does.

pub mod config;
pub mod program;
pub mod topology;
pub mod unit_tests;

use std::path::PathBuf;
use vrl::value::Value;

/// A log event as a VRL program sees it: the event (`.`) and its metadata (`%`).
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub value: Value,
    pub metadata: Value,
}

impl Event {
    pub fn new(value: Value) -> Self {
        Event { value, metadata: Value::Object(Default::default()) }
    }

    /// What a source in Vector's legacy log namespace makes of a line: `message`, `timestamp`
    /// (LogEvent::from_str_legacy), and what the socket source adds in unix_stream mode.
    pub fn from_socket_line(line: &str) -> Self {
        let mut event = Self::from_raw(line);
        event.insert(".source_type", Value::from("socket"));
        // The agent connects from an unnamed socket (Vector's UNNAMED_SOCKET_HOST).
        event.insert(".host", Value::from("(unnamed)"));
        event
    }

    /// A `raw` unit test input: LogEvent::from_str_legacy.
    pub fn from_raw(line: &str) -> Self {
        let mut event = Event::new(Value::Object(Default::default()));
        event.insert(".message", Value::from(line));
        event.insert(".timestamp", Value::Timestamp(chrono::Utc::now()));
        event
    }

    /// The value at a VRL path: `.field.sub` (or `field.sub`) in the event, `%field` in its metadata.
    pub fn get(&self, path: &str) -> Option<&Value> {
        let (root, path) = self.root_of(path);
        let path = vrl::path::parse_value_path(path).ok()?;
        root.get(&path)
    }

    pub fn insert(&mut self, path: &str, value: Value) {
        let in_metadata = path.starts_with('%');
        let bare = path.trim_start_matches(['%', '.']);
        let path = vrl::path::parse_value_path(bare).unwrap_or_else(|e| panic!("path {bare}: {e}"));
        let root = if in_metadata { &mut self.metadata } else { &mut self.value };
        root.insert(&path, value);
    }

    fn root_of<'a>(&self, path: &'a str) -> (&Value, &'a str) {
        match path.strip_prefix('%') {
            Some(rest) => (&self.metadata, rest),
            None => (&self.value, path.trim_start_matches('.')),
        }
    }

    /// The event as JSON, as a sink's `json` codec writes it (metadata is not written).
    pub fn to_json(&self) -> serde_json::Value {
        self.value.clone().try_into().expect("an event converts to JSON")
    }
}

/// The repository's root: this package sits at infra/vector/vrl-check. Where cargo runs the
/// tests from, not where they were built: a test binary kept in a shared target directory
/// may have been built in another checkout that is gone.
pub fn repo_root() -> PathBuf {
    let package: PathBuf =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into);
    package.join("../../..").canonicalize().expect("the repository root exists")
}
