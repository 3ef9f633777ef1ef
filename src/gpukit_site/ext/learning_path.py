"""The index's learning path: the book's reading order, in parts, as one list::

    :::{learning-path} The book
    # One GPU
    use-gpu
    hardware
    # Several GPUs
    multiple-gpus
    :::

A ``# title`` line starts a part; each other line names a page. The directive writes one table
per part (each page with what it teaches, the time it takes to read and the GPUs its full run
wants, all three taken from the page itself) and the book's numbered, hidden table of contents
(a ``toctree`` whose caption is the directive's argument), so the order of the pages is written
once and a page cannot be in the book without its row.

What a page teaches is its front matter's ``summary:``, written and translated with the page; it
is also the page's ``<meta name="description">``, the text search engines show under its title.
The reading time is counted from the page's source in this language (prose and code, rounded up
to five minutes); the GPUs are its front matter ``gpus:`` (what ``--require-gpus`` checks). All
three change with the page, so the index depends on each page and is read again when one
changes.
"""

import html
import math
import re
from pathlib import Path

from docutils import nodes
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

from gpukit_site.ext.front_matter import read_front_matter
from gpukit_site.ext.list_table import list_table
from gpukit_site.languages import CHINESE_CHARACTER, CHINESE_CHARACTERS_PER_WORD

WORDS_PER_MINUTE = 200  # English prose and code; Chinese text counted in words of English
CJK = re.compile(CHINESE_CHARACTER)
WORD = re.compile(r"[A-Za-z0-9_]+")


def reading_minutes(body: str) -> int:
    """Minutes to read a page's source after its front matter, rounded up to five.

    >>> reading_minutes("word " * 1000), reading_minutes("字" * 3600)
    (5, 10)
    """
    words = len(WORD.findall(body)) + len(CJK.findall(body)) / CHINESE_CHARACTERS_PER_WORD
    minutes = words / WORDS_PER_MINUTE
    return max(5, 5 * math.ceil(minutes / 5))


class LearningPath(SphinxDirective):
    """``{learning-path} caption``: ``# part`` lines and page names."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        parts = self.parts()
        result: list[nodes.Node] = []
        for title, pages in parts:
            if title:
                result.append(nodes.rubric(title, title, classes=["learning-path-part"]))
            rows = [self.row(page) for page in pages]
            header = (_("Page"), _("What you will learn"), _("Reading time"), _("GPUs (full run)"))
            result += self.parse_text_to_nodes(list_table([header, *rows], "learning-path"))
        every_page = [page for _title, pages in parts for page in pages]
        toctree = ["```{toctree}", f":caption: {self.arguments[0]}", ":numbered:"]
        toctree += [":maxdepth: 2", ":hidden:", "", *every_page, "```"]
        return result + self.parse_text_to_nodes("\n".join(toctree))

    def parts(self) -> list[tuple[str, list[str]]]:
        """``(part title, [page, ...])`` in reading order; the title of pages listed before the
        first ``#`` line is empty."""
        parts: list[tuple[str, list[str]]] = []
        for line in map(str.strip, self.content):
            if not line:
                continue
            if line.startswith("#"):
                parts.append((line.lstrip("#").strip(), []))
                continue
            if ":" in line:
                raise self.error(
                    f"learning-path: a line is '# part title' or a page's name, got {line!r}: "
                    "what a page teaches goes in its own front matter, as 'summary: ...'"
                )
            if not Path(self.env.doc2path(line)).is_file():
                raise self.error(f"learning-path: no page {line!r} in {self.env.srcdir}")
            if not parts:
                parts.append(("", []))
            parts[-1][1].append(line)
        if not any(pages for _title, pages in parts):
            raise self.error("learning-path lists no page")
        return parts

    def row(self, page: str) -> tuple[str, str, str, str]:
        """The table row of ``page``: its link, what it teaches, reading time and GPUs wanted."""
        path = Path(self.env.doc2path(page))
        self.env.note_dependency(str(path))
        front_matter, body = read_front_matter(path)
        if "summary" not in front_matter:
            raise self.error(
                f"learning-path: {page} has no 'summary' in its front matter: one sentence on "
                "what the page teaches, in the page's language"
            )
        minutes = _("{n} min").format(n=reading_minutes(body))
        gpus = str(front_matter["gpus"] or _("none"))
        return (f"{{doc}}`{page}`", front_matter["summary"], minutes, gpus)


def add_description(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """A page's ``summary`` as its ``<meta name="description">``, without MyST's backticks."""
    summary = app.env.metadata.get(pagename, {}).get("summary")
    if summary:
        text = html.escape(summary.replace("`", ""))
        context["metatags"] = context.get("metatags", "") + (
            f'\n    <meta name="description" content="{text}" />'
        )


def setup(app):
    app.add_directive("learning-path", LearningPath)
    app.connect("html-page-context", add_description)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
