"""The index's learning path: a table of the pages, each with what it teaches, the time it takes
to read and the GPUs its full run wants, the last two taken from the page itself::

    :::{learning-path}
    use-gpu: Put tensors and models on a device and copy between devices.
    :::

The reading time is counted from the page's source in this language (prose and code, rounded up
to five minutes); the GPUs are its front matter ``gpus:`` (what ``--require-gpus`` checks). Both
change with the page, so the index depends on each page and is read again when one changes.
"""

import math
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

from provenance import gpus_wanted

WORDS_PER_MINUTE = 200  # Latin words: English prose and code
CJK_PER_MINUTE = 450  # Chinese characters (about 2.3 per English word of the same text)
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z0-9_]+")


def reading_minutes(text: str) -> int:
    """Minutes to read a page's source, front matter left out, rounded up to five.

    >>> reading_minutes("word " * 1000), reading_minutes("字" * 4500)
    (5, 10)
    """
    body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    minutes = len(WORD.findall(body)) / WORDS_PER_MINUTE + len(CJK.findall(body)) / CJK_PER_MINUTE
    return max(5, 5 * math.ceil(minutes / 5))


def row(*cells: nodes.Node) -> nodes.row:
    return nodes.row("", *(nodes.entry("", cell) for cell in cells))


class LearningPath(SphinxDirective):
    """``{learning-path}``: one ``page: what it teaches`` per line."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        headers = (_("Page"), _("What you will learn"), _("Reading time"), _("GPUs (full run)"))
        body = nodes.tbody()
        for offset, line in enumerate(self.content):
            if not line.strip():
                continue
            page, colon, summary = (part.strip() for part in line.partition(":"))
            path = Path(self.env.doc2path(page))
            if not colon or not path.is_file():
                raise self.error(f"learning-path: 'page: what it teaches', got {line!r}")
            self.env.note_dependency(str(path))
            link = addnodes.pending_xref(
                "", nodes.inline(text=page), refdomain="std", reftype="doc",
                reftarget=page, refexplicit=False, refwarn=True, refdoc=self.env.docname,
            )  # fmt: skip
            taught, messages = self.state.inline_text(summary, self.content_offset + offset)
            minutes = reading_minutes(path.read_text(encoding="utf-8"))
            gpus = gpus_wanted(path)
            body += row(
                nodes.paragraph("", "", link),
                nodes.paragraph("", "", *taught, *messages),
                nodes.paragraph(text=_("{n} min").format(n=minutes)),
                nodes.paragraph(text=str(gpus) if gpus else _("none")),
            )
        head = nodes.thead("", row(*(nodes.paragraph(text=h) for h in headers)))
        columns = [nodes.colspec(colwidth=width) for width in (20, 56, 12, 12)]
        group = nodes.tgroup("", *columns, head, body, cols=len(headers))
        return [nodes.table("", group, classes=["learning-path"])]


def setup(app):
    app.add_directive("learning-path", LearningPath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
