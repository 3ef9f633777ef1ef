"""What browsers and search engines read from every page, checked where it does not depend on load.

Lighthouse's best-practices and SEO audits (``nox -s lighthouse`` runs them all, with the
performance score that a busy machine lowers) ask of a page: an icon that loads, no error in the
console, a description, ``hreflang`` alternates with absolute addresses. These tests ask the same
of every page of both languages, in the browser, in seconds.
"""

from __future__ import annotations

import re

import pytest
from browsing import ALL_PAGES, LANGUAGES

from gpukit_site.languages import CHINESE_CHARACTER
from gpukit_site.languages import LANGUAGES as SITE_LANGUAGES

HREFLANGS = {lang.hreflang: code for code, lang in SITE_LANGUAGES.items()}
# Where the hosted site lives: every hreflang alternate points there.
ABSOLUTE = re.compile(r"^https://[^/]+/.*")
HEAD_JS = """
() => ({
  icons: [...document.querySelectorAll('link[rel~="icon"]')].map(l => l.href),
  descriptions: [...document.querySelectorAll('meta[name="description"]')].map(m => m.content),
  alternates: [...document.querySelectorAll('link[rel="alternate"][hreflang]')]
    .map(l => [l.hreflang, l.getAttribute('href')]),
  robots: document.querySelector('meta[name="robots"]')?.content ?? '',
})
"""


@pytest.fixture(scope="module")
def watched(browser):
    """One desktop page whose console errors and failed requests are recorded, page by page."""
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    # A request the browser gave up on (the icon of a page left for the next) is no fault; a
    # missing file is, as an error status.
    page.on(
        "requestfailed",
        lambda r: errors.append(f"{r.failure} {r.url}") if r.failure != "net::ERR_ABORTED" else 0,
    )
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else 0)
    yield page, errors
    context.close()


@pytest.mark.parametrize("name", ALL_PAGES)
def test_head_names_icon_description_and_languages(watched, site, name: str) -> None:
    page, errors = watched
    errors.clear()
    page.goto(site.url(name), wait_until="load")
    head = page.evaluate(HEAD_JS)
    lang, _, path = name.partition("/")

    assert len(head["icons"]) == 1, f"{name}: icons {head['icons']}"
    icon = page.request.get(head["icons"][0])
    assert icon.ok and icon.headers["content-type"] == "image/svg+xml", f"{name}: icon {icon}"

    assert len(head["descriptions"]) == 1, f"{name}: descriptions {head['descriptions']}"
    description = head["descriptions"][0]
    assert len(description) >= (20 if lang == "zh" else 40), f"{name}: description {description!r}"
    assert "`" not in description and "{" not in description, f"{name}: {description!r}"

    alternates = dict(head["alternates"])
    assert set(alternates) == {*HREFLANGS, "x-default"}, f"{name}: alternates {alternates}"
    for hreflang, href in alternates.items():
        assert ABSOLUTE.match(href), f"{name}: hreflang {hreflang} has a relative address {href}"
    for hreflang, code in HREFLANGS.items():
        assert alternates[hreflang].endswith(f"/{code}/{path}.html"), f"{name}: {alternates}"
    assert alternates["x-default"] == alternates["en"].removesuffix(f"en/{path}.html")

    # Only the search page keeps search engines out (furo's noindex): its results are not content.
    assert ("noindex" in head["robots"]) == (path == "search"), f"{name}: robots {head['robots']}"

    page.wait_for_load_state("networkidle")
    assert not errors, f"{name}: errors in the console or failed requests: {errors}"


def test_every_language_has_the_same_pages() -> None:
    """The alternates above point at pages that exist: every page is built in each language."""
    pages = {
        lang: {p.partition("/")[2] for p in ALL_PAGES if p.startswith(lang + "/")}
        for lang in LANGUAGES
    }
    assert pages["en"] == pages["zh"], pages["en"] ^ pages["zh"]


# Each image and its alt text; a file name (one word ending in an image's extension, or a path)
# is not one.
IMAGES_JS = """
() => [...document.querySelectorAll('img')].map(i => [i.getAttribute('src'), i.getAttribute('alt')])
"""
CHINESE = re.compile(CHINESE_CHARACTER)
FILE_NAME = re.compile(r"^\S*(\.(svg|png|jpe?g|gif|webp)|/\S*)$", re.IGNORECASE)


@pytest.mark.parametrize("name", ALL_PAGES)
def test_every_image_says_what_it_shows(watched, site, name: str) -> None:
    page, _ = watched
    page.goto(site.url(name), wait_until="domcontentloaded")
    for src, alt in page.evaluate(IMAGES_JS):
        assert alt and alt.strip(), f"{name}: image {src} has no alt text"
        assert not FILE_NAME.search(alt), f"{name}: image {src} has a file name as alt: {alt!r}"
        # The page's figures and plots in its language (Sphinx's own icons, such as the module
        # index's "-", aside): Chinese pages describe in Chinese, English ones in English.
        if "_images/" in src:
            assert bool(CHINESE.search(alt)) == name.startswith("zh/"), f"{name}: {src}: {alt!r}"
