"""The batched agent records (io.interval.v1, io.eventbatch.v1) are made from the records
they batch: their schemas and examples as generated, and a batch unfolds to its records."""
import json

import pytest

from iopipe import record_batches as rb


@pytest.mark.parametrize("path", sorted(rb.generated_files()), ids=lambda p: p.name)
def test_the_generated_files_are_as_generated_now(path):
    assert path.read_text() == rb.generated_files()[path], "run python -m iopipe.record_batches and commit what it wrote"


def test_an_interval_unfolds_to_its_sample_and_histograms():
    sample = next(s for s in rb._examples(rb.DISKSTATS) if (s["host"], s["disk"]) == ("web-17", "sdb"))
    histogram = next(h for h in rb._examples(rb.HIST) if (h["host"], h["disk"]) == ("web-17", "sdb"))
    histograms = [histogram, {**histogram, "latency": "queue", "errors": 2}]
    interval = rb.fold_interval(sample, histograms)
    assert interval["hist_latency"] == ["device", "queue"] and interval["hist_errors"] == [0, 2]
    unfolded = rb.unfold(json.loads(json.dumps(interval)))
    assert unfolded[0] == sample
    assert unfolded[1:] == [{**h, "errors": h.get("errors", 0)} for h in histograms]


def test_a_quiet_interval_is_its_sample_alone():
    sample = rb._examples(rb.DISKSTATS)[0]
    interval = rb.fold_quiet_interval(sample, sample["ts_ns"] - 10**9, sample["ts_ns"])
    assert rb.unfold(interval) == [sample]


def test_histograms_of_two_spans_or_two_disks_are_no_interval():
    sample = rb._examples(rb.DISKSTATS)[0]
    h = {**rb._examples(rb.HIST)[0], "host": sample["host"], "disk": sample["disk"]}
    with pytest.raises(ValueError):
        rb.fold_interval(sample, [h, {**h, "end_ns": h["end_ns"] + 1}])
    with pytest.raises(ValueError):
        rb.fold_interval(sample, [{**h, "disk": sample["disk"] + "x"}])


def test_events_unfold_as_sent_and_a_long_run_goes_in_several_batches():
    event = rb._examples(rb.EVENT)[0]
    events = [{**event, "sector": i, "timed_from": "dispatch"} for i in range(rb.EVENTS_PER_BATCH + 3)]
    batches = rb.fold_events(events)
    assert [len(b["op"]) for b in batches] == [rb.EVENTS_PER_BATCH, 3]
    assert [e for b in batches for e in rb.unfold(b)] == events
    assert rb.fold_events([]) == []


def test_records_of_other_schemas_unfold_to_themselves():
    record = rb._examples(rb.EVENT)[0]
    assert rb.unfold(record) == [record]


def test_a_disks_interval_batches_into_one_interval_and_its_events():
    sample = next(s for s in rb._examples(rb.DISKSTATS) if (s["host"], s["disk"]) == ("web-17", "sdb"))
    first = {**sample, "ts_ns": sample["ts_ns"] - 10**9}
    histogram = next(h for h in rb._examples(rb.HIST) if (h["host"], h["disk"]) == ("web-17", "sdb"))
    events = [e for e in rb._examples(rb.EVENT) if (e["host"], e["disk"]) == ("web-17", "sdb")]
    records = [histogram, sample, *events, first]
    batches = rb.batched(records)
    assert [b["schema"] for b in batches] == [rb.INTERVAL, rb.INTERVAL, rb.EVENT_BATCH]
    assert batches[0]["ts_ns"] == first["ts_ns"] and batches[0]["hist_op"] == []
    assert batches[1]["ts_ns"] == sample["ts_ns"] and batches[1]["hist_count"] == [histogram["count"]]
    defaults = {rb.EVENT: {"timed_from": "dispatch"}, rb.HIST: {"errors": 0}}
    as_sent = [{**defaults.get(r["schema"], {}), **r} for r in records]
    unfolded = [r for b in batches for r in rb.unfold(b)]
    assert sorted(json.dumps(r, sort_keys=True) for r in unfolded) == sorted(json.dumps(r, sort_keys=True) for r in as_sent)


def test_a_scenarios_stream_batches_and_unfolds_to_itself():
    from iopipe.synthetic import scenarios
    records = scenarios.generate("S2")
    stream = rb.batched_stream(records)
    assert len(stream) < len(records) / 4
    assert {r["schema"] for r in stream} <= {rb.INTERVAL, rb.EVENT_BATCH, rb.HIST}
    defaults = {rb.EVENT: {"timed_from": "dispatch"}, rb.HIST: {"errors": 0}}
    as_sent = [{**defaults.get(r["schema"], {}), **r} for r in records]
    unfolded = [part for r in stream for part in rb.unfold(r)]
    assert sorted(json.dumps(r, sort_keys=True) for r in unfolded) == sorted(json.dumps(r, sort_keys=True) for r in as_sent)
