"""The pipeline's facts under schema/ as the tooling reads them: its topics, how the job
keeps time, and the job's latency rollups in ClickHouse."""
import json

from iopipe.migrate import tables_fed_by
from iopipe.paths import REPO, SCHEMA

# Every topic Kafka must have: the agents', the stream job's and those the job passes accepted agent records on to.
TOPICS_JSON = json.loads((REPO / "schema" / "topics.json").read_text())
# The topic of each record schema; then the topics the job passes accepted agent records on
# to (the same schemas: never map a schema through both).
RECORD_TOPICS = TOPICS_JSON["topics"]
TOPICS = RECORD_TOPICS + TOPICS_JSON["accepted"]
# How the job keeps time (window lengths, allowed disorder, idleness, ...): the demo, the
# benchmarks and the tests read it here.
PIPELINE = json.loads((REPO / "schema" / "pipeline.json").read_text())
# Which I/Os the agent sends as events by default: the synthetic fleets sample as it does.
SAMPLING = json.loads((REPO / "schema" / "sampling.json").read_text())
# The job's first windows: the detectors judge these, and the longer ones are summed from them.
BASE_WINDOW_S = PIPELINE["window_s"][0]

# The job's latency rollups in ClickHouse, a minute, an hour and a day: the tables the
# Kafka tables of io.latency.v1 fill.
LATENCY_ROLLUPS = tuple(tables_fed_by("io.latency.v1"))


def _clock_fields():
    """Per record schema, its wall-clock fields: those the schema bounds below by 10^18 ns
    (earlier is seconds or milliseconds mistaken for ns), or whose entries it bounds so (a
    batch's arrays). Durations have no such bound."""
    fields = {}
    for path in (SCHEMA / "records").glob("*.schema.json"):
        properties = json.loads(path.read_text())["properties"]
        fields[path.name.removesuffix(".schema.json")] = tuple(
            name for name, spec in properties.items()
            if spec.get("minimum", 0) >= 10**18 or spec.get("items", {}).get("minimum", 0) >= 10**18)
    return fields


CLOCK_FIELDS = _clock_fields()


def clock_times(record):
    """Every wall-clock time a record holds, ns since the epoch."""
    values = (record[field] for field in CLOCK_FIELDS[record["schema"]] if field in record)
    return [t for value in values for t in (value if isinstance(value, list) else [value])]


def moved_in_time(record, shift_ns):
    """The record with each of its wall-clock times moved by `shift_ns`, its durations as they were."""
    def moved(value):
        return [v + shift_ns for v in value] if isinstance(value, list) else value + shift_ns
    return {**record, **{field: moved(record[field]) for field in CLOCK_FIELDS[record["schema"]] if field in record}}
