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
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

from provenance import gpus_wanted, list_table

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


class LearningPath(SphinxDirective):
    """``{learning-path}``: one ``page: what it teaches`` per line."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        rows = [(_("Page"), _("What you will learn"), _("Reading time"), _("GPUs (full run)"))]
        for line in filter(str.strip, self.content):
            page, colon, summary = (part.strip() for part in line.partition(":"))
            path = Path(self.env.doc2path(page))
            if not colon or not path.is_file():
                raise self.error(f"learning-path: 'page: what it teaches', got {line!r}")
            self.env.note_dependency(str(path))
            minutes = reading_minutes(path.read_text(encoding="utf-8"))
            gpus = str(gpus_wanted(path) or _("none"))
            rows.append((f"{{doc}}`{page}`", summary, _("{n} min").format(n=minutes), gpus))
        return self.parse_text_to_nodes(list_table(rows, "learning-path"))


def setup(app):
    app.add_directive("learning-path", LearningPath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
