"""The verdict's histogram picture: one bar per log2 bucket from the fastest to the
slowest, empty ones included, the longest bar for the most I/Os."""
import xml.etree.ElementTree as ElementTree

from iopipe.dashboards import histogram_svg

SVG = "{http://www.w3.org/2000/svg}"
# Two modes a revolution apart, as bimodal_retries' evidence shows them.
RETRIES = {"1024-2047": 610, "2048-4095": 250, "8192-16383": 90}


def bars(picture):
    root = ElementTree.fromstring(picture)
    return [(float(r.get("width")), r.find(f"{SVG}title").text) for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]


def test_every_bucket_between_the_modes_is_drawn_in_order():
    drawn = bars(histogram_svg.svg(RETRIES, "web-17/sdb bimodal_retries warning"))
    assert [title for _, title in drawn] == ["1.024 ms+: 610 I/Os", "2.048 ms+: 250 I/Os", "4.096 ms+: 0 I/Os",
                                             "8.192 ms+: 90 I/Os"]
    widths = [w for w, _ in drawn]
    assert widths[0] == histogram_svg.BAR_MAX_W and widths[2] == 0 and widths[1] > widths[3] > 0


def test_the_sub_microsecond_bucket_and_an_empty_histogram():
    assert histogram_svg.buckets({"0-1": 3, "4-7": 1}) == [(0, 3), (2, 0), (4, 1)]
    assert "no I/O" in histogram_svg.svg({}, "web-17/sdb")
