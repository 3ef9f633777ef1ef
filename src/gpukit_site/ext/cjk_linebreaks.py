"""Join Chinese lines: a line break between two Chinese characters is not a space.

Authors wrap long Chinese paragraphs in the source. Browsers (Chromium among them) render
such a break as a space, which Chinese text never has between characters. This transform
drops a line break whose neighbours are both CJK characters or CJK punctuation; a break next
to a Latin word (``用 PyTorch\\n计算``) stays a space, as the author intended.

``join_cjk_markdown`` applies the same rule to Markdown (the downloaded notebooks), where the
markup of a link or an emphasis next to the break is invisible: ``中文\\n[图 1](#a)`` joins.
"""

import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

CJK = r"\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
IS_CJK = re.compile(rf"[{CJK}]")
BREAK_BETWEEN_CJK = re.compile(rf"(?<=[{CJK}])[ \t]*\n[ \t]*(?=[{CJK}])")
# In Markdown: the markup that may stand between the break and a CJK character.
MARKDOWN_BREAK_BETWEEN_CJK = re.compile(
    rf"(?<=[{CJK}])((?:[*_]+|\]\([^)\s]*\))?)[ \t]*\n[ \t]*(?=[*_\[]*[{CJK}])"
)
CODE = (nodes.literal, nodes.literal_block, nodes.raw, nodes.math, nodes.math_block)


def join_cjk_markdown(text: str) -> str:
    """``'中文\\n**段落**'`` -> ``'中文**段落**'``; ``'中文\\n* 列表'`` keeps its break."""
    return MARKDOWN_BREAK_BETWEEN_CJK.sub(r"\1", text)


def _cjk_at(node: nodes.Node, end: int) -> bool:
    text = node.astext()
    return bool(text and IS_CJK.match(text[end]))


class JoinCJKLines(SphinxTransform):
    default_priority = 900

    def apply(self, **kwargs) -> None:
        if not self.config.language.startswith("zh"):
            return
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or isinstance(parent, CODE) or "\n" not in text:
                continue
            if text.strip():  # '中文\n段落' -> '中文段落'; 'PyTorch\n计算' keeps its break
                if (joined := BREAK_BETWEEN_CJK.sub("", text)) != text:
                    parent.replace(text, nodes.Text(joined))
                continue
            # MyST makes each soft line break a Text node of its own. Text nodes are strings:
            # parent.index() and parent.remove() would find the first break that is *equal* to
            # this one (a kept break next to a Latin word, say), so look it up by identity.
            at = next(i for i, child in enumerate(parent.children) if child is text)
            around = parent.children[at - 1 : at + 2] if at else []
            if len(around) == 3 and _cjk_at(around[0], -1) and _cjk_at(around[2], 0):
                del parent[at]


def setup(app):
    app.add_transform(JoinCJKLines)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
