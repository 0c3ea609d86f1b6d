"""Every generated dashboard validates against the JSON Schema of Grafana's own dashboard
and panel types for the pinned release (npm @grafana/schema, see grafana_schema.py), and
the check does reject what Grafana would not read."""
import json

import pytest

from iopipe.dashboards import generate, grafana_schema


@pytest.mark.parametrize("uid", sorted(generate.BOARDS))
def test_dashboard_matches_grafanas_schema(uid):
    assert grafana_schema.errors(generate.as_dict(generate.BOARDS[uid]())) == []


def test_the_schema_rejects_unknown_fields_and_wrong_values():
    board = generate.as_dict(generate.disk_board())
    board["refreshRate"] = "30s"
    board["panels"][0]["options"]["rowsFrame"]["layout"] = "sideways"
    board["panels"][1]["fieldConfig"]["defaults"]["custom"] = {"lineWidth": "thick"}
    del board["annotations"]["list"][0]["iconColor"]
    found = "\n".join(grafana_schema.errors(board))
    for expected in ("'refreshRate' was unexpected", "'sideways' is not one of", "'thick' is not of type 'number'",
                     "'iconColor' is a required property"):
        assert expected in found


def test_an_unknown_panel_plugin_is_reported():
    board = json.loads(generate.render("iopipe-fleet"))
    board["panels"][0]["type"] = "barchartt"
    assert any("barchartt" in e for e in grafana_schema.errors(board))
