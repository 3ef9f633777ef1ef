"""The pages read well on a first read: no wall of prose without code, output or figure.

A stretch of prose runs from one code cell, figure or included code to the next. Text a
first read does not meet is not counted: a collapsed ``{details}`` block, and of a
``{machine-cases}`` block all but one case (the longest is counted, as the reader sees one).
Chinese characters count as words at ``languages.CHINESE_CHARACTERS_PER_WORD`` characters a word
(the ratio of the zh pages' prose to the en pages').
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpukit_site.ext.front_matter import split_front_matter
from gpukit_site.languages import CHINESE_CHARACTER, CHINESE_CHARACTERS_PER_WORD

DOCS = Path(__file__).resolve().parents[1] / "docs"
LIMIT = 450  # "no stretch of more than ~400 words"
# The index's learning path is a list of pages, the API page a list of names and the glossary
# a list of definitions, each read on its own: not prose.
NOT_PROSE = {"index.md", "api.md", "glossary.md"}
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*(?:\{(?P<name>[\w:-]+)\})?")
BREAKS = {"code-cell", "figure", "image", "literalinclude", "glue:figure", "code-block", "math"}
COLLAPSED = {"details", "dropdown"}


def words(text: str) -> float:
    latin = len(re.findall(r"[A-Za-z0-9][\w.,'-]*", text))
    return latin + len(re.findall(CHINESE_CHARACTER, text)) / CHINESE_CHARACTERS_PER_WORD


def stretches(lines: list[str], first: int = 1) -> Iterator[tuple[float, int]]:
    """(words, line where the stretch starts) of each stretch of prose in MyST ``lines``."""
    run = 0.0
    start = first
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i].strip())
        if not opening or not (opening["name"] or opening["fence"][0] == "`"):
            run += 0 if lines[i].startswith("(") else words(lines[i])  # (label)= is no prose
            i += 1
            continue
        fence = opening["fence"]
        name = opening["name"] or "code"
        closing = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next(
            (j for j in range(i + 1, len(lines)) if closing.match(lines[j].strip())), len(lines)
        )
        body = lines[i + 1 : end]
        if name in BREAKS or name == "code":
            yield run, start
            run = 0.0
            start = first + end + 1
        elif name == "machine-cases":
            cases = re.split(r"^:{3,}\{case\}.*$", "\n".join(body), flags=re.MULTILINE)[1:]
            run += max((words(case) for case in cases), default=0)
        elif name not in COLLAPSED:  # an admonition or note: read with the text around it
            run += sum(w for w, _ in stretches(body, first + i + 1))
        i = end + 1
    yield run, start


def page_lines(path: Path) -> list[str]:
    """The page's lines, its front matter blanked (not prose, and line numbers unchanged)."""
    text = path.read_text(encoding="utf-8")
    _, body = split_front_matter(text)
    front_lines = text[: len(text) - len(body)].count("\n")
    return [""] * front_lines + body.split("\n")


PAGES = sorted(p for lang in ("en", "zh") for p in (DOCS / lang).glob("*.md"))


@pytest.mark.parametrize(
    "path", [p for p in PAGES if p.name not in NOT_PROSE], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_no_wall_of_prose(path: Path) -> None:
    longest, line = max(stretches(page_lines(path)))
    assert longest <= LIMIT, (
        f"{path.parent.name}/{path.name}: {longest:.0f} words of prose from line {line} without "
        f"a code cell, output or figure (at most {LIMIT}): split it with one, or collapse what "
        "a first read can skip into a {details} block"
    )


def test_a_wall_is_found(tmp_path: Path) -> None:
    prose = " ".join(["word"] * 300)
    page = tmp_path / "page.md"
    page.write_text(
        f"# T\n\n{prose}\n\n```{{code-cell}} ipython3\nx = 1\n```\n\n{prose}\n\n"
        f":::{{note}}\n{prose}\n:::\n\n:::{{details}} More\n{prose * 3}\n:::\n",
        encoding="utf-8",
    )
    counted = [round(w) for w, _ in stretches(page_lines(page))]
    assert counted == [301, 600]  # the note is read, the collapsed block is not
