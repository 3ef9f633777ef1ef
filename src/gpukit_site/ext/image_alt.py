"""Every image says what it shows, in the page's language: its ``alt`` text is never a file name.

A figure of ``docs/img`` says it in its page, with ``:alt:`` (translated with the page). A plot
that a cell drew cannot: its cell is shared by both languages, and so is any alt text in the
cell's metadata. The plot says it itself: gpukit draws plots as SVG with their text kept as text
(``gpukit.plotting.figure_to_svg``), so the build reads the plot's words (axis labels, legend,
title; numbers left out) and writes them into a sentence of the page's language, e.g.
"Plot drawn by the code above, labelled epoch; train loss; test acc." An image with neither
fails the build: docutils would otherwise use its file name.
"""

import re
from html import unescape
from pathlib import Path

from docutils import nodes
from sphinx.locale import _
from sphinx.util import logging

logger = logging.getLogger(__name__)

TEXT = re.compile(r"<text\b[^>]*>([^<]*)</text>")
WORD = re.compile(r"[^\W\d_]{2,}")  # a label has a word: tick labels (0.5, 10, 1e3) do not


def plot_labels(svg: str) -> list[str]:
    """The words of a plot drawn as SVG text, in drawing order, each once, numbers left out.

    >>> plot_labels('<text x="1">0.5</text><text>epoch</text><text>loss</text><text>epoch</text>')
    ['epoch', 'loss']
    """
    labels = []
    for text in TEXT.findall(svg):
        label = " ".join(unescape(text).split())
        if WORD.search(label) and label not in labels:
            labels.append(label)
    return labels


def describe_plot(labels: list[str]) -> str:
    """A sentence on a plot, from its labels, in the build's language."""
    if not labels:
        return _("Plot drawn by the code above, without labels.")
    return _("Plot drawn by the code above, labelled {labels}.").format(labels=_("; ").join(labels))


def in_cell_output(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if "cell_output" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def add_alt_text(app, doctree: nodes.document) -> None:
    """Give each image of a cell's output an alt text; fail on any other image without one."""
    srcdir = Path(app.srcdir)
    for image in doctree.findall(nodes.image):
        if image.get("alt", "").strip():
            continue
        path = srcdir / image["uri"].lstrip("/")
        if in_cell_output(image) and path.suffix == ".svg" and path.is_file():
            image["alt"] = describe_plot(plot_labels(path.read_text("utf-8")))
        else:
            logger.warning(
                "image %s has no alt text: say what it shows (`:alt:` of the figure)",
                image["uri"],
                location=image,
            )


def setup(app):
    app.connect("doctree-read", add_alt_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
