"""A disk's latency heatmap as a standalone SVG picture, from the disk dashboard's own
heatmap panel SQL: time on x, log2 µs latency buckets on y (slow at the top), the number
of I/Os as colour, as Brendan Gregg draws latency heatmaps. Tickets and alerts link to it
where Grafana is out of reach.

    rows = clickhouse(heatmap_sql(host, disk, from_s, to_s, interval_s) + " FORMAT JSONEachRow")
    picture = svg(rows, f"{host}/{disk} device latency")
"""
import json
import math
from datetime import datetime
from html import escape

from iopipe.dashboards import macros
from iopipe.paths import REPO

# The generated disk dashboard (a test keeps it equal to what generate.py makes): read as
# JSON, so a service drawing the picture needs neither Grafana's SDK nor the generator.
DISK_DASHBOARD = REPO / "dashboards" / "json" / "iopipe-disk.json"

CELL_W, CELL_H = 8, 14
LEFT, TOP, RIGHT, BOTTOM = 70, 40, 20, 50
EMPTY_W, EMPTY_H = 480, 160
LIGHT, DARK = (255, 237, 160), (189, 0, 38)  # few I/Os .. the most I/Os of any cell


def panel_sql():
    """The disk view's heatmap panel SQL, as the generated dashboard carries it."""
    board = json.loads(DISK_DASHBOARD.read_text())
    return next(t["rawSql"] for p in board["panels"] if p["type"] == "heatmap" for t in p["targets"])


def heatmap_sql(host, disk, from_s, to_s, interval_s):
    """The heatmap panel's SQL for one disk and time range, macros expanded as Grafana would
    (the disk view's variables hold one value each: a string, not a list)."""
    return macros.expand(panel_sql(), from_s, to_s, interval_s, {"host": host, "disk": disk})


def latency_label(low_us):
    for unit, scale in (("s", 1_000_000), ("ms", 1000)):
        if low_us >= scale:
            return f"{low_us / scale:g} {unit}"
    return f"{low_us:g} µs"


def colour(fraction):
    """Light to dark as `fraction` (0..1] grows: every channel falls monotonically."""
    return "#" + "".join(f"{round(a + (b - a) * fraction):02x}" for a, b in zip(LIGHT, DARK))


def cells(rows):
    """(times, buckets, {(time, bucket_low_us): ios}) of the rows' non-empty cells."""
    counts = {}
    for row in rows:
        t = datetime.fromisoformat(str(row["time"]))
        for key, value in row.items():
            if key != "time" and int(value) > 0:
                counts[(t, int(key))] = int(value)
    times = sorted({t for t, _ in counts})
    buckets = sorted({b for _, b in counts})
    return times, buckets, counts


def no_io(title):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{EMPTY_W}" height="{EMPTY_H}" font-family="sans-serif">'
            f'<rect width="100%" height="100%" fill="#ffffff"/>'
            f'<text x="{EMPTY_W // 2}" y="30" text-anchor="middle" font-size="14">{escape(title)}</text>'
            f'<text x="{EMPTY_W // 2}" y="{EMPTY_H // 2 + 10}" text-anchor="middle" font-size="16" fill="#666">'
            "no I/O in this time range</text></svg>\n")


def svg(rows, title):
    """The heatmap of `rows` (the heatmap SQL's rows as ClickHouse's JSONEachRow gives them)."""
    times, present, counts = cells(rows)
    if not counts:
        return no_io(title)
    step_s = min((b - a).total_seconds() for a, b in zip(times, times[1:])) if len(times) > 1 else 1
    columns = round((times[-1] - times[0]).total_seconds() / step_s) + 1
    # Every log2 bucket between the fastest and slowest seen, so the y axis has no jumps.
    buckets = [2 ** i for i in range(int(math.log2(present[0])), int(math.log2(present[-1])) + 1)]
    width, height = LEFT + columns * CELL_W + RIGHT, TOP + len(buckets) * CELL_H + BOTTOM
    most = max(counts.values())
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="#ffffff"/>',
             f'<text x="{width // 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
             f'<text x="{width // 2}" y="30" text-anchor="middle" fill="#666">I/Os per cell, darkest {most}; '
             f'{step_s:g} s columns</text>']
    for (t, low_us), ios in sorted(counts.items()):
        x = LEFT + round((t - times[0]).total_seconds() / step_s) * CELL_W
        y = TOP + (len(buckets) - 1 - buckets.index(low_us)) * CELL_H
        fill = colour(math.log1p(ios) / math.log1p(most))
        parts.append(f'<rect class="cell" x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{fill}">'
                     f"<title>{t:%H:%M:%S} {escape(latency_label(low_us))}+: {ios} I/Os</title></rect>")
    for i, low_us in enumerate(buckets):
        y = TOP + (len(buckets) - 1 - i) * CELL_H + CELL_H - 3
        parts.append(f'<text x="{LEFT - 4}" y="{y}" text-anchor="end">{escape(latency_label(low_us))}</text>')
    axis_y = TOP + len(buckets) * CELL_H
    parts.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{LEFT + columns * CELL_W}" y2="{axis_y}" stroke="#333"/>')
    for label, x, anchor in ((f"{times[0]:%Y-%m-%d %H:%M:%S}", LEFT, "start"),
                             (f"{times[-1]:%H:%M:%S}", LEFT + columns * CELL_W, "end")):
        parts.append(f'<text x="{x}" y="{axis_y + 14}" text-anchor="{anchor}">{label}</text>')
    parts.append(f'<text x="{LEFT + columns * CELL_W // 2}" y="{axis_y + 32}" text-anchor="middle">time</text>')
    parts.append(f'<text x="12" y="{TOP + len(buckets) * CELL_H // 2}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {TOP + len(buckets) * CELL_H // 2})">latency (log2 buckets)</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)
