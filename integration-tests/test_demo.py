"""`make demo`'s tour on the test stack: the fault disk turns retrying then failing under
the real agent, and the tour prints, read back from ClickHouse, each window's iostat line
and histogram, both anomalies with their evidence, the health changes with the ticket,
the SQL to see the same, and the ticket Alertmanager sent with its heatmap."""
import uuid

import pytest

from iopipe import demo

pytestmark = pytest.mark.stack


def test_the_tour_shows_a_disk_retrying_then_failing_and_why(pipeline, tickets, agent_bin, capsys):
    watch = demo.tour(pipeline.ports, pipeline.reader, f"demo-{uuid.uuid4().hex[:6]}", agent_bin, tickets)
    printed = capsys.readouterr().out
    found = {(a["disk"], a["kind"], a["severity"]) for a in watch.found}
    assert {(watch.disk, "bimodal_retries", "warning"), (watch.disk, "failing_disk", "critical")} <= found, printed
    others = [(a["disk"], a["kind"], a["severity"], a["summary"]) for a in watch.found if a["disk"] != watch.disk]
    assert not others, f"nothing on the machine's own disks: {others}"
    for shown in ("usecs               : count     distribution", "iostat: r/s",
                  "modes: ", "because: service time",
                  f"HEALTH of {watch.disk}: healthy -> suspect", f"HEALTH of {watch.disk}: suspect -> failing",
                  "FROM iopipe.anomalies FINAL", "DiskFailing firing since", "kind=failing_disk",
                  "latency heatmap (linked from the ticket", "Jira issue STOR-"):
        assert shown in printed, f"the tour did not print {shown!r}:\n{printed}"
    assert printed.index("bimodal_retries (warning)") < printed.index("failing_disk (critical)"), printed
