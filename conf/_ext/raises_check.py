"""Fail the build when a cell tagged ``raises-exception`` does not raise.

The tag tells the executor to carry on after the cell's error; myst-nb does not check that an
error happened. A cell that is meant to show an error but runs cleanly (say, because a helper
now accepts the bad input) would publish a page whose text explains an error that is not
there. So, once a page's outputs are known (``doctree-read``, after myst-nb has executed the
page or taken its outputs from the cache), every such cell must show an error output. A cell
whose outputs are removed (``remove-output``) cannot show its error, and fails too.

Each problem is a Sphinx warning located at the cell (``page.md:LINE``), so ``-W`` fails the
build naming the page, the line and the cell's code.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

TAG = "raises-exception"


def _nb_element(node: nodes.Node, kind: str) -> bool:
    return isinstance(node, nodes.Element) and node.get("nb_element") == kind


def _executed(app: Sphinx, docname: str) -> bool:
    """Whether myst-nb executed this page or took its outputs from the cache."""
    metadata = getattr(app.env, "nb_metadata", {}).get(docname, {})
    return bool(metadata.get("exec_data"))


def cell_problem(cell: nodes.Element) -> str | None:
    """Why a ``raises-exception`` cell is wrong, or ``None`` when it shows an error."""
    outputs = [n for n in cell.findall(nodes.Element) if _nb_element(n, "cell_code_output")]
    if not outputs:
        return (
            "has its outputs removed (remove-output), so its error can be neither shown nor "
            "checked: drop remove-output"
        )
    for output in outputs:
        for node in output.findall(nodes.Element):
            if "traceback" in node.get("classes", ()):  # myst-nb's rendering of an error
                return None
    return "ran without raising: make it raise, or remove the tag"


def check_raises(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    if not _executed(app, docname):  # e.g. nb_execution_mode=off: no outputs to check
        return
    for cell in doctree.findall(lambda n: _nb_element(n, "cell_code")):
        if TAG not in cell.get("cell_metadata", {}).get("tags", []):
            continue
        problem = cell_problem(cell)
        if problem is None:
            continue
        source = "".join(
            n.astext() for n in cell.findall(lambda n: _nb_element(n, "cell_code_source"))
        )
        code = "\n".join("    " + line for line in source.splitlines())
        logger.warning(
            "code cell tagged %s %s:\n%s",
            TAG,
            problem,
            code or "    (source hidden)",
            location=cell,
            type="gpukit",
            subtype="raises-exception",
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", check_raises)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
