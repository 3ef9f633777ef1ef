"""Page weight of the built site: pages stay light, and so do the plots cells draw.

What a page loads is weighed in the browser; what stays on disk is weighed from the files.
"""

from __future__ import annotations

import re
import statistics
from html.parser import HTMLParser
from pathlib import Path

import pytest
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


# What a page loads, its own figures aside (HTML, styles, scripts, fonts), in bytes: a phone on a
# slow network gets it in seconds. MathJax alone was 1.2 MB; KaTeX's typeset HTML and stylesheet
# with the few fonts a page's math uses add tens of KB.
PAGE_WEIGHT = 500_000
# The search page also loads the search index, which holds the words of every page and so grows
# with the site (zh: 298 KB, 81 KB gzipped, with 35 pages a language): it is weighed on its own.
SEARCH_INDEX = 400_000
# A script in the <head> without async or defer stops the page from showing until it has run.
BLOCKING_SCRIPT = 20_000
# Every response of a page, with its size; the page's own figures are the images under _images
# (figures of docs/img and the plots cells drew).
LOADED_JS = """
() => [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]
  .map(e => [e.name, e.encodedBodySize])
"""
BLOCKING_JS = """
() => [...document.head.querySelectorAll('script[src]')]
  .filter(s => !s.async && !s.defer && s.type !== 'module')
  .map(s => s.src)
"""


def weigh(context, url: str) -> tuple[dict[str, int], list[str]]:
    """What a browser ``context`` with an empty cache loads for ``url`` (each address and its
    bytes), and the render-blocking scripts of its <head>."""
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.evaluate("document.fonts.ready.then(() => true)")  # fonts come after the styles
        page.wait_for_load_state("networkidle")
        return dict(page.evaluate(LOADED_JS)), page.evaluate(BLOCKING_JS)
    finally:
        context.close()


@pytest.mark.parametrize("name", ALL_PAGES)
def test_page_loads_at_most_500_kb_besides_its_figures(browser, site, name: str) -> None:
    loaded, blocking = weigh(browser.new_context(), site.url(name))
    weight = {url: size for url, size in loaded.items() if "/_images/" not in url}
    index = {url: weight.pop(url) for url in list(weight) if "/searchindex.js" in url}
    assert sum(index.values()) <= SEARCH_INDEX, f"{name}'s search index: {index}"
    total = sum(weight.values())
    heaviest = sorted(weight.items(), key=lambda item: -item[1])[:5]
    assert total <= PAGE_WEIGHT, f"{name} loads {total:,} bytes besides figures: {heaviest}"
    heavy = [f"{url} ({loaded[url]:,} bytes)" for url in blocking if loaded[url] > BLOCKING_SCRIPT]
    assert not heavy, f"{name} waits for scripts over {BLOCKING_SCRIPT:,} bytes: {heavy}"


def test_weighing_sees_a_heavy_blocking_script(browser, site) -> None:
    """The weighing above catches what MathJax was: a page that waits for a script of 1.2 MB."""
    page = next(name for name in ALL_PAGES if name.endswith("/index"))
    html = (SITE / f"{page}.html").read_text("utf-8")
    heavy = html.replace("</head>", '<script src="_static/heavy.js"></script></head>', 1)
    context = browser.new_context()
    context.route(site.url(page), lambda route: route.fulfill(body=heavy, content_type="text/html"))
    context.route("**/heavy.js", lambda route: route.fulfill(body="//" + "x" * 1_200_000))
    loaded, blocking = weigh(context, site.url(page))
    assert sum(loaded.values()) > PAGE_WEIGHT, loaded
    assert [url for url in blocking if loaded[url] > BLOCKING_SCRIPT], (blocking, loaded)
