"""No page shows an asterisk that was meant as emphasis.

CommonMark opens emphasis at ``*`` only where the character before it is a space or punctuation
or the one after it is not punctuation. A role starts with ``{``, which is punctuation, so
``一个*{term}`设备网格 <device mesh>`*`` (a Chinese character, then the role) renders both
asterisks as text; English prose, with a space before the asterisk, does not meet this. The
test parses each page's prose with MyST's own parser and fails on an asterisk left in its text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from gpukit_site.ext.front_matter import read_front_matter
from gpukit_site.languages import MYST_EXTENSIONS

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*/*.md"))
PARSER = create_md_parser(MdParserConfig(enable_extensions=set(MYST_EXTENSIONS)), RendererHTML)
CODE_FENCE = re.compile(r"^(`{3,}|~{3,})")
# A colon fence's first and last lines and its options: what is left of it is MyST prose
# (a case, a solution), which Sphinx parses when it reaches the directive.
COLON_FENCE_LINE = re.compile(r"^\s*(:{3,}.*|:[\w-]+:.*)$")


def prose(text: str) -> str:
    """``text`` without code blocks (code cells with their options, listings) and with colon
    fences opened, so that a directive's prose is parsed as the page's."""
    kept = []
    fence = None
    for line in text.splitlines():
        opened = CODE_FENCE.match(line)
        if fence:
            if line.strip() == fence:
                fence = None
        elif opened:
            fence = opened.group(1)
        elif not COLON_FENCE_LINE.match(line):
            kept.append(line)
    return "\n".join(kept)


def stray_asterisks(text: str) -> list[str]:
    """The text (not code, math or roles) of each paragraph or cell where an asterisk is left."""
    found = []
    for token in PARSER.parse(prose(text)):
        for child in token.children or []:
            if child.type == "text" and "*" in child.content:
                found.append(token.content)
                break
    return found


@pytest.mark.parametrize("path", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_emphasis_renders(path: Path) -> None:
    _, body = read_front_matter(path)
    found = stray_asterisks(body)
    assert not found, (
        f"{path.relative_to(DOCS)}: emphasis that renders as asterisks (MyST opens * only after a "
        "space or punctuation, or before a character that is not punctuation, such as the { of "
        "a role): drop the emphasis or move it inside the role's text\n" + "\n".join(found)
    )


def test_a_stray_asterisk_is_found() -> None:
    assert stray_asterisks("分布在一个*{term}`设备网格 <device mesh>`*上。")
    assert not stray_asterisks("分布在一个{term}`设备网格 <device mesh>`上，是*前端*。")
    assert not stray_asterisks("A *{term}`device mesh <device mesh>`* and $a * b$.")
    assert not stray_asterisks(
        "```{code-cell} ipython3\nx = 2 * 3\n```\n:::{details} Solution\nok\n:::"
    )
