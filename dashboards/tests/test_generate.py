"""The committed dashboard JSON is what the generator makes, and every query in it is
made only of macros the expander (and so the integration test) knows."""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402
import macros  # noqa: E402


def test_committed_json_is_up_to_date():
    committed = (HERE / "json" / f"{generate.CONFIG['uid']}.json").read_text()
    assert committed == generate.render(), "run `python dashboards/generate.py`"


def test_every_query_expands_fully_for_all_and_for_a_selection():
    board = json.loads(generate.render())
    queries = macros.panel_queries(board)
    assert len(queries) == sum(len(p["series"]) for p in generate.CONFIG["panels"]) + 1
    for _, sql in queries:
        macros.expand(sql, 0, 60, 10, selected={})
        macros.expand(sql, 0, 60, 10, selected={"host": ["web-17"], "disk": ["sdb", "sdc"]})


def test_a_selection_filters_and_all_does_not():
    sql = "SELECT 1 WHERE $__conditionalAll(host IN (${host:singlequote}), $host)"
    assert macros.expand(sql, 0, 1, 1, {}) == "SELECT 1 WHERE 1=1"
    assert macros.expand(sql, 0, 1, 1, {"host": ["a", "b"]}) == "SELECT 1 WHERE host IN ('a','b')"
