"""The pipeline's facts under schema/ as the tooling reads them: its topics, how the job
keeps time, and the job's latency rollups in ClickHouse."""
import json

from iopipe.migrate import kafka_tables_of
from iopipe.paths import REPO

# Every topic Kafka must have: the agents', the stream job's and those the job passes accepted agent records on to.
TOPICS_JSON = json.loads((REPO / "schema" / "topics.json").read_text())
# The topic of each record schema; then the topics the job passes accepted agent records on
# to (the same schemas: never map a schema through both).
RECORD_TOPICS = TOPICS_JSON["topics"]
TOPICS = RECORD_TOPICS + TOPICS_JSON["accepted"]
# How the job keeps time (window lengths, allowed disorder, idleness, ...): the demo, the
# benchmarks and the tests read it here.
PIPELINE = json.loads((REPO / "schema" / "pipeline.json").read_text())
# The job's first windows: the detectors judge these, and the longer ones are summed from them.
BASE_WINDOW_S = PIPELINE["window_s"][0]

# The job's latency rollups in ClickHouse, a minute, an hour and a day: the tables the
# Kafka tables of io.latency.v1 fill, each named after its table.
LATENCY_ROLLUPS = tuple(table.removesuffix("_kafka") for table in kafka_tables_of("io.latency.v1"))
