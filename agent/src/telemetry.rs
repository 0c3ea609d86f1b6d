//! The agent's own counters: what it saw, sent, sampled and lost. Sent every interval as
//! an io.agent.v1 record and served in Prometheus text format on the metrics endpoint.

use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const AGENT_SCHEMA: &str = "io.agent.v1";

/// One counter: its name (also its key in io.agent.v1), value and what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub name: &'static str,
    pub value: u64,
    pub help: &'static str,
}

impl Counter {
    pub fn new(name: &'static str, value: u64, help: &'static str) -> Self {
        Counter { name, value, help }
    }
}

#[derive(Debug, Serialize)]
pub struct AgentRecord<'a> {
    pub schema: &'static str,
    pub host: &'a str,
    pub ts_ns: u64,
    pub started_ns: u64,
    pub version: &'static str,
    pub tracing: &'static str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: &'a BTreeMap<String, String>,
    pub counters: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub untraced_by_disk: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lost_restart_by_disk: BTreeMap<String, u64>,
}

/// Prometheus text exposition format 0.0.4: every counter as iopipe_agent_<name>_total,
/// labelled with the host.
pub fn prometheus_text(host: &str, counters: &[Counter]) -> String {
    let host = escape_label(host);
    let mut text = String::new();
    for counter in counters {
        let metric = format!("iopipe_agent_{}_total", counter.name);
        text.push_str(&format!("# HELP {metric} {}\n# TYPE {metric} counter\n", counter.help));
        text.push_str(&format!("{metric}{{host=\"{host}\"}} {}\n", counter.value));
    }
    text
}

fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Serves the latest counters to whoever asks (GET /metrics), from a thread of its own.
pub struct MetricsEndpoint {
    latest: Arc<Mutex<String>>,
    pub address: String,
}

impl MetricsEndpoint {
    pub fn listen(address: &str) -> Result<Self> {
        let listener = TcpListener::bind(address)
            .with_context(|| format!("listening for metrics on {address} (is the port taken? pass another --metrics-listen)"))?;
        let bound = listener.local_addr()?.to_string();
        let latest = Arc::new(Mutex::new(String::new()));
        let served = latest.clone();
        std::thread::Builder::new().name("metrics".into()).spawn(move || {
            for stream in listener.incoming().flatten() {
                // One scrape at a time; a slow client cannot stall the agent, only the scrapes.
                let _ = answer(stream, &served);
            }
        })?;
        Ok(MetricsEndpoint { latest, address: bound })
    }

    pub fn publish(&self, text: String) {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = text;
    }
}

fn answer(stream: TcpStream, latest: &Mutex<String>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes the answer.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let (status, content_type, body) = if request_line.starts_with("GET ") && (path == "/metrics" || path == "/") {
        ("200 OK", "text/plain; version=0.0.4; charset=utf-8", latest.lock().unwrap_or_else(|e| e.into_inner()).clone())
    } else {
        ("404 Not Found", "text/plain; charset=utf-8", "only GET /metrics is served\n".to_string())
    };
    let mut stream = stream;
    write!(stream, "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn counters_render_as_prometheus_text_with_help_and_type() {
        let text = prometheus_text("web\"17", &[Counter::new("events_sent", 12, "events sent")]);
        assert_eq!(
            text,
            "# HELP iopipe_agent_events_sent_total events sent\n# TYPE iopipe_agent_events_sent_total counter\n\
             iopipe_agent_events_sent_total{host=\"web\\\"17\"} 12\n"
        );
    }

    fn get(address: &str, path: &str) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn the_endpoint_serves_what_was_last_published() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0").unwrap();
        endpoint.publish("a 1\n".into());
        endpoint.publish("a 2\n".into());
        let response = get(&endpoint.address, "/metrics");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("\r\n\r\na 2\n"), "{response}");
        assert!(get(&endpoint.address, "/other").starts_with("HTTP/1.1 404"));
    }
}
