"""Recorded runs of other machines (gpukit_site.ext.recorded) in a real browser: under a cell, a
closed block labelled with the machine, which opens on a click, without any script, and shows
that machine's output; About lists the recordings. The site needs one recording at least
(docs/recordings holds one, committed)."""

from __future__ import annotations

import pytest
from browsing import LANGUAGES, PAGES, SITE

SUMMARY = {"en": "Recorded on ", "zh": "运行记录："}
WITH_RECORDINGS = {
    lang: [
        p
        for p in PAGES[lang]
        if 'class="details recorded' in (SITE / lang / f"{p}.html").read_text("utf-8")
    ]
    for lang in LANGUAGES
}


def test_the_site_shows_recorded_outputs() -> None:
    assert all(WITH_RECORDINGS.values()), "no page shows a recording: is docs/recordings empty?"
    assert WITH_RECORDINGS["en"] == WITH_RECORDINGS["zh"]  # both languages, the same cells


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_recorded_output_opens_without_script(browser, site, lang: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    tab = context.new_page()
    tab.goto(site.url(f"{lang}/{WITH_RECORDINGS[lang][0]}"), wait_until="load")
    block = tab.locator("details.recorded").first
    output = block.locator("pre, img").first
    assert block.locator("summary").inner_text().startswith(SUMMARY[lang])
    assert not output.is_visible()  # collapsed until the reader asks
    block.locator("summary").click()
    assert output.is_visible()
    if output.evaluate("e => e.tagName") == "IMG":
        assert output.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    else:
        assert output.inner_text().strip()
    context.close()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_about_lists_the_recordings(desktop_tab, site, lang: str) -> None:
    desktop_tab.goto(site.url(f"{lang}/{WITH_RECORDINGS[lang][0]}"), wait_until="domcontentloaded")
    summary = desktop_tab.locator("details.recorded summary").first.text_content()
    desktop_tab.goto(site.url(f"{lang}/about"), wait_until="domcontentloaded")
    assert summary.removeprefix(SUMMARY[lang]) in desktop_tab.locator("article").inner_text()
