"""Execution without surprises: outputs never stale, an interrupted build repaired, and every
cell tagged ``raises-exception`` checked to raise.

jupyter-cache hashes a notebook's code cells and kernelspec only: it cannot see that gpukit,
torch, the execution profile or the machine changed. So each combination gets a folder of its
own; an output is never stale after a helper change and never mixed between machines.

jupyter-cache stores an executed notebook in two steps: a database record, then
``executed/<hash>/base.ipynb``. A build killed between the two (SIGKILL, a cancelled CI job, a
flat battery) leaves a record whose notebook is missing or truncated, and every later build would
crash on that page (``KeyError: Notebook file does not exist for cache record``, ``NotJSONError``)
until someone deleted the cache. So before any page is read, such records are removed with their
folders, and so is any folder without a readable notebook: the page is executed again.

The ``raises-exception`` tag tells the executor to carry on after the cell's error; myst-nb does
not check that an error happened. A cell meant to show an error that runs cleanly (say, a helper
now accepts the bad input) would publish a text that explains an error that is not there. So
once a page's outputs are known, every such cell must show an error output; one whose outputs
are removed (``remove-output``) cannot, and fails too. Each problem is a Sphinx warning at the
cell (``page.md:LINE``): ``-W`` fails the build naming the page, the line and the cell's code.
"""

import ast
import hashlib
import re
import shutil
from pathlib import Path

import nbformat
import torch
from docutils import nodes
from sphinx.util import logging

import gpukit

logger = logging.getLogger(__name__)

TAG = "raises-exception"
# Everything, besides a page's own code, that decides what its cells print: the helpers, the
# kernel's IPython profile and the kernel's environment.
HASHED_TREES = ("src/gpukit", "conf/ipython", "src/gpukit_site/kernel_env.py")


def tree_hash(root: Path, trees: tuple[str, ...] = HASHED_TREES) -> str:
    """SHA-256 over the relative paths and the code of every Python file in ``trees`` (folders,
    or single files).

    The code, not the bytes: :func:`code_of` leaves docstrings, comments and layout out, so
    that an edited docstring does not execute the whole site again."""
    digest = hashlib.sha256()
    for tree in trees:
        top = root / tree
        for path in [top] if top.suffix == ".py" else sorted(top.rglob("*.py")):
            # Editors' lock files (".#devices.py", often a dangling link) and backups are
            # not sources: hashing them would crash or re-execute the site for nothing.
            if "__pycache__" in path.parts or path.name.startswith(".") or not path.is_file():
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + code_of(path))
    return digest.hexdigest()


def code_of(path: Path) -> bytes:
    """What ``path`` computes: its syntax tree without docstrings (comments and layout are not
    in the tree). A file that does not parse counts with all of its bytes."""
    source = path.read_bytes()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree).encode()


def hardware_signature() -> str:
    """:func:`gpukit.describe_machine` as a folder name, e.g. ``2-x-NVIDIA-H200-CUDA-13.0`` or
    ``CPU-only-2-cores-AMD-EPYC-7B13-AVX2-kernels``: outputs computed on one machine (one CPU
    model, core count and choice of kernels) are never shown as another's."""
    return re.sub(r"[^A-Za-z0-9.+_=]+", "-", gpukit.describe_machine()).strip("-")


def cache_key(root: Path, profile: str) -> str:
    """The jupyter-cache folder of a build, shared by both languages, e.g.
    ``CPU-only-2-cores-AMD-EPYC-AVX2-kernels-quick-torch2.13.0-1a2b3c4d5e6f``."""
    torch_version = torch.__version__.split("+")[0]
    return f"{hardware_signature()}-{profile}-torch{torch_version}-{tree_hash(root)[:12]}"


def _readable(path: Path) -> bool:
    try:
        return bool(nbformat.reads(path.read_text(encoding="utf-8"), nbformat.NO_CONVERT))
    except Exception:  # missing, truncated, not JSON, not a notebook: all mean "not usable"
        return False


def repair_cache(path: str | Path) -> list[str]:
    """Remove incomplete entries from the jupyter-cache at ``path``; return what was removed."""
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbCacheRecord

    executed = Path(path) / "executed"
    removed = []
    if not (Path(path) / "global.db").is_file():
        return removed  # no cache yet
    cache = get_cache(path)
    for record in cache.list_cache_records():
        if not _readable(executed / record.hashkey / "base.ipynb"):  # jupyter-cache's layout
            NbCacheRecord.remove_records([record.pk], cache.db)
            shutil.rmtree(executed / record.hashkey, ignore_errors=True)
            removed.append(f"record {record.pk} ({record.uri}): notebook missing or incomplete")
    # A folder without a readable notebook (a kill while jupyter-cache replaced an entry)
    # would make jupyter-cache's next write to it fail: remove it. A complete notebook
    # without a record is harmless (jupyter-cache overwrites it) and is left alone.
    for folder in sorted(executed.glob("*/")):
        if not _readable(folder / "base.ipynb"):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"folder executed/{folder.name}: no complete notebook")
    return removed


def repair_on_start(app) -> None:
    config = getattr(app.env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or not config.execution_cache_path:
        return
    if removed := repair_cache(config.execution_cache_path):
        entries = f"{len(removed)} incomplete entr{'y' if len(removed) == 1 else 'ies'}"
        where = "\n  ".join(removed)
        logger.info(
            f"execution cache: removed {entries} left by an interrupted build "
            f"(their pages execute again):\n  {where}"
        )


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
                "code cell tagged %s %s:\n%s",
                TAG,
                why,
                code,
                location=cell,
                type="gpukit",
                subtype="raises-exception",
            )


def setup(app):
    # After myst-nb's own builder-inited handler, which resolves the cache path.
    app.connect("builder-inited", repair_on_start, priority=600)
    app.connect("doctree-read", check_raises)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    # The GPU workflow names its Actions cache entry after the folder (.github/workflows):
    # ``python -m gpukit_site.ext.execution full`` prints the folder's name for this machine.
    import sys

    root = Path(__file__).resolve().parents[3]
    print(cache_key(root, sys.argv[1] if len(sys.argv) > 1 else gpukit.current_profile().name))
