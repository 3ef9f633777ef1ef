"""On a 375 px wide phone no page scrolls sideways: wide code scrolls inside its own block.

What is wide differs by machine (its outputs, the numbers glued into the prose, its fonts), so
besides every page as built, one page is checked with the widest content any machine could
give it, injected into the browser: the layout must hold for that too.
"""

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
  .filter(e => !e.parentElement.closest(
    'pre, .table-wrapper, .text_html, .katex-display, .katex-mathml'))
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
  font: parseFloat(getComputedStyle(pre).fontSize),
}))
"""
# Text under 12 px is what Lighthouse's legible-font audit counts against a page on a phone (it
# fails once that is 40% of the text, as the profiling page's tables were).
LEGIBLE_PX = 12


# Another machine's fonts and outputs make a line a few pixels wider than here: zh/hardware fit
# 375 px here and was 381 px wide on another machine (MathJax, which sized an unbreakable formula
# by the fonts it found there). Every page must also fit the narrowest phone in use, 320 px:
# what fits that here has room to spare at 375 px on any machine.
NARROWEST = 320


def fits(page, name: str, width: int) -> None:
    """The page and furo's boxes are no wider than a ``width`` px screen."""
    page.set_viewport_size({"width": width, "height": PHONE["height"]})
    scroll_width = page.evaluate("document.scrollingElement.scrollWidth")
    wide = page.evaluate(BOXES_JS)
    assert scroll_width <= width and not wide, (
        f"{name} on a {width} px phone: page {scroll_width} px wide, {wide}; "
        f"sticking out: {page.evaluate(WIDE_JS, width)}"
    )


@pytest.mark.parametrize("name", ALL_PAGES)
def test_no_sideways_scrolling_on_a_phone(phone_tab, site, name: str) -> None:
    phone = phone_tab
    phone.set_viewport_size(PHONE)
    phone.goto(site.url(name), wait_until="load")
    fits(phone, name, PHONE["width"])
    fits(phone, name, NARROWEST)
    phone.set_viewport_size(PHONE)
    for i, pre in enumerate(phone.evaluate(PRE_JS)):
        assert pre["overflow"] in ("auto", "scroll"), f"block {i} of {name} does not scroll"
        assert pre["right"] <= PHONE["width"] + 1, f"block {i} of {name} sticks out"
        assert pre["font"] >= LEGIBLE_PX, f"block {i} of {name} is set in {pre['font']} px"
        if pre["wide"]:
            assert pre["focusable"], f"block {i} of {name} scrolls but takes no keyboard focus"


# Content as wide as another machine's outputs could make it, into each kind of block a page
# has: a paragraph with a long inline literal, a long glued number and a long word; a line of a
# cell's output; an HTML table a cell printed; a table of the page; display and inline math.
WIDEN_JS = """
() => {
  const article = document.querySelector('article');
  const long = 'x'.repeat(120);
  const p = document.createElement('p');
  p.innerHTML = '<code class="docutils literal notranslate"><span class="pre">'
    + 'torch.backends.cuda.matmul.' + long + '</span></code> and '
    + '<span class="pasted-text">' + '1,234,567,890'.repeat(8) + '</span> '
    + '<a href="#">https://example.org/' + long + '</a> ' + long;
  article.append(p);
  const pre = article.querySelector('.cell_output pre');
  pre.append('\\n' + 'output '.repeat(80));
  const output = document.createElement('div');
  output.className = 'cell_output docutils container';
  output.innerHTML = '<div class="output text_html"><table><tr>'
    + '<td>column</td>'.repeat(60) + '</tr></table></div>';
  pre.closest('.cell').append(output);
  const cell = article.querySelector('.table-wrapper td');
  cell.append(' ' + long);
  // A formula in the cell: KaTeX keeps its MathML in an absolutely positioned box.
  cell.insertAdjacentHTML('beforeend', ' <span class="math notranslate nohighlight">'
    + '<span class="katex"><span class="katex-mathml"><math><mi>' + long + '</mi></math>'
    + '</span><span class="katex-html" aria-hidden="true">x</span></span></span>');
  const math = document.createElement('div');
  math.className = 'math notranslate nohighlight';
  math.innerHTML = '<span class="katex-display"><span class="katex"><span class="katex-html">'
    + '<span class="base" style="width: 2000px">x</span></span></span></span>';
  article.append(math);
  const inline = document.createElement('p');
  inline.innerHTML = '<span class="math notranslate nohighlight"><span class="katex">'
    + '<span class="katex-html">'
    + '<span class="base">x<sub>1</sub> + </span>'.repeat(40) + '</span></span></span>';
  article.append(inline);
  return [pre, output, cell, math, inline].every(e => e.isConnected);
}
"""


def test_a_page_holds_whatever_a_machine_makes_wide(phone, site) -> None:
    """Widen a page that has outputs and a table as any machine could: it still fits the phone."""
    page = next(
        name
        for name in ALL_PAGES
        if 'class="cell_output' in (site.folder / f"{name}.html").read_text("utf-8")
        and "table-wrapper" in (site.folder / f"{name}.html").read_text("utf-8")
    )
    phone.goto(site.url(page), wait_until="load")
    assert phone.evaluate(WIDEN_JS), f"{page} lacks a block the test widens"
    fits(phone, f"{page} (widened)", PHONE["width"])
