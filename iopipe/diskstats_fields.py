"""The /proc/diskstats counters in the kernel's column order, read from the record schema
(schema/records/io.diskstats.v1.schema.json lists them in that order): one source."""
import json

from iopipe.paths import SCHEMA

_SCHEMA = SCHEMA / "records" / "io.diskstats.v1.schema.json"
_PROPERTIES = json.loads(_SCHEMA.read_text())["properties"]

COUNTERS = tuple(name for name, spec in _PROPERTIES.items() if spec.get("$ref") == "#/$defs/counter")
CUMULATIVE = tuple(name for name in COUNTERS if name != "in_flight")

assert len(COUNTERS) == 17 and COUNTERS[0] == "reads_completed" and COUNTERS[-1] == "flush_time_ms", COUNTERS
