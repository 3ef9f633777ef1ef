"""The copy button copies a cell's code: never its output, never a prompt."""

from __future__ import annotations

import re

import pytest
from browsing import ALL_PAGES, LANGUAGES, SITE

PROMPT = re.compile(r"^(>>> |\.\.\. |\$ )")
# A pasted Python session and a shell session, as Sphinx highlights them (pycon, console).
SESSIONS = """
<div class="highlight-pycon notranslate" id="test-pycon"><div class="highlight"><pre>\
<span class="gp">&gt;&gt;&gt; </span>x = torch.ones(2)
<span class="gp">&gt;&gt;&gt; </span>for i in range(2):
<span class="gp">... </span>    x += 1
<span class="gp">...</span>
<span class="gp">&gt;&gt;&gt; </span>x
<span class="go">tensor([3., 3.])</span>
</pre></div></div>
<div class="highlight-console notranslate" id="test-console"><div class="highlight"><pre>\
<span class="gp">$ </span>python3 -m nox -s docs
<span class="go">nox &gt; Session docs was successful.</span>
<span class="gp">$ </span>python3 -m http.server -d docs/_build/html
</pre></div></div>
"""
COPIED = {
    "test-pycon": "x = torch.ones(2)\nfor i in range(2):\n    x += 1\nx",
    "test-console": "python3 -m nox -s docs\npython3 -m http.server -d docs/_build/html",
}
# Pages of the site that show such sessions themselves (docstring examples, console blocks).
WITH_PROMPTS = [
    name for name in ALL_PAGES if '<span class="gp">' in (SITE / f"{name}.html").read_text("utf-8")
] or [
    pytest.param(
        None, marks=pytest.mark.skip(reason="no page shows a prompt yet (sessions added above)")
    )
]


def copy(page, block) -> str:
    """Click the copy button of ``block`` (a div.highlight's parent) and read the clipboard."""
    page.evaluate("navigator.clipboard.writeText('(nothing copied)')")
    block.locator("pre").hover()
    block.locator("button.copybtn").click()
    page.wait_for_function(
        "async () => (await navigator.clipboard.readText()) !== '(nothing copied)'"
    )
    return page.evaluate("navigator.clipboard.readText()")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_copy_button_copies_the_code_of_each_cell(desktop, site, lang: str) -> None:
    desktop.goto(site.url(f"{lang}/use-gpu"), wait_until="load")
    inputs = desktop.locator("div.cell:not(.tag_hide-cell) div.cell_input")
    assert inputs.count() > 5
    for i in range(inputs.count()):
        cell = inputs.nth(i)
        code = cell.locator("pre").inner_text().rstrip("\n")
        copied = copy(desktop, cell.locator("div.highlight").locator(".."))
        assert copied == code, f"cell {i} of {lang}/use-gpu"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_copy_button_on_outputs(desktop, site, lang: str) -> None:
    desktop.goto(site.url(f"{lang}/use-gpu"), wait_until="load")
    assert desktop.locator("div.cell_output pre").count() > 5
    assert desktop.locator("div.cell_output button.copybtn").count() == 0
    # Every code block outside the outputs has its button.
    blocks = desktop.locator("div.highlight:not(div.cell_output div.highlight)")
    assert desktop.locator("button.copybtn").count() == blocks.count()


def test_prompts_and_session_output_are_not_copied(desktop, site) -> None:
    """Pasted sessions (added to the GPUs page here) copy only their commands."""

    def add_sessions(route) -> None:
        response = route.fetch()
        html = response.text().replace("</article>", SESSIONS + "</article>", 1)
        route.fulfill(response=response, body=html)

    desktop.route("**/en/use-gpu.html", add_sessions)
    desktop.goto(site.url("en/use-gpu"), wait_until="load")
    for block_id, expected in COPIED.items():
        assert copy(desktop, desktop.locator(f"#{block_id}")) == expected


@pytest.mark.parametrize("name", WITH_PROMPTS)
def test_prompts_of_the_sites_own_sessions_are_not_copied(desktop, site, name: str) -> None:
    desktop.goto(site.url(name), wait_until="load")
    blocks = desktop.locator("div.highlight:has(span.gp)").locator("..")
    assert blocks.count() > 0, f"{name}: no block with a prompt"
    for i in range(min(blocks.count(), 10)):
        lines = blocks.nth(i).locator("pre").inner_text().splitlines()
        # copybutton keeps the lines with a prompt (without it) and the empty lines.
        commands = [
            PROMPT.sub("", line) for line in lines if PROMPT.match(line) or not line.strip()
        ]
        assert copy(desktop, blocks.nth(i)) == "\n".join(commands).rstrip("\n")
