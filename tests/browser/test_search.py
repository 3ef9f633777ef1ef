"""Sphinx's search page, in the browser, ranks the right page first (Chinese words via jieba)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

FIRST_HITS = [
    ("en", "device", "use-gpu"),
    ("zh", "显存", "memory"),  # the page titled 显存都去哪儿了 (before it, use-gpu)
    ("zh", "张量", "use-gpu"),  # not the glossary's 张量核心 or 张量并行
    ("en", "warp", "glossary"),  # a term of the glossary, exactly: its definition first
    ("zh", "线程束", "glossary"),
]


def search(page, site, lang: str, query: str) -> list[str]:
    """Result page names, best first, once the search has finished."""
    page.goto(site.url(f"{lang}/search.html?q={quote(query)}"), wait_until="load")
    # The summary line is written when the search has finished.
    page.wait_for_function(
        "() => (document.querySelector('#search-results .search-summary')?.textContent ?? '')"
        ".trim().length > 0",
        timeout=15_000,
    )
    hrefs = page.eval_on_selector_all(
        "#search-results ul.search > li > a", "links => links.map(a => a.getAttribute('href'))"
    )
    return [href.split("#")[0].split("?")[0].removesuffix(".html") for href in hrefs]


@pytest.mark.parametrize(("lang", "query", "first"), FIRST_HITS)
def test_search_lists_the_right_page_first(desktop, site, lang, query, first) -> None:
    results = search(desktop, site, lang, query)
    assert results, f"no result for {query!r} in {lang}"
    assert results[0] == first, f"{query!r} in {lang}: {results}"


def test_search_finds_nothing_for_a_word_no_page_has(desktop, site) -> None:
    assert search(desktop, site, "en", "xylophone") == []
