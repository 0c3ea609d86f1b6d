"""The one config the dashboards and the alert rules are generated from: what each panel
shows, the selectors, and every threshold. Prose (runbooks, README) names these entries
instead of restating their numbers.
"""
import json

from iopipe.paths import SCHEMA

PIPELINE_JSON = SCHEMA / "pipeline.json"
# The windows the panels read: the job's first length, which its longer windows are summed
# from, so a bucket of any width sums them exactly.
BASE_WINDOW_S = json.loads(PIPELINE_JSON.read_text())["window_s"][0]


def _values_of(record, field):
    """The values the record's schema allows its field."""
    return json.loads((SCHEMA / "records" / f"{record}.schema.json").read_text())["properties"][field]["enum"]


HEALTH_STATES = _values_of("io.health.v1", "to_state")  # from healthy to failing
ANOMALY_KINDS = _values_of("io.anomaly.v1", "kind")
SEVERITIES = _values_of("io.anomaly.v1", "severity")  # from info to critical

DATASOURCE_UID = "iopipe-clickhouse"
DATASOURCE_TYPE = "grafana-clickhouse-datasource"
# Where docs/runbooks/ is served; Grafana does not expand environment variables in a
# provisioned rule's annotations, so the address is written into the rules file.
RUNBOOK_BASE_URL = "https://iopipe.example/docs/runbooks"


def weighted(value, weight):
    return f"if(sum({weight}) = 0, 0, sum({value} * {weight}) / sum({weight}))"


# What each iostat panel shows and how a bucket's value is computed from the windows.
IOSTAT = {
    "uid": "iopipe-iostat",
    "title": "iopipe / disk iostat",
    "panels": [
        {"title": "IOPS", "unit": "iops", "series": {
            "r/s": "sum(reads_completed) / sum(interval_s)",
            "w/s": "sum(writes_completed) / sum(interval_s)"}},
        {"title": "Throughput", "unit": "KiBs", "series": {
            "rkB/s": weighted("read_kib_per_s", "interval_s"),
            "wkB/s": weighted("write_kib_per_s", "interval_s")}},
        {"title": "Await (request latency incl. queue)", "unit": "ms", "series": {
            "r_await": weighted("read_await_ms", "reads_completed"),
            "w_await": weighted("write_await_ms", "writes_completed")}},
        {"title": "Average queue size (aqu-sz)", "unit": "short", "series": {
            "aqu-sz": weighted("queue_size", "interval_s")}},
        {"title": "%util (busy time; 100% is not saturation for devices that serve I/O in parallel)",
         "unit": "percent", "series": {"%util": weighted("util_pct", "interval_s")}},
    ],
    "latest_table": ["reads_per_s", "writes_per_s", "read_kib_per_s", "write_kib_per_s",
                     "read_await_ms", "write_await_ms", "read_req_kib", "write_req_kib", "queue_size", "util_pct"],
}

FLEET = {
    "uid": "iopipe-fleet",
    "title": "iopipe / fleet overview",
    "health_states": HEALTH_STATES,  # a disk with no transition is healthy
    "worst_disks": 20,
    "worst_min_ios": 100,  # fewer I/Os than this give no meaningful p99 (as the cookbook)
}

DISK = {
    "uid": "iopipe-disk",
    "title": "iopipe / disk",
    # Heatmap rows: log2 µs buckets [2^i, 2^(i+1)) for i below this; the last row also
    # holds every slower I/O, so each column counts every I/O of its interval.
    "heatmap_buckets": 25,  # 1 µs up to 2^24 µs (16.8 s) and beyond
    "heatmap_latency": "device",
    "worst_events": 20,
}

ANOMALY = {
    "uid": "iopipe-anomaly",
    "title": "iopipe / anomalies",
    "rows": 500,
}

# Severities of a detector's anomaly that page a rule; `info` findings are for dashboards.
ALERTING_SEVERITIES = SEVERITIES[SEVERITIES.index("warning"):]

# Alert rules, named <Subject><Symptom>: Host* rules carry the label host, Disk* rules host
# and disk (Alertmanager holds a host's Disk* alerts back while a Host* alert fires for it).
# `source` says where the verdict comes from: the health state machine, a detector's
# anomalies, or (no detector exists for it) the disk inventory's last record.
RULES = [
    {"name": "DiskFailing", "severity": "critical", "source": "health", "state": "failing",
     "summary": "{{ $labels.host }}/{{ $labels.disk }} is failing: replace it",
     "description": "The stream job's health state machine moved this disk to failing on its detectors' "
                    "evidence (device time far above its class with a shallow queue, I/O errors, >1 s outliers)."},
    {"name": "DiskRetrying", "severity": "warning", "source": "anomalies", "kinds": ["bimodal_retries"],
     "range_s": 3600,
     "summary": "{{ $labels.host }}/{{ $labels.disk }} retries I/Os: {{ $values.A.Value }} bimodal episode(s) in the last hour",
     "description": "Its latency has a second mode a whole number of revolutions (or several times the main "
                    "mode) above the first: the drive re-reads sectors it cannot read the first time."},
    {"name": "DiskQueueSaturated", "severity": "warning", "source": "anomalies", "kinds": ["saturation"],
     "range_s": 1800,
     "summary": "{{ $labels.host }}/{{ $labels.disk }} is saturated: latency grows with queue depth past its knee",
     "description": "Its latency over its own queue-depth-1 baseline rises with the I/Os in flight: more load "
                    "than the device can serve in parallel. %util alone never raises this."},
    {"name": "DiskSlowerThanPeers", "severity": "warning", "source": "anomalies", "kinds": ["slow_vs_peers"],
     "range_s": 6 * 3600,
     "summary": "{{ $labels.host }}/{{ $labels.disk }} is slower than its same-model peers on the host",
     "description": "Its latency stays above the fit of its same-host, same-model peers at the same throughput."},
    {"name": "HostTelemetryMissing", "severity": "critical", "source": "inventory",
     "silent_s": 300, "range_s": 86400,
     "summary": "{{ $labels.host }} has sent no disk telemetry for {{ $values.A.Value }} s",
     "description": "No diskstats sample of any of its disks reached ClickHouse: the agent, Vector, the "
                    "host or the path to Kafka is down, so its disks are not watched."},
    {"name": "HostManyDisksFailing", "severity": "critical", "source": "host_anomalies",
     "kinds": ["failing_disk"], "min_disks": 3, "range_s": 3600,
     "summary": "{{ $labels.host }}: {{ $values.A.Value }} disks look failing within an hour",
     "description": "Several disks of one host failing together points at what they share (controller, "
                    "backplane, enclosure power, cabling) more than at each disk."},
]


def _names_outside_the_schemas():
    """What the rules name that the record schemas do not allow: an anomaly kind or a health state."""
    named = [(kind, ANOMALY_KINDS) for rule in RULES for kind in rule.get("kinds", ())]
    named += [(rule["state"], HEALTH_STATES) for rule in RULES if "state" in rule]
    return sorted({name for name, allowed in named if name not in allowed})


if _names_outside_the_schemas():
    raise ValueError(f"alert rules name kinds or states no record schema allows: {_names_outside_the_schemas()}")
