"""bench-fleet's count of ClickHouse inserts (iopipe/bench/scale.py's Inserts), from what
system.parts shows before and after a size ran."""
from iopipe.bench import scale


class Parts:
    """system.parts as one replica shows it, changed between reads."""

    def __init__(self, *reads):
        self.reads = list(reads)

    def json_rows(self, _sql):
        return self.reads.pop(0)


def part(table, partition, block, parts, rows):
    return {"table": table, "partition_id": partition, "block": str(block), "parts": str(parts), "rows": str(rows)}


def test_inserts_are_the_block_numbers_each_partition_took_and_a_new_partition_counts_from_block_0(monkeypatch):
    before = [part("windows", "20261128", 100, 7, 5_000), part("health", "20261128", 3, 1, 40)]
    # The new partition's blocks 0 to 9: ten inserts.
    after = [part("windows", "20261128", 130, 9, 35_000), part("windows", "20261129", 9, 4, 10_000),
             part("health", "20261128", 3, 1, 40)]
    inserts = scale.Inserts.__new__(scale.Inserts)
    inserts.client = Parts(after)
    inserts.before = {(row["table"], row["partition_id"]): row for row in before}
    monkeypatch.setattr(scale.time, "monotonic", lambda: 20.0)
    inserts.started = 0.0
    seen = inserts.since_start()
    assert seen == {"windows": {"inserts": 40, "rows": 40_000, "most_parts": 9, "per_s": 2.0, "rows_per_insert": 1_000}}
    rows = scale.insert_rows(seen)
    assert "windows 2.00/s × 1,000" in rows[0] and rows[1].endswith("| windows 2.00/s / windows 1,000 / 9 |")
