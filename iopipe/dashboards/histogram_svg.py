"""An anomaly's latency histogram at the moment of its verdict, as a standalone SVG: the
window's device-time log2 buckets (the evidence's `device_histogram_us`, biolatency's
"low-high" µs → count) as horizontal bars, slow buckets at the bottom as biolatency
prints them, every bucket between the fastest and the slowest drawn so gaps show.
Tickets link to it beside the heatmap.

    picture = svg(json.loads(evidence_json)["device_histogram_us"], "web-17/sdb failing_disk critical")
"""
from html import escape

from iopipe.dashboards.heatmap_svg import colour, latency_label, no_io

BAR_MAX_W, ROW_H = 320, 16
LEFT, TOP, RIGHT, BOTTOM = 150, 40, 80, 20


def buckets(histogram_us):
    """[(low_us, count)] of every log2 bucket from the fastest to the slowest non-empty one."""
    counts = {int(span.split("-")[0]): int(n) for span, n in histogram_us.items() if int(n) > 0}
    if not counts:
        return []
    low, high = min(counts), max(counts)
    # Bucket i holds [2^i, 2^(i+1)) µs; bucket 0 everything below 2 µs, so its low edge is 0.
    edges = [0] + [2 ** i for i in range(1, 63)]
    return [(edge, counts.get(edge, 0)) for edge in edges if low <= edge <= high]


def svg(histogram_us, title):
    rows = buckets(histogram_us)
    if not rows:
        return no_io(title)
    most = max(n for _, n in rows)
    width, height = LEFT + BAR_MAX_W + RIGHT, TOP + len(rows) * ROW_H + BOTTOM
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="#ffffff"/>',
             f'<text x="{width // 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
             f'<text x="{width // 2}" y="30" text-anchor="middle" fill="#666">device time of the window\'s I/Os, '
             f'{sum(n for _, n in rows)} in all</text>']
    for i, (low_us, n) in enumerate(rows):
        y = TOP + i * ROW_H
        bar_w = round(BAR_MAX_W * n / most)
        parts.append(f'<text x="{LEFT - 6}" y="{y + ROW_H - 4}" text-anchor="end">{escape(latency_label(low_us))}+</text>')
        parts.append(f'<rect class="bar" x="{LEFT}" y="{y + 2}" width="{bar_w}" height="{ROW_H - 4}" '
                     f'fill="{colour(n / most)}"><title>{escape(latency_label(low_us))}+: {n} I/Os</title></rect>')
        parts.append(f'<text x="{LEFT + bar_w + 4}" y="{y + ROW_H - 4}">{n}</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)
