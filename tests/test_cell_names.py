"""A reader sees where every name comes from: no visible cell uses a name that only a
``remove-cell`` cell defines.

A removed cell (the glue calls) runs in the build but is not on the page, nor in the reader's
picture of the code: a visible cell, or a solution's hidden cell that a reader opens, that
reads a variable defined there (fast-training's exercise 1 once read ``times``) works in the
build and leaves the reader with a name defined nowhere they can see.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```$", re.DOTALL | re.MULTILINE)
OPTION = re.compile(r"^:[\w-]+:.*$")


def cells(text: str) -> list[tuple[bool, str]]:
    """(removed, source) of each code cell of a MyST page, in order."""
    found = []
    for match in CELL.finditer(text):
        lines = match["body"].splitlines()
        options = [line for line in lines if OPTION.match(line)]
        source = "\n".join(line for line in lines if not OPTION.match(line))
        found.append((any("remove-cell" in line for line in options), source))
    return found


def defined(tree: ast.AST) -> set[str]:
    """The names a cell binds: assignments, loop and with targets, functions, classes, imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def names_only_removed_cells_define(text: str) -> set[str]:
    """The names that visible cells read but only removed cells define."""
    parsed = [(removed, ast.parse(source)) for removed, source in cells(text)]
    visible = set().union(*(defined(tree) for removed, tree in parsed if not removed))
    hidden = set().union(*(defined(tree) for removed, tree in parsed if removed)) - visible
    read = {
        node.id
        for removed, tree in parsed
        if not removed
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return read & hidden


PAGES = sorted(DOCS.glob("*/*.md"))


@pytest.mark.parametrize("path", PAGES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_visible_cell_reads_a_removed_cells_name(path: Path) -> None:
    read = names_only_removed_cells_define(path.read_text(encoding="utf-8"))
    assert not read, f"{path.name}: visible cells read {sorted(read)}, defined only in remove-cell"


def test_a_name_from_a_removed_cell_is_found() -> None:
    page = (
        "```{code-cell} ipython3\nrows = [1, 2]\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\n\ntimes = [r * 2 for r in rows]\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-cell]\n\nprint(times[0], rows)\n```\n"
    )
    assert names_only_removed_cells_define(page) == {"times"}
