//! The agent's own counters: what it saw, sent, sampled and lost. Sent every interval as
//! an io.agent.v1 record and served in Prometheus text format on the metrics endpoint.

use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// Serves the latest counters to whoever asks (GET /metrics), and whether the agent's loop
/// is alive (GET /healthz: it published counters lately), each connection on a thread of
/// its own, up to MAX_CONNECTIONS at once.
pub struct MetricsEndpoint {
    latest: Arc<Latest>,
    pub address: String,
}

/// The counters last published, and when: the loop publishes every interval.
struct Latest {
    text: Mutex<(String, Instant)>,
    /// How long the loop may go without publishing before /healthz says it is stuck.
    alive_within: Duration,
}

/// Connections served at once: a scraper or two, the liveness probe and an operator's
/// curl. Idle connections beyond it are told the endpoint is busy, at once, instead of
/// queueing the next scrape (and the liveness probe) behind their deadlines.
const MAX_CONNECTIONS: usize = 8;

impl MetricsEndpoint {
    /// Listens on `address`; /healthz fails once nothing was published for `alive_within`.
    pub fn listen(address: &str, alive_within: Duration) -> Result<Self> {
        let listener = TcpListener::bind(address)
            .with_context(|| format!("listening for metrics on {address} (is the port taken? pass another --metrics-listen)"))?;
        let bound = listener.local_addr()?.to_string();
        let latest = Arc::new(Latest { text: Mutex::new((String::new(), Instant::now())), alive_within });
        let served = latest.clone();
        // Refused connections are told so by a thread of their own, so the accept loop
        // never waits on one; beyond what it has queued, they are closed at once.
        let (refuse, refused) = std::sync::mpsc::sync_channel::<TcpStream>(MAX_CONNECTIONS * 4);
        std::thread::Builder::new().name("metrics-busy".into()).spawn(move || {
            for stream in refused {
                let _ = answer_busy(stream);
            }
        })?;
        std::thread::Builder::new().name("metrics".into()).spawn(move || {
            let open = Arc::new(AtomicUsize::new(0));
            for stream in listener.incoming().flatten() {
                match Slot::take(&open) {
                    Some(slot) => serve_apart(stream, slot, served.clone()),
                    None => {
                        let _ = refuse.try_send(stream);
                    }
                }
            }
        })?;
        Ok(MetricsEndpoint { latest, address: bound })
    }

    pub fn publish(&self, text: String) {
        *self.latest.text.lock().unwrap_or_else(|e| e.into_inner()) = (text, Instant::now());
    }
}

/// How long the agent's loop may go without publishing its counters before its liveness
/// says it is stuck: ten intervals, and never less than 30 s (a slow sysfs read or a long
/// backlog of records to hand Kafka is not a reason to restart it).
pub fn alive_within(interval: Duration) -> Duration {
    (interval * 10).max(Duration::from_secs(30))
}

