//! The configuration's transforms and sinks wired by their `inputs`, playing events as
//! Vector would: each transform's outputs go to every component that reads them, and a
//! sink keeps what reaches it as the records it would send.

use crate::config::{self, Config};
use crate::program;
use crate::Event;
use regex::Regex;
use serde_yaml::{Mapping, Value as Yaml};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use vrl::compiler::runtime::Terminate;
use vrl::compiler::Program;
use vrl::value::Value;

/// A `remap` transform with Vector 0.50's options and their defaults (drop_on_abort true,
/// drop_on_error false, reroute_dropped false).
pub struct Remap {
    /// Where its program is: its file, or its transform's own `source`.
    pub origin: String,
    pub program: Program,
    drop_on_abort: bool,
    drop_on_error: bool,
    reroute_dropped: bool,
}

pub enum Transform {
    Remap(Remap),
    /// `route`: an event goes to every route whose condition holds; with none, to
    /// `_unmatched` (reroute_unmatched, true by default).
    Route { routes: Vec<(String, Program)>, reroute_unmatched: bool },
    /// `log_to_metric` counters: one per event that has the field.
    LogToMetric { counters: Vec<Counter> },
}

pub struct Counter {
    field: String,
    name: String,
    namespace: Option<String>,
    tags: BTreeMap<String, String>,
}

pub struct Sink {
    pub kind: String,
    pub options: Mapping,
}

/// A record a Kafka sink would produce.
#[derive(Debug, Clone)]
pub struct KafkaRecord {
    pub topic: String,
    pub key: Option<String>,
    /// The message value, byte for byte as the sink's codec writes it.
    pub value: String,
    /// The value read as JSON (null when it is not JSON).
    pub payload: serde_json::Value,
    pub headers: BTreeMap<String, String>,
}

pub struct Topology {
    pub config: Config,
    pub transforms: BTreeMap<String, Transform>,
}

/// Everything that came out of a play: every transform output's events by output id
/// (`validate`, `validate.dropped`, `by_topic.io_hist_v1`), and what reached each sink.
#[derive(Default, Debug)]
pub struct Outputs {
    pub by_output: BTreeMap<String, Vec<Event>>,
    pub by_sink: BTreeMap<String, Vec<Event>>,
}

impl Topology {
    /// Reads the configuration and compiles its programs; `root` is Vector's working
    /// directory, against which `file:` paths resolve.
    pub fn load(config_path: &Path, root: &Path, vars: &HashMap<String, String>) -> Result<Topology, String> {
        let config = Config::load(config_path, vars)?;
        let mut transforms = BTreeMap::new();
        for (id, options) in &config.transforms {
            let transform = match config::text(options, "type") {
                Some("remap") => Transform::Remap(remap(id, options, root)?),
                Some("route") => route(id, options)?,
                Some("log_to_metric") => log_to_metric(id, options)?,
                other => return Err(format!("transform {id}: vrl-check does not play type {other:?}")),
            };
            transforms.insert(id.clone(), transform);
        }
        Ok(Topology { config, transforms })
    }

    pub fn sink(&self, id: &str) -> Sink {
        let options = self.config.sinks[id].clone();
        Sink { kind: config::text(&options, "type").unwrap_or_default().to_string(), options }
    }

    /// A line the agent writes to the socket, from the source `source` down to the sinks.
    pub fn play_line(&self, source: &str, line: &str) -> Outputs {
        let mut out = Outputs::default();
        self.forward(source, vec![Event::from_socket_line(line)], &mut out);
        out
    }

    /// Events given to the transform `insert_at`, as a unit test's inputs are.
    pub fn play_at(&self, insert_at: &str, events: Vec<Event>) -> Outputs {
        let mut out = Outputs::default();
        for event in events {
            self.run_transform(insert_at, event, &mut out);
        }
        out
    }

    fn run_transform(&self, id: &str, event: Event, out: &mut Outputs) {
        let transform = self.transforms.get(id).unwrap_or_else(|| panic!("no transform {id}"));
        for (port, events) in transform.process(id, event) {
            let output = match port {
                None => id.to_string(),
                Some(port) => format!("{id}.{port}"),
            };
            out.by_output.entry(output.clone()).or_default().extend(events.iter().cloned());
            self.forward(&output, events, out);
        }
    }

