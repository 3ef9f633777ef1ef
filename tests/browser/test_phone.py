"""On a 375 px wide phone no page scrolls sideways: wide code scrolls inside its own block."""

from __future__ import annotations

import pytest
from browsing import ALL_PAGES, PHONE

# The page and furo's boxes around the text: none may be wider than the screen (furo's content
# box would otherwise scroll sideways by itself, even when the page does not).
BOXES_JS = """
() => [['page', document.scrollingElement], ...['.main', '.content']
  .map(s => [s, document.querySelector(s)])]
  .filter(([, e]) => e && e.scrollWidth > e.clientWidth)
  .map(([s, e]) => `${s} is ${e.scrollWidth} px wide in ${e.clientWidth} px`)
"""
# Elements of the content that stick out of the screen, to name in a failure.
WIDE_JS = """
width => [...document.querySelectorAll('.content *')]
  .filter(e => e.getBoundingClientRect().right > width + 1)
  .filter(e => !e.parentElement.closest('pre, .table-wrapper, mjx-container'))
  .slice(0, 5)
  .map(e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`
    + ` (${Math.round(e.getBoundingClientRect().right)} px)`)
"""
# Code and output blocks: how they overflow, and whether a wide one can take the focus.
PRE_JS = """
() => [...document.querySelectorAll('article pre')].map(pre => ({
  overflow: getComputedStyle(pre).overflowX,
  wide: pre.scrollWidth > pre.clientWidth,
  focusable: pre.tabIndex >= 0,
  right: pre.getBoundingClientRect().right,
}))
"""


@pytest.mark.parametrize("name", ALL_PAGES)
def test_no_sideways_scrolling_on_a_phone(phone_tab, site, name: str) -> None:
    phone = phone_tab
    phone.goto(site.url(name), wait_until="load")
    if phone.evaluate("() => !!window.MathJax?.startup?.promise"):
        phone.evaluate("MathJax.startup.promise")
    width = phone.evaluate("document.scrollingElement.scrollWidth")
    wide = phone.evaluate(BOXES_JS)
    assert width <= PHONE["width"] and not wide, (
        f"{name} on a {PHONE['width']} px phone: page {width} px wide, {wide}; "
        f"sticking out: {phone.evaluate(WIDE_JS, PHONE['width'])}"
    )
    for i, pre in enumerate(phone.evaluate(PRE_JS)):
        assert pre["overflow"] in ("auto", "scroll"), f"block {i} of {name} does not scroll"
        assert pre["right"] <= PHONE["width"] + 1, f"block {i} of {name} sticks out"
        if pre["wide"]:
            assert pre["focusable"], f"block {i} of {name} scrolls but takes no keyboard focus"
