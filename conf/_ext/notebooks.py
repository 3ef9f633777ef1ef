"""Offer every executed page as a Jupyter notebook, with its outputs, and open it in Colab.

myst-nb turns each MyST page into a notebook, executes it into the execution cache (or finds
it there) and writes the notebook to ``<build>/jupyter_execute/<page>.ipynb``, but without its
outputs (myst-nb 1.4 writes the notebook it read, not the executed one), and that folder is
shared by both languages (the Chinese build overwrites the English notebooks). So right after
myst-nb has read a page, this extension takes that notebook (this language's text), merges the
outputs from the execution cache the way myst-nb does, keeps the result in the build
environment, which each language has to itself, and writes it to
``<outdir>/_notebooks/<page>.ipynb`` when the build finishes. A page that an incremental build
does not read again keeps the notebook of its last reading. Only the ``cache`` execution mode
(the project's) keeps outputs; in another mode pages offer no notebook.

The notebook gets one cell in front that installs gpukit where it is missing (on Colab), from
the repository named by ``notebooks_repository_url``, without touching the installed PyTorch.
The page template links the download and the Colab copy, whose address is
``notebooks_colab_url`` with ``{lang}`` and ``{page}`` filled in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from jupyter_cache import get_cache
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

FOLDER = "_notebooks"
LABELS = {
    "en": {"download_label": "Download notebook (.ipynb)", "colab_label": "Open in Colab"},
    "zh": {"download_label": "下载 notebook（.ipynb）", "colab_label": "在 Colab 中打开"},
}
# --no-deps: keep the PyTorch already there (Colab's matches its GPU driver; gpukit pins the
# release the site was built with, whose CUDA may need a newer driver).
INSTALL = """\
# gpukit, the helper package of these pages, installed where it is missing (e.g. on Colab).
import importlib.util

if importlib.util.find_spec("gpukit") is None:
    get_ipython().run_line_magic("pip", "install --quiet --no-deps 'gpukit @ git+{url}'")"""


def executed(app: Sphinx, docname: str) -> bool:
    """Pages with a kernelspec are notebooks that myst-nb executes."""
    return "kernelspec" in app.env.metadata.get(docname, {})


def keep_notebook(app: Sphinx, doctree: Any) -> None:
    """Store the notebook myst-nb has just written for this page (and this language)."""
    docname = app.env.docname
    if not hasattr(app.env, "gpukit_notebooks"):
        app.env.gpukit_notebooks = {}
    app.env.gpukit_notebooks.pop(docname, None)
    if not executed(app, docname):
        return
    config = app.env.mystnb_config
    if config.execution_mode != "cache":
        return
    written = Path(config.output_folder, f"{docname}.ipynb")
    try:
        _, notebook = get_cache(config.execution_cache_path).merge_match_into_notebook(
            nbformat.read(written, as_version=4)
        )
    except KeyError:
        logger.warning("no executed notebook in the cache for %s", docname, location=docname)
        return
    notebook.metadata.pop("source_map", None)  # myst-nb's own bookkeeping
    install = nbformat.v4.new_code_cell(
        INSTALL.format(url=app.config.notebooks_repository_url.removesuffix("/"))
    )
    install.metadata["tags"] = ["install-gpukit"]
    notebook.cells.insert(0, install)
    app.env.gpukit_notebooks[docname] = nbformat.writes(notebook)


def forget_notebook(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "gpukit_notebooks", {}).pop(docname, None)


def merge_notebooks(app: Sphinx, env: Any, docnames: set, other: Any) -> None:
    if not hasattr(env, "gpukit_notebooks"):
        env.gpukit_notebooks = {}
    for docname in docnames:
        if docname in getattr(other, "gpukit_notebooks", {}):
            env.gpukit_notebooks[docname] = other.gpukit_notebooks[docname]


def add_links(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """``notebook`` in the page template: the download and Colab links and their labels."""
    if pagename not in getattr(app.env, "gpukit_notebooks", {}):
        return
    lang = app.config.site_language
    context["notebook"] = {
        "download": "../" * pagename.count("/") + f"{FOLDER}/{pagename}.ipynb",
        "colab": app.config.notebooks_colab_url.format(lang=lang, page=pagename),
        **LABELS[lang],
    }


def write_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for docname, text in getattr(app.env, "gpukit_notebooks", {}).items():
        path = Path(app.outdir, FOLDER, f"{docname}.ipynb")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("notebooks_repository_url", "", "html", types=[str])
    app.add_config_value("notebooks_colab_url", "", "html", types=[str])
    app.connect("doctree-read", keep_notebook)
    app.connect("env-purge-doc", forget_notebook)
    app.connect("env-merge-info", merge_notebooks)
    app.connect("html-page-context", add_links)
    app.connect("build-finished", write_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
