"""The site serves everything itself: no request leaves 127.0.0.1, and math shows offline.

Every page of both languages is loaded (and the root index.html, which sends a reader to a
language); every request the browser makes is recorded. Scripts, styles, fonts, the icon and
KaTeX's fonts must all come from the site, and every one of them must be found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from browsing import ALL_PAGES, HTML_LANG, SITE

MATH = re.compile(r'class="math[ "]')


@dataclass
class Recorder:
    """A browser context that records requests leaving the site and requests that fail."""

    base: str
    outside: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def attach(self, context) -> None:
        context.on("request", self.on_request)
        context.on("response", self.on_response)
        context.on("requestfailed", self.on_failed)

    def on_request(self, request) -> None:
        if not request.url.startswith((self.base + "/", "data:", "blob:", "about:")):
            self.outside.append(request.url)

    def on_failed(self, request) -> None:
        # A page that navigates away while it is still loading (the root index does so by
        # design) may see its own document request reported as aborted: not a missing file,
        # which shows up as an error status in on_response.
        if request.failure == "net::ERR_ABORTED" and request.is_navigation_request():
            return
        # Nor is the icon, which Chromium fetches after the page and abandons when the next page
        # is opened at once (a missing icon is a 404, in on_response).
        if request.failure == "net::ERR_ABORTED" and request.url.endswith("/favicon.svg"):
            return
        self.failed.append(f"{request.failure} {request.url}")

    def on_response(self, response) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    def check(self, what: str) -> None:
        assert not self.outside, f"{what} asks outside the site for:\n" + "\n".join(
            sorted(set(self.outside))
        )
        assert not self.failed, f"{what} misses:\n" + "\n".join(self.failed)


@pytest.fixture(scope="module")
def recorded(browser, site):
    """A page whose requests, over all the pages it visits, are recorded."""
    context = browser.new_context()
    recorder = Recorder(site.base)
    recorder.attach(context)
    page = context.new_page()
    yield page, recorder
    context.close()


@pytest.mark.parametrize("name", ALL_PAGES)
def test_page_loads_everything_from_the_site(recorded, site, name: str) -> None:
    page, recorder = recorded
    recorder.outside.clear()
    recorder.failed.clear()
    page.goto(site.url(name), wait_until="load")
    recorder.check(name)  # before waiting for anything that an outside request would stall
    # KaTeX typeset the math while the site was built: no TeX is left, and its fonts load.
    if MATH.search((SITE / f"{name}.html").read_text("utf-8")):
        math = page.locator("article .math").count()
        assert math > 0
        assert page.locator("article .math .katex").count() == math, "math left as TeX"
        assert page.locator("article .katex-error").count() == 0, "KaTeX reports an error"
        font = page.evaluate(
            "getComputedStyle(document.querySelector('article .katex')).fontFamily"
        )
        assert font.startswith("KaTeX_Main"), f"{name}: KaTeX's stylesheet is missing ({font})"
    page.evaluate("document.fonts.ready.then(() => true)")
    bad_fonts = page.evaluate(
        "[...document.fonts].filter(f => f.status === 'error').map(f => f.family)"
    )
    recorder.check(name)
    assert not bad_fonts, f"{name}: fonts failed to load: {bad_fonts}"


@pytest.mark.parametrize(("locale", "lang"), [("en-US", "en"), ("zh-CN", "zh"), ("fr-FR", "en")])
def test_root_index_sends_the_reader_to_a_language(browser, site, locale, lang) -> None:
    context = browser.new_context(locale=locale)
    recorder = Recorder(site.base)
    recorder.attach(context)
    page = context.new_page()
    try:
        page.goto(site.url("index.html"), wait_until="load")
        page.wait_for_url(site.url(f"{lang}/index"))
        assert page.evaluate("document.documentElement.lang") == HTML_LANG[lang]
        page.wait_for_load_state("networkidle")
    finally:
        context.close()
    recorder.check(f"index.html ({locale})")