    /// Sends events of one output to every transform and sink that names it in `inputs`.
    fn forward(&self, output: &str, events: Vec<Event>, out: &mut Outputs) {
        for (id, options) in &self.config.transforms {
            if config::inputs(options).iter().any(|input| input == output) {
                for event in &events {
                    self.run_transform(id, event.clone(), out);
                }
            }
        }
        for (id, options) in &self.config.sinks {
            if config::inputs(options).iter().any(|input| input == output) {
                out.by_sink.entry(id.clone()).or_default().extend(events.iter().cloned());
            }
        }
    }
}

impl Transform {
    /// The events one event becomes, by output port (None: the default output).
    fn process(&self, id: &str, event: Event) -> Vec<(Option<String>, Vec<Event>)> {
        match self {
            Transform::Remap(remap) => remap.process(id, event),
            Transform::Route { routes, reroute_unmatched } => {
                let matched: Vec<_> = routes
                    .iter()
                    .filter(|(_, condition)| program::check(condition, &event).is_ok())
                    .map(|(name, _)| (Some(name.clone()), vec![event.clone()]))
                    .collect();
                if matched.is_empty() && *reroute_unmatched {
                    vec![(Some("_unmatched".to_string()), vec![event])]
                } else {
                    matched
                }
            }
            Transform::LogToMetric { counters } => {
                let metrics = counters.iter().filter_map(|counter| counter.of(&event)).collect();
                vec![(None, metrics)]
            }
        }
    }
}

impl Remap {
    /// Vector's Remap::transform: on success the program's events; on an abort or error the
    /// original event, dropped or passed on as configured, and when dropped with
    /// reroute_dropped, annotated and sent to the `dropped` output.
    fn process(&self, id: &str, original: Event) -> Vec<(Option<String>, Vec<Event>)> {
        let mut event = original.clone();
        let (reason, error, drop) = match program::run(&self.program, &mut event) {
            Ok(_) => return vec![(None, program::into_events(event))],
            Err(Terminate::Abort(error)) => ("abort", error, self.drop_on_abort),
            Err(Terminate::Error(error)) => ("error", error, self.drop_on_error),
        };
        if !drop {
            return vec![(None, vec![original])];
        }
        if !self.reroute_dropped {
            return vec![];
        }
        let mut dropped = original;
        dropped.insert(".metadata.dropped", program::dropped_annotation(id, reason, &error));
        vec![(Some("dropped".to_string()), vec![dropped])]
    }
}

impl Counter {
    /// The counter's increment for one event as an event (name, kind, tags), or none when
    /// the event lacks the field.
    fn of(&self, event: &Event) -> Option<Event> {
        event.get(&self.field)?;
        let name = match &self.namespace {
            Some(namespace) => format!("{namespace}_{}", self.name),
            None => self.name.clone(),
        };
        let tags: serde_json::Map<_, _> =
            self.tags.iter().map(|(tag, template)| (tag.clone(), render(template, event).into())).collect();
        Some(Event::new(Value::from(serde_json::json!({"name": name, "kind": "counter", "value": 1.0, "tags": tags}))))
    }
}

