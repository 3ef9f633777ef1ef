"""myst-nb's execution table (``{nb-exec-table}``) in the page's language, with a text status.

myst-nb writes its headers in English (Document, Modified, Method, Run Time (s), Status) and
the status as an emoji (✅/❌), which shows as an empty box where no emoji font is installed.
This post-transform builds the same table just before myst-nb would (myst-nb's own transform,
priority 8, then finds no placeholder left), translates the headers and the method through the
gettext catalog (conf/locales) and writes the status as a word, which every font can show.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from myst_nb.ext.execution_tables import ExecutionStatsNode, make_stat_table
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.locale import _
from sphinx.transforms.post_transforms import SphinxPostTransform

# myst-nb's texts and ours; the Chinese ones are in conf/locales/zh_CN/LC_MESSAGES/sphinx.po.
HEADERS = ("Document", "Modified", "Method", "Run Time (s)", "Status")
STATUS = {"✅": "done", "❌": "failed"}
METHODS = ("cache", "auto", "force", "inline")


def translate(table: nodes.table) -> nodes.table:
    """The table with its headers, methods and status words in the build's language."""
    for text in list(table.findall(nodes.Text)):
        word = str(text)
        if word in HEADERS or word in METHODS:
            new = _(word)
        elif word in STATUS:
            new = _(STATUS[word])
        else:
            continue
        text.parent.replace(text, nodes.Text(new))
    return table


class ExecTableInLanguage(SphinxPostTransform):
    default_priority = 7  # before myst-nb's ExecutionStatsPostTransform (8)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(ExecutionStatsNode)):
            data = NbMetadataCollector.get_doc_data(self.env)
            node.replace_self(translate(make_stat_table(self.env.docname, data)))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(ExecTableInLanguage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
