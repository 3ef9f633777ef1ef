"""No page types a number that its executed cells produced: such numbers are glued.

Outputs differ between machines (a GPU runner, a laptop, even two CPUs with other instruction
sets), so a number copied from one build's output into the prose is wrong on the next. The
prose takes it with myst-nb's glue instead (``{glue:text}`name:.2f```), which the site renders
inside ``span.pasted-text``. This test reads each executed page as a reader sees it, takes the
prose without code, outputs and glued values, and fails on any number there that looks measured
(a decimal with two or more places such as ``0.63``, or a figure of four or more digits such as
``1,234``) and also appears in the page's outputs, unless the code wrote it: a number in the
page's code cells or in gpukit's source (a setting, a data-sheet constant) is an input, not a
result.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browsing import LANGUAGES, site_pages

# A measured-looking number: two or more decimal places, or four or more digits (grouped or not).
MEASURED = re.compile(r"(?<![\w.])(\d+\.\d{2,}|\d{1,3}(?:,\d{3})+|\d{4,})(?![\w])")
GPUKIT = Path(__file__).resolve().parents[2] / "src" / "gpukit"

# The prose of the article: everything but code cells (source and outputs, this build's and
# those recorded on other machines), code, math and glued values.
PROSE_JS = """
() => {
  const article = document.querySelector("article").cloneNode(true);
  for (const node of article.querySelectorAll(
      "div.cell, div.highlight, pre, code, .math, .pasted-text, .pasted-inline, "
      + ".provenance, .provenance-notice, details.recorded")) {
    node.remove();
  }
  return article.innerText;
}
"""


def numbers(text: str) -> set[str]:
    return {match.replace(",", "") for match in MEASURED.findall(text)}


def executed_pages(lang: str) -> list[str]:
    return [
        page
        for page in site_pages(lang)
        if page not in ("index", "api", "about") and not page.startswith("api/")
    ]


def inputs(tab) -> set[str]:
    """Numbers the code wrote: the open page's code cells and gpukit's source."""
    code = "\n".join(tab.locator("div.cell_input").all_text_contents())
    source = "\n".join(path.read_text("utf-8") for path in GPUKIT.glob("*.py"))
    return numbers(code) | numbers(source)


def typed_output_numbers(tab) -> set[str]:
    """Numbers that the open page's prose types and its outputs print, not taken from code."""
    outputs = "\n".join(tab.locator("div.cell_output").all_text_contents())
    return (numbers(tab.evaluate(PROSE_JS)) & numbers(outputs)) - inputs(tab)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_page_types_a_number_from_its_outputs(desktop_tab, site, lang: str) -> None:
    pages = executed_pages(lang)
    assert len(pages) >= 7, pages
    typed = {}
    for page in pages:
        desktop_tab.goto(site.url(f"{lang}/{page}"), wait_until="domcontentloaded")
        if found := typed_output_numbers(desktop_tab):
            typed[page] = sorted(found)
    assert not typed, (
        f"{lang}: numbers in the prose that an output printed; glue them from the cell "
        f"(myst-nb glue) instead of typing them: {typed}"
    )


def test_a_typed_output_number_is_found(desktop_tab, site) -> None:
    """The check above can fail: a page with an output's number typed into a new paragraph."""
    desktop_tab.goto(site.url("en/use-gpu"), wait_until="domcontentloaded")
    outputs = "\n".join(desktop_tab.locator("div.cell_output").all_text_contents())
    planted = sorted(numbers(outputs) - inputs(desktop_tab))[0]
    desktop_tab.evaluate(
        "n => { const p = document.createElement('p'); p.textContent = `It took ${n} s.`;"
        " document.querySelector('article').append(p); }",
        planted,
    )
    assert planted in typed_output_numbers(desktop_tab)