impl Sink {
    /// The record a Kafka sink makes of an event (Vector v0.50.0, src/sinks/kafka/
    /// request_builder.rs): its topic template rendered; its key from key_field; its value
    /// as the codec writes it, `json` the event (no metadata) and `text` its `message`
    /// alone; its headers the strings of the object at headers_key.
    pub fn kafka_record(&self, event: &Event) -> KafkaRecord {
        assert_eq!(self.kind, "kafka", "not a kafka sink");
        let topic = render(config::text(&self.options, "topic").expect("a kafka sink has a topic"), event);
        let key = config::text(&self.options, "key_field").map(|field| match event.get(field) {
            Some(Value::Bytes(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
            Some(other) => other.to_string(),
            None => String::new(),
        });
        let codec = self.options.get("encoding").and_then(|encoding| encoding.get("codec")).and_then(Yaml::as_str);
        let value = match codec {
            Some("json") => event.to_json().to_string(),
            // TextSerializer: the message coerced to bytes; nothing when there is none.
            Some("text") => match event.get(".message") {
                Some(Value::Bytes(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
            other => panic!("vrl-check plays the json and text codecs, not {other:?}"),
        };
        let payload = serde_json::from_str(&value).unwrap_or(serde_json::Value::Null);
        let headers = match config::text(&self.options, "headers_key").and_then(|field| event.get(field)) {
            None => BTreeMap::new(),
            Some(Value::Object(headers)) => headers
                .iter()
                .map(|(name, value)| match value {
                    Value::Bytes(bytes) => (name.to_string(), String::from_utf8_lossy(bytes).into_owned()),
                    other => panic!("header {name} is {other}: Vector would leave it out with a KafkaHeaderExtractionError"),
                })
                .collect(),
            Some(other) => panic!("headers_key holds {other}, not an object: Vector would send no headers"),
        };
        KafkaRecord { topic, key, value, payload, headers }
    }
}

/// A Vector template: each `{{ path }}` replaced by that field of the event.
pub fn render(template: &str, event: &Event) -> String {
    let field = Regex::new(r"\{\{\s*([^}]+?)\s*\}\}").unwrap();
    field
        .replace_all(template, |caps: &regex::Captures<'_>| match event.get(&caps[1]) {
            Some(Value::Bytes(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
            Some(other) => other.to_string(),
            None => panic!("template {template}: the event has no {}", &caps[1]),
        })
        .into_owned()
}

/// A remap's program, from its `file` (resolved against `root`) or its own `source`.
fn remap(id: &str, options: &Mapping, root: &Path) -> Result<Remap, String> {
    let (program, origin) = match (config::text(options, "file"), config::text(options, "source")) {
        (Some(file), None) => (program::compile_file(&root.join(file))?.0, file.to_string()),
        (None, Some(source)) => {
            let origin = format!("the source of transform {id}");
            (program::compile(source, &origin)?, origin)
        }
        _ => return Err(format!("remap {id}: one of file and source, as Vector requires")),
    };
    Ok(Remap {
        origin,
        program,
        drop_on_abort: config::flag(options, "drop_on_abort", true),
        drop_on_error: config::flag(options, "drop_on_error", false),
        reroute_dropped: config::flag(options, "reroute_dropped", false),
    })
}

fn route(id: &str, options: &Mapping) -> Result<Transform, String> {
    let table = options.get("route").and_then(Yaml::as_mapping).ok_or(format!("route {id}: no route table"))?;
    let mut routes = Vec::new();
    for (name, condition) in table {
        let name = name.as_str().ok_or(format!("route {id}: a route name is not a string"))?;
        let source = condition_source(condition).ok_or(format!("route {id}.{name}: not a VRL condition"))?;
        routes.push((name.to_string(), program::compile(&source, &format!("route {id}.{name}"))?));
    }
    Ok(Transform::Route { routes, reroute_unmatched: config::flag(options, "reroute_unmatched", true) })
}

/// A VRL condition's source: a string (Vector's shorthand) or `{type: vrl, source: ...}`.
pub fn condition_source(condition: &Yaml) -> Option<String> {
    match condition {
        Yaml::String(source) => Some(source.clone()),
        Yaml::Mapping(m) if config::text(m, "type").unwrap_or("vrl") == "vrl" => config::text(m, "source").map(str::to_string),
        _ => None,
    }
}

fn log_to_metric(id: &str, options: &Mapping) -> Result<Transform, String> {
    let metrics = options.get("metrics").and_then(Yaml::as_sequence).ok_or(format!("log_to_metric {id}: no metrics"))?;
    let mut counters = Vec::new();
    for metric in metrics {
        let metric = metric.as_mapping().ok_or(format!("log_to_metric {id}: a metric is not a mapping"))?;
        if config::text(metric, "type") != Some("counter") {
            return Err(format!("log_to_metric {id}: vrl-check plays counters only"));
        }
        let field = config::text(metric, "field").ok_or(format!("log_to_metric {id}: a metric without field"))?;
        let tags = metric
            .get("tags")
            .and_then(Yaml::as_mapping)
            .map(|tags| tags.iter().filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string()))).collect())
            .unwrap_or_default();
        counters.push(Counter {
            field: field.to_string(),
            name: config::text(metric, "name").unwrap_or(field).to_string(),
            namespace: config::text(metric, "namespace").map(str::to_string),
            tags,
        });
    }
    Ok(Transform::LogToMetric { counters })
}
