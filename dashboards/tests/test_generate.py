"""The committed dashboards and alert rules are what the generator makes, and every query
in them is made only of macros the expander (and so the integration test) knows: a
variable only through percentencode, whose text cannot end a literal."""
import json

import pytest

from iopipe.dashboards import generate, macros
from iopipe.dashboards.config import IOSTAT


def test_committed_files_are_up_to_date():
    for path, text in generate.outputs().items():
        assert path.exists() and path.read_text() == text, f"{path} is stale: run `python3 -m iopipe.dashboards.generate`"


def test_every_query_expands_fully_for_all_and_for_a_selection():
    for uid in generate.BOARDS:
        board = json.loads(generate.render(uid))
        for _, sql in macros.all_queries(board):
            macros.expand(sql, 0, 60, 10, selected={})
            macros.expand(sql, 0, 60, 10, selected={"host": ["web-17"], "disk": ["sdb", "sdc"], "kind": ["saturation"]})


def test_the_iostat_dashboard_keeps_its_panels_and_the_disk_view_reuses_them():
    iostat = json.loads(generate.render(IOSTAT["uid"]))
    assert len(macros.panel_queries(iostat)) == sum(len(p["series"]) for p in IOSTAT["panels"]) + 1
    disk = json.loads(generate.render("iopipe-disk"))
    assert set(macros.panel_queries(iostat)) <= set(macros.panel_queries(disk))


def test_a_selection_filters_and_all_or_nothing_does_not():
    sql = "SELECT 1 WHERE $__conditionalAll(has(splitByChar(',', decodeURLComponent('${host:percentencode}')), host), $host)"
    for everything in ({}, {"host": []}, {"host": ""}):
        assert macros.expand(sql, 0, 1, 1, everything) == "SELECT 1 WHERE 1=1"
    assert macros.expand(sql, 0, 1, 1, {"host": ["a", "b"]}) == (
        "SELECT 1 WHERE has(splitByChar(',', decodeURLComponent('%7Ba%2Cb%7D')), host)")
    assert macros.expand(sql, 0, 1, 1, {"host": "a"}) == "SELECT 1 WHERE has(splitByChar(',', decodeURLComponent('a')), host)"


def test_percentencode_is_grafanas():
    # What Grafana's formatter gives: encodeURIComponent(v).replace(/[!'()*]/g, c => '%' + hex).
    assert {v: macros.percentencoded(v) for v in ("o'neil", "x\\') OR 1=1 --", "web-17.dc_1~", "é😀", "!*()")} == {
        "o'neil": "o%27neil", "x\\') OR 1=1 --": "x%5C%27%29%20OR%201%3D1%20--", "web-17.dc_1~": "web-17.dc_1~",
        "é😀": "%C3%A9%F0%9F%98%80", "!*()": "%21%2A%28%29"}
    assert macros.percentencoded(["a", "b"]) == macros.percentencoded("{a,b}") == "%7Ba%2Cb%7D"


def test_the_expander_refuses_quoting_formats_so_no_shipped_query_can_carry_one():
    sql = "SELECT 1 WHERE $__conditionalAll(host IN (${host:singlequote}), $host)"
    with pytest.raises(ValueError, match="unexpanded"):
        macros.expand(sql, 0, 1, 1, {"host": ["evil\\"]})


def test_time_macros_become_the_range():
    sql = "SELECT $__fromTime, $__toTime, $__timeInterval(ts) WHERE $__timeFilter(ts)"
    assert macros.expand(sql, 100, 200, 30, {}) == (
        "SELECT toDateTime(100), toDateTime(200), toStartOfInterval(toDateTime(ts), INTERVAL 30 second) "
        "WHERE ts >= toDateTime(100) AND ts <= toDateTime(200)")


def test_drill_down_links_carry_the_disk_and_the_time_range():
    fleet = json.loads(generate.render("iopipe-fleet"))
    worst = next(p for p in fleet["panels"] if p["title"].startswith("Worst"))
    url = worst["fieldConfig"]["defaults"]["links"][0]["url"]
    assert url.startswith("/d/iopipe-disk/")
    for part in ("var-host=${__data.fields.host}", "var-disk=${__data.fields.disk}", "from=${__from}", "to=${__to}"):
        assert part in url
