"""Repair the execution cache after an interrupted build, before any page is read.

jupyter-cache stores an executed notebook in two steps: it commits a database record, then
writes ``executed/<hash>/base.ipynb``. A build killed between the two (SIGKILL, a CI job
cancelled, a laptop that runs out of battery) leaves a record whose notebook is missing or
truncated. Every later build would then crash on that page (``KeyError: Notebook file does not
exist for cache record`` or ``NotJSONError``) until someone deleted the cache by hand.

So at the start of each build every record is checked: one whose notebook is missing or does
not read as a notebook is removed with its folder, and so is any folder left without a
readable notebook. The page is then executed again, and the build publishes complete outputs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _readable(path: Path) -> bool:
    try:
        nbformat.reads(path.read_text(encoding="utf-8"), nbformat.NO_CONVERT)
    except Exception:  # missing, truncated, not JSON, not a notebook: all mean "not usable"
        return False
    return True


def repair_cache(path: str | Path) -> list[str]:
    """Remove incomplete entries from the jupyter-cache at ``path``; return what was removed."""
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbCacheRecord

    path = Path(path)
    if not (path / "global.db").is_file():
        return []  # no cache yet
    cache = get_cache(path)
    executed = path / "executed"
    removed = []
    broken = []
    for record in cache.list_cache_records():
        folder = executed / record.hashkey  # jupyter-cache's layout
        if not _readable(folder / "base.ipynb"):
            broken.append(record.pk)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"record {record.pk} ({record.uri}): notebook missing or incomplete")
    if broken:
        NbCacheRecord.remove_records(broken, cache.db)
    # A folder without a readable notebook (a kill while jupyter-cache replaced an entry)
    # would make jupyter-cache's next write to it fail: remove it. A complete notebook
    # without a record is harmless (jupyter-cache overwrites it) and is left alone.
    if executed.is_dir():
        for folder in sorted(executed.iterdir()):
            if folder.is_dir() and not _readable(folder / "base.ipynb"):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(f"folder executed/{folder.name}: no complete notebook")
    return removed


def repair_on_start(app: Sphinx) -> None:
    config = getattr(app.env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or not config.execution_cache_path:
        return
    removed = repair_cache(config.execution_cache_path)
    if removed:
        logger.info(
            "execution cache: removed %d incomplete entr%s left by an interrupted build "
            "(their pages execute again):\n  %s",
            len(removed),
            "y" if len(removed) == 1 else "ies",
            "\n  ".join(removed),
        )


def setup(app: Sphinx) -> dict[str, Any]:
    # After myst-nb's own builder-inited handler, which resolves the cache path.
    app.connect("builder-inited", repair_on_start, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
