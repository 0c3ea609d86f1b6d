"""The heatmap picture: one cell per non-empty (interval, bucket), darker for more I/Os,
slow buckets above fast ones, and a plain "no I/O" picture for an empty range."""
import re
import xml.etree.ElementTree as ElementTree

from iopipe.dashboards import generate, heatmap_svg, macros

SVG = "{http://www.w3.org/2000/svg}"
# Rows as ClickHouse's JSONEachRow gives them: 64-bit counts quoted, empty buckets 0.
ROWS = [{"time": "2026-11-21 10:00:00", "1": "0", "4": "10", "1024": "3", "16777216": "2"},
        {"time": "2026-11-21 10:01:00", "1": "0", "4": "1", "1024": "0", "16777216": "0"},
        {"time": "2026-11-21 10:03:00", "1": "0", "4": "0", "1024": 40, "16777216": "0"}]


def cells(picture):
    root = ElementTree.fromstring(picture)
    return [(float(r.get("x")), float(r.get("y")), r.get("fill"), r.find(f"{SVG}title").text)
            for r in root.iter(f"{SVG}rect") if r.get("class") == "cell"]


def ios(cell):
    return int(re.search(r": (\d+) I/Os", cell[3]).group(1))


def darkness(fill):
    return -sum(int(fill[i:i + 2], 16) for i in (1, 3, 5))


def test_one_cell_per_non_empty_interval_and_bucket():
    assert sorted(ios(c) for c in cells(heatmap_svg.svg(ROWS, "web-17/sdb"))) == [1, 2, 3, 10, 40]


def test_colour_darkens_with_the_count():
    by_count = sorted(cells(heatmap_svg.svg(ROWS, "web-17/sdb")), key=ios)
    shades = [darkness(c[2]) for c in by_count]
    assert shades == sorted(shades) and shades[0] < shades[-1]


def test_slow_buckets_sit_above_fast_ones_and_time_runs_right_with_its_gaps():
    placed = {(c[3].split(":")[0] + ":" + c[3].split(":")[1], c[3].split()[1]): c for c in cells(heatmap_svg.svg(ROWS, "t"))}
    fast, slow = placed[("10:00", "4")], placed[("10:00", "16.7772")]
    assert slow[1] < fast[1] and slow[0] == fast[0]
    first, gap_after = placed[("10:01", "4")], placed[("10:03", "1.024")]
    assert gap_after[0] - first[0] == 2 * (first[0] - fast[0])  # the empty 10:02 keeps its column


def test_axis_labels_and_escaped_title():
    picture = heatmap_svg.svg(ROWS, "<disk & co>")
    assert "&lt;disk &amp; co&gt;" in picture
    for label in ("4 µs", "1.024 ms", "16.7772 s", "2026-11-21 10:00:00", "latency (log2 buckets)"):
        assert label in picture


def test_no_rows_and_only_empty_buckets_say_no_io():
    for rows in ([], [{"time": "2026-11-21 10:00:00", "1": "0", "2": 0}]):
        picture = heatmap_svg.svg(rows, "web-17/sdb")
        ElementTree.fromstring(picture)
        assert cells(picture) == [] and "no I/O in this time range" in picture


def test_the_sql_is_the_disk_panels_for_one_disk():
    generated = generate.as_dict(generate.disk_board())
    assert heatmap_svg.panel_sql() == next(t["rawSql"] for p in generated["panels"] if p["type"] == "heatmap"
                                           for t in p["targets"])
    sql = heatmap_svg.heatmap_sql("web-17", "sdb", 1000, 4600, 30)
    assert sql == macros.expand(heatmap_svg.panel_sql(), 1000, 4600, 30, {"host": "web-17", "disk": "sdb"})
    assert "decodeURLComponent('web-17')" in sql and "decodeURLComponent('sdb')" in sql
    assert "toDateTime(1000)" in sql and ", 30) * 30)" in sql