/// One of the MAX_CONNECTIONS places, given back when the connection it serves ends.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Option<Slot> {
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(open.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers the connection on a thread of its own; one that cannot start closes it.
fn serve_apart(stream: TcpStream, slot: Slot, latest: Arc<Latest>) {
    let _ = std::thread::Builder::new().name("metrics-scrape".into()).spawn(move || {
        let _slot = slot;
        let _ = answer(stream, &latest);
    });
}

/// The most a request's line and headers may take: a scrape needs a few hundred bytes.
const MAX_REQUEST_BYTES: u64 = 8192;
/// How long a client has to send its request, in all: a trickle of bytes cannot hold a
/// connection's place past it.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
const TEXT: &str = "text/plain; charset=utf-8";

fn answer(stream: TcpStream, latest: &Latest) -> std::io::Result<()> {
    stream.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let (status, content_type, body) = match read_request_line(&stream) {
        Ok(line) if line.starts_with("GET ") => match line.split_whitespace().nth(1) {
            Some("/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", latest.text()),
            Some("/healthz") => latest.liveness(),
            _ => ("404 Not Found", TEXT, "only GET /metrics and GET /healthz are served\n".to_string()),
        },
        Ok(_) => ("404 Not Found", TEXT, "only GET /metrics and GET /healthz are served\n".to_string()),
        Err(RequestError::TooLarge) => {
            ("431 Request Header Fields Too Large", TEXT, format!("a request of at most {MAX_REQUEST_BYTES} bytes\n"))
        }
        Err(RequestError::Io(e)) => return Err(e),
    };
    respond(&stream, status, content_type, &body)
}

/// How long a refused connection's request is read for, after its answer, before it is
/// closed: a socket closed with a request unread is reset, and the reset may reach the
/// client before the answer does.
const REFUSED_DRAIN: Duration = Duration::from_millis(100);

/// Told it is refused without its request being waited for: the answer first, then what
/// came of the request read and dropped for at most REFUSED_DRAIN.
fn answer_busy(stream: TcpStream) -> std::io::Result<()> {
    stream.set_write_timeout(Some(REFUSED_DRAIN))?;
    let body = format!("{MAX_CONNECTIONS} connections are open already; try again\n");
    respond(&stream, "503 Service Unavailable", TEXT, &body)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let drain = Deadline { stream: stream.try_clone()?, at: Instant::now() + REFUSED_DRAIN };
    std::io::copy(&mut drain.take(MAX_REQUEST_BYTES), &mut std::io::sink())?;
    Ok(())
}

fn respond(mut stream: &TcpStream, status: &str, content_type: &str, body: &str) -> std::io::Result<()> {
    write!(stream, "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

impl Latest {
    fn text(&self) -> String {
        self.text.lock().unwrap_or_else(|e| e.into_inner()).0.clone()
    }

    /// Alive while the loop publishes; the endpoint's own thread answering is not enough.
    fn liveness(&self) -> (&'static str, &'static str, String) {
        let since = self.text.lock().unwrap_or_else(|e| e.into_inner()).1.elapsed();
        if since <= self.alive_within {
            ("200 OK", TEXT, "ok\n".to_string())
        } else {
            ("503 Service Unavailable", TEXT,
             format!("no counters published for {} s (at most {} s): the agent's loop is stuck\n",
                     since.as_secs(), self.alive_within.as_secs()))
        }
    }
}

enum RequestError {
    TooLarge,
    Io(std::io::Error),
}

/// The request line, once the whole request head (line and headers, up to the blank
/// line) has arrived within MAX_REQUEST_BYTES and REQUEST_DEADLINE.
fn read_request_line(stream: &TcpStream) -> Result<String, RequestError> {
    let until = Deadline { stream: stream.try_clone().map_err(RequestError::Io)?, at: Instant::now() + REQUEST_DEADLINE };
    let mut reader = BufReader::new(until.take(MAX_REQUEST_BYTES));
    let mut request_line = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(RequestError::Io)?;
        if n == 0 || !line.ends_with('\n') {
            // The limit cut the head short, or the client closed it before its end.
            return if reader.get_ref().limit() == 0 { Err(RequestError::TooLarge) } else { Ok(request_line) };
        }
        if request_line.is_empty() {
            request_line = line.clone();
        } else if line == "\r\n" || line == "\n" {
            return Ok(request_line);
        }
    }
}

/// A stream whose every read ends by `at`: a client trickling a byte at a time cannot
/// stretch a request past it, as it would a timeout per read.
struct Deadline {
    stream: TcpStream,
    at: Instant,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
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
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(60)).unwrap();
        endpoint.publish("a 1\n".into());
        endpoint.publish("a 2\n".into());
        let response = get(&endpoint.address, "/metrics");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("\r\n\r\na 2\n"), "{response}");
        assert!(get(&endpoint.address, "/other").starts_with("HTTP/1.1 404"));
        assert!(get(&endpoint.address, "/").starts_with("HTTP/1.1 404"), "two paths only");
    }

    /// The server's end of a connection whose client sends `request` and keeps it open.
    fn served(request: &[u8]) -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.write_all(request).unwrap();
        (listener.accept().unwrap().0, client)
    }

    #[test]
    fn a_request_head_past_the_limit_is_refused_at_the_limit() {
        let mut oversized = b"GET /".to_vec();
        oversized.resize(MAX_REQUEST_BYTES as usize + 100, b'x');
        let (server, _client) = served(&oversized);
        assert!(matches!(read_request_line(&server), Err(RequestError::TooLarge)));
        let mut many_headers = b"GET /metrics HTTP/1.1\r\n".to_vec();
        while many_headers.len() <= MAX_REQUEST_BYTES as usize {
            many_headers.extend_from_slice(b"X-Padding: yes\r\n");
        }
        let (server, _client) = served(&many_headers);
        assert!(matches!(read_request_line(&server), Err(RequestError::TooLarge)));
        let (server, _client) = served(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(matches!(read_request_line(&server), Ok(line) if line == "GET /metrics HTTP/1.1\r\n"));
    }

    #[test]
    fn the_endpoint_goes_on_serving_after_an_oversized_request() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(60)).unwrap();
        endpoint.publish("a 1\n".into());
        let mut stream = TcpStream::connect(&endpoint.address).unwrap();
        // 1 MiB of request line: the endpoint stops reading at its limit, answers and closes
        // (the rest of the write may meet a reset).
        let _ = write!(stream, "GET /{} HTTP/1.1\r\n", "x".repeat(1 << 20));
        drop(stream);
        assert!(get(&endpoint.address, "/metrics").ends_with("a 1\n"));
    }

    #[test]
    fn a_request_that_never_ends_is_dropped_at_the_deadline() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(60)).unwrap();
        let started = std::time::Instant::now();
        let mut trickle = TcpStream::connect(&endpoint.address).unwrap();
        // One byte a second would keep a per-read timeout waiting for ever.
        for _ in 0..7 {
            if trickle.write_all(b"G").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        let mut rest = String::new();
        let _ = trickle.read_to_string(&mut rest);
        assert!(started.elapsed() < REQUEST_DEADLINE + Duration::from_secs(4), "{:?}", started.elapsed());
        assert!(get(&endpoint.address, "/metrics").starts_with("HTTP/1.1 200"), "serving the next scrape");
    }

    /// A connection that sends nothing and stays open.
    fn idle(address: &str) -> TcpStream {
        TcpStream::connect(address).unwrap()
    }

    #[test]
    fn idle_connections_do_not_hold_back_a_scrape() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(60)).unwrap();
        endpoint.publish("a 1\n".into());
        let _idle: Vec<TcpStream> = (0..4).map(|_| idle(&endpoint.address)).collect();
        let asked = Instant::now();
        assert!(get(&endpoint.address, "/metrics").ends_with("a 1\n"));
        // One at a time, the scrape would wait out each idle connection's deadline.
        assert!(asked.elapsed() < REQUEST_DEADLINE, "{:?}", asked.elapsed());
    }

    #[test]
    fn beyond_its_connections_the_endpoint_says_it_is_busy_and_serves_again_once_they_close() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(60)).unwrap();
        endpoint.publish("a 1\n".into());
        let open: Vec<TcpStream> = (0..MAX_CONNECTIONS).map(|_| idle(&endpoint.address)).collect();
        // Accepted in the order they came: the next one finds every place taken.
        let busy = get(&endpoint.address, "/metrics");
        assert!(busy.starts_with("HTTP/1.1 503"), "{busy}");
        drop(open);
        // Each closed connection ends its thread (an empty request is answered 404).
        let served = (0..50).find_map(|_| {
            let response = get(&endpoint.address, "/metrics");
            if response.starts_with("HTTP/1.1 200") {
                Some(response)
            } else {
                std::thread::sleep(Duration::from_millis(100));
                None
            }
        });
        assert!(served.is_some_and(|r| r.ends_with("a 1\n")));
    }

    #[test]
    fn the_liveness_path_fails_once_the_loop_stops_publishing() {
        let endpoint = MetricsEndpoint::listen("127.0.0.1:0", Duration::from_secs(2)).unwrap();
        assert!(get(&endpoint.address, "/healthz").starts_with("HTTP/1.1 200"), "alive from the start");
        std::thread::sleep(Duration::from_millis(2200));
        let stuck = get(&endpoint.address, "/healthz");
        assert!(stuck.starts_with("HTTP/1.1 503") && stuck.contains("stuck"), "{stuck}");
        assert!(get(&endpoint.address, "/metrics").starts_with("HTTP/1.1 200"), "the counters are still served");
        endpoint.publish("a 2\n".into());
        assert!(get(&endpoint.address, "/healthz").starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn the_loop_may_miss_ten_intervals_and_at_least_half_a_minute() {
        assert_eq!(alive_within(Duration::from_secs(1)), Duration::from_secs(30));
        assert_eq!(alive_within(Duration::from_secs(10)), Duration::from_secs(100));
    }
}
