"""Page weight of the built site: pages stay light, and so do the plots cells draw."""

from __future__ import annotations

import re
import statistics
from html.parser import HTMLParser
from pathlib import Path

from browsing import ALL_PAGES, SITE

MEDIAN_PAGE = 80_000  # bytes of HTML, shared static files (CSS, JS, fonts) not counted
# Bytes, each SVG an executed cell draws: a training curve takes about 4 KB, a roofline with a
# dozen labelled operations on three roofs about 11 KB (gpukit.roofline.plot_roofline).
PLOT_SVG = 16_000


class OutputImages(HTMLParser):
    """The src of every <img> inside a cell's output."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # how deep inside a div.cell_output (0: outside)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "div" and (self.depth or "cell_output" in (attrs.get("class") or "").split()):
            self.depth += 1
        elif tag == "img" and self.depth:
            self.sources.append(attrs["src"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.depth:
            self.depth -= 1


def plots() -> dict[Path, str]:
    """Every SVG drawn by an executed cell, with the page that shows it."""
    found = {}
    for name in ALL_PAGES:
        html = SITE / f"{name}.html"
        parser = OutputImages()
        parser.feed(html.read_text("utf-8"))
        for src in parser.sources:
            if re.search(r"\.svg(\?|$)", src):
                found[(html.parent / src.split("?")[0]).resolve()] = name
    return found


def test_median_page_is_light() -> None:
    sizes = [(SITE / f"{name}.html").stat().st_size for name in ALL_PAGES]
    median = statistics.median(sizes)
    assert median <= MEDIAN_PAGE, f"median HTML page {median:.0f} bytes > {MEDIAN_PAGE}"


def test_each_plot_is_a_small_svg() -> None:
    assert plots(), "no plot found: the executed pages draw several"
    heavy = [
        f"{path.name} ({path.stat().st_size} bytes) on {page}"
        for path, page in plots().items()
        if path.stat().st_size > PLOT_SVG
    ]
    assert not heavy, f"plot SVGs over {PLOT_SVG} bytes:\n" + "\n".join(heavy)
