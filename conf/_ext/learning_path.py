"""The index's learning path: the book's reading order, in parts, as one list::

    :::{learning-path} The book
    # One GPU
    use-gpu: Put tensors and models on a device and copy between devices.
    hardware: How fast processors, memory and links are.
    # Several GPUs
    multiple-gpus: Train one network on several GPUs by hand.
    :::

A ``# title`` line starts a part; each other line is ``page: what it teaches``. The directive
writes one table per part (each page with what it teaches, the time it takes to read and the
GPUs its full run wants, the last two taken from the page itself) and the book's numbered,
hidden table of contents (a ``toctree`` whose caption is the directive's argument), so the
order of the pages is written once and a page cannot be in the book without its row.

The reading time is counted from the page's source in this language (prose and code, rounded up
to five minutes); the GPUs are its front matter ``gpus:`` (what ``--require-gpus`` checks). Both
change with the page, so the index depends on each page and is read again when one changes.
"""

import math
import re
from pathlib import Path

from docutils import nodes
from languages import CHINESE_CHARACTER, CHINESE_CHARACTERS_PER_WORD
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

from front_matter import gpus_wanted
from list_table import list_table

WORDS_PER_MINUTE = 200  # English prose and code; Chinese text counted in words of English
CJK = re.compile(CHINESE_CHARACTER)
WORD = re.compile(r"[A-Za-z0-9_]+")


def reading_minutes(text: str) -> int:
    """Minutes to read a page's source, front matter left out, rounded up to five.

    >>> reading_minutes("word " * 1000), reading_minutes("字" * 3600)
    (5, 10)
    """
    body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    words = len(WORD.findall(body)) + len(CJK.findall(body)) / CHINESE_CHARACTERS_PER_WORD
    minutes = words / WORDS_PER_MINUTE
    return max(5, 5 * math.ceil(minutes / 5))


class LearningPath(SphinxDirective):
    """``{learning-path} caption``: ``# part`` lines and ``page: what it teaches`` lines."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        parts = self.parts()
        result: list[nodes.Node] = []
        for title, pages in parts:
            if title:
                result.append(nodes.rubric(title, title, classes=["learning-path-part"]))
            rows = [self.row(page, summary) for page, summary in pages]
            header = (_("Page"), _("What you will learn"), _("Reading time"), _("GPUs (full run)"))
            result += self.parse_text_to_nodes(list_table([header, *rows], "learning-path"))
        every_page = [page for _title, pages in parts for page, _summary in pages]
        toctree = ["```{toctree}", f":caption: {self.arguments[0]}", ":numbered:"]
        toctree += [":maxdepth: 2", ":hidden:", "", *every_page, "```"]
        return result + self.parse_text_to_nodes("\n".join(toctree))

    def parts(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """``(part title, [(page, summary), ...])`` in reading order; the title of pages
        listed before the first ``#`` line is empty."""
        parts: list[tuple[str, list[tuple[str, str]]]] = []
        for line in filter(str.strip, self.content):
            if line.startswith("#"):
                parts.append((line.lstrip("#").strip(), []))
                continue
            page, colon, summary = (part.strip() for part in line.partition(":"))
            if not colon or not Path(self.env.doc2path(page)).is_file():
                raise self.error(
                    f"learning-path: '# part title' or 'page: what it teaches', got {line!r}"
                )
            if not parts:
                parts.append(("", []))
            parts[-1][1].append((page, summary))
        if not parts or not any(pages for _title, pages in parts):
            raise self.error("learning-path lists no page")
        return parts

    def row(self, page: str, summary: str) -> tuple[str, str, str, str]:
        """The table row of ``page``: its link, ``summary``, reading time and GPUs wanted."""
        path = Path(self.env.doc2path(page))
        self.env.note_dependency(str(path))
        minutes = reading_minutes(path.read_text(encoding="utf-8"))
        gpus = str(gpus_wanted(path) or _("none"))
        return (f"{{doc}}`{page}`", summary, _("{n} min").format(n=minutes), gpus)


def setup(app):
    app.add_directive("learning-path", LearningPath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
