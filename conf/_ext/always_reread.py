"""Pages that show something besides their source are read again by every build.

Sphinx reads a page again only when its source changed. A directive whose output comes from
elsewhere (the machine, today's date) would then keep showing what it
found when the page was last read. Such a directive calls :func:`reread_every_build` for its
page; this extension hands those pages to Sphinx as outdated on every build. A page is
forgotten when it is read again, so one that drops the directive is soon read only as usual.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment


def reread_every_build(env: BuildEnvironment) -> None:
    """Mark the page being read (``env.docname``) as one to read again on every build."""
    env.gpukit_always_reread.add(env.docname)


def start(app: Sphinx) -> None:
    if not hasattr(app.env, "gpukit_always_reread"):
        app.env.gpukit_always_reread = set()


def forget(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    env.gpukit_always_reread.discard(docname)


def merge(app: Sphinx, env: BuildEnvironment, docnames: set, other: BuildEnvironment) -> None:
    env.gpukit_always_reread |= other.gpukit_always_reread & docnames


def outdated(app: Sphinx, env: BuildEnvironment, added: set, changed: set, removed: set) -> list:
    return sorted(env.gpukit_always_reread - removed)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", start)
    app.connect("env-purge-doc", forget)
    app.connect("env-merge-info", merge)
    app.connect("env-get-outdated", outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
