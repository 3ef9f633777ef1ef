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

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

TAG = "raises-exception"


def parts(node: nodes.Node, kind: str) -> list[nodes.Element]:
    """The nodes under ``node`` that myst-nb marks as ``kind`` (``cell_code``, ...)."""
    return [n for n in node.findall(nodes.Element) if n.get("nb_element") == kind]


def cell_problem(cell: nodes.Element) -> str | None:
    """Why a ``raises-exception`` cell is wrong, or ``None`` when it shows an error."""
    outputs = parts(cell, "cell_code_output")
    if not outputs:
        return (
            "has its outputs removed (remove-output), so its error can be neither shown nor "
            "checked: drop remove-output"
        )
    for output in outputs:  # myst-nb renders an error with the class "traceback"
        if any("traceback" in node.get("classes", ()) for node in output.findall(nodes.Element)):
            return None
    return "ran without raising: make it raise, or remove the tag"


def check_raises(app, doctree: nodes.document) -> None:
    # Only a page that myst-nb executed or took from the cache has outputs to check (not, e.g.,
    # with nb_execution_mode=off).
    if not getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("exec_data"):
        return
    for cell in parts(doctree, "cell_code"):
        if TAG in cell.get("cell_metadata", {}).get("tags", []) and (why := cell_problem(cell)):
            source = "".join(n.astext() for n in parts(cell, "cell_code_source"))
            code = "\n".join("    " + line for line in source.splitlines()) or "    (source hidden)"
            logger.warning(
                "code cell tagged %s %s:\n%s", TAG, why, code,
                location=cell, type="gpukit", subtype="raises-exception",
            )  # fmt: skip


def setup(app):
    app.connect("doctree-read", check_raises)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
