//! VRL programs compiled and run by the `vrl` crate as Vector's `remap` transform and VRL
//! conditions run them (Vector v0.50.0, src/transforms/remap.rs and src/conditions/vrl.rs).

use crate::Event;
use std::path::Path;
use vrl::compiler::runtime::{Runtime, Terminate};
use vrl::compiler::state::RuntimeState;
use vrl::compiler::{Program, TargetValue, TimeZone};
use vrl::diagnostic::{DiagnosticMessage, Formatter, Note};
use vrl::value::{Secrets, Value};

/// Compiles VRL with every function of the crate's stdlib, as Vector does; an error names
/// `origin` (a file, or a test) and carries the compiler's diagnostics with their spans.
pub fn compile(source: &str, origin: &str) -> Result<Program, String> {
    match vrl::compiler::compile(source, &vrl::stdlib::all()) {
        Ok(result) => Ok(result.program),
        Err(diagnostics) => Err(format!("{origin} does not compile:\n{}", Formatter::new(source, diagnostics))),
    }
}

pub fn compile_file(path: &Path) -> Result<(Program, String), String> {
    let source = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let program = compile(&source, &path.display().to_string())?;
    Ok((program, source))
}

/// Runs a program on an event, as Vector's VrlTarget does: `.` and `%` are the program's.
pub fn run(program: &Program, event: &mut Event) -> Result<Value, Terminate> {
    let mut target = TargetValue {
        value: std::mem::replace(&mut event.value, Value::Null),
        metadata: std::mem::replace(&mut event.metadata, Value::Null),
        secrets: Secrets::default(),
    };
    let result = Runtime::new(RuntimeState::default()).resolve(&mut target, program, &TimeZone::default());
    event.value = target.value;
    event.metadata = target.metadata;
    result
}

/// The events a program leaves, as Vector's VrlTarget::into_events makes them in the legacy
/// namespace: an array root is one event per element, and a root that is not an object is
/// the `message` of its event.
pub fn into_events(event: Event) -> Vec<Event> {
    let Event { value, metadata } = event;
    let as_event = |value: Value| match value {
        Value::Object(_) => Event { value, metadata: metadata.clone() },
        other => {
            let mut event = Event { value: Value::Object(Default::default()), metadata: metadata.clone() };
            event.insert(".message", other);
            event
        }
    };
    match value {
        Value::Array(values) => values.into_iter().map(as_event).collect(),
        value => vec![as_event(value)],
    }
}

/// A VRL condition: true when its program returns `true` on a copy of the event; an abort,
/// an error or any other value is false (Vector's Vrl condition), with why, for test reports.
pub fn check(program: &Program, event: &Event) -> Result<(), String> {
    let mut copy = event.clone();
    match run(program, &mut copy) {
        Ok(Value::Boolean(true)) => Ok(()),
        Ok(Value::Boolean(false)) => Err("source execution resolved to false".to_string()),
        Ok(other) => Err(format!("source execution resolved to a non-boolean value: {other}")),
        Err(Terminate::Abort(e)) | Err(Terminate::Error(e)) => Err(format!("source execution failed: {e}")),
    }
}

/// Why a remap dropped an event: Vector's Remap::dropped_data, which it puts under
/// `.metadata.dropped` (legacy namespace) of the event it reroutes.
pub fn dropped_annotation(component_id: &str, reason: &str, error: &vrl::compiler::ExpressionError) -> Value {
    let message = error
        .notes()
        .iter()
        .filter(|note| matches!(note, Note::UserErrorMessage(_)))
        .next_back()
        .map(|note| note.to_string())
        .unwrap_or_else(|| error.to_string());
    let json = serde_json::json!({
        "reason": reason,
        "message": message,
        "component_id": component_id,
        "component_type": "remap",
        "component_kind": "transform",
    });
    Value::from(json)
}

/// Compiles VRL as Vector compiles a remap fed by the socket source, knowing the fields that
/// source sets (legacy namespace: message, timestamp, source_type, host). Vector refuses a
/// program that, given those types, handles an error that cannot happen (an error
/// coalescing `??` on a bytes `.message`, E651), where a compile without them passes.
pub fn compile_for_socket_events(source: &str, origin: &str) -> Result<Program, String> {
    use vrl::compiler::state::ExternalEnv;
    use vrl::compiler::CompileConfig;
    use vrl::value::kind::{Collection, Field};
    use vrl::value::Kind;
    let fields: std::collections::BTreeMap<Field, Kind> = [
        ("message", Kind::bytes()),
        ("timestamp", Kind::timestamp()),
        ("source_type", Kind::bytes()),
        ("host", Kind::bytes()),
    ]
    .into_iter()
    .map(|(name, kind)| (name.into(), kind))
    .collect();
    let external = ExternalEnv::new_with_kind(Kind::object(fields), Kind::object(Collection::any()));
    match vrl::compiler::compile_with_external(source, &vrl::stdlib::all(), &external, CompileConfig::default()) {
        Ok(result) => Ok(result.program),
        Err(diagnostics) => Err(format!("{origin}, fed by the socket source, does not compile:\n{}", Formatter::new(source, diagnostics))),
    }
}
