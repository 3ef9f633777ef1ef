"""The language switcher leads from every page to the same page in the other language and back."""

from __future__ import annotations

import pytest
from browsing import HTML_LANG, OTHER, PAGES, PHONE

SWITCH = "a.sidebar-languages-other"


def switch_language(page, site) -> str:
    """Click the visible switcher; return the page name it led to."""
    page.locator(SWITCH).click()
    page.wait_for_load_state("domcontentloaded")
    return site.page_of(page.url)


def test_both_languages_have_the_same_pages() -> None:
    assert PAGES["en"] == PAGES["zh"]


@pytest.mark.parametrize("name", [f"en/{page}" for page in PAGES["en"]])
def test_switcher_leads_to_the_counterpart_and_back(desktop_tab, site, name: str) -> None:
    """English to Chinese and back: both switchers of the pair, one page load each."""
    desktop = desktop_tab
    lang, page_name = name.split("/", 1)
    other = OTHER[lang]
    desktop.goto(site.url(name), wait_until="domcontentloaded")
    assert desktop.locator(SWITCH).is_visible(), "the switcher is not visible on a desktop"

    assert switch_language(desktop, site) == f"{other}/{page_name}"
    assert desktop.evaluate("document.documentElement.lang") == HTML_LANG[other]
    assert switch_language(desktop, site) == name
    assert desktop.evaluate("document.documentElement.lang") == HTML_LANG[lang]


@pytest.mark.parametrize("name", ["en/use-gpu", "zh/use-gpu", "zh/index"])
def test_phone_reader_reaches_the_switcher_in_the_drawer(phone, site, name: str) -> None:
    """On a phone the sidebar is a drawer: the menu button opens it, and the switcher is there."""
    lang, page_name = name.split("/", 1)
    phone.goto(site.url(name), wait_until="load")
    switch = phone.locator(SWITCH)
    assert not switch.is_visible() or not in_viewport(switch), "the drawer should start closed"

    phone.locator("label.nav-overlay-icon").click()
    switch.wait_for(state="visible")
    phone.wait_for_function(  # the drawer slides in
        "s => { const r = document.querySelector(s).getBoundingClientRect();"
        " return r.left >= 0 && r.right <= innerWidth; }",
        arg=SWITCH,
    )
    assert in_viewport(switch)
    assert switch_language(phone, site) == f"{OTHER[lang]}/{page_name}"


def in_viewport(locator) -> bool:
    box = locator.bounding_box()
    return (
        box is not None
        and box["x"] >= 0
        and box["x"] + box["width"] <= PHONE["width"]
        and box["y"] >= 0
        and box["y"] + box["height"] <= PHONE["height"]
    )
