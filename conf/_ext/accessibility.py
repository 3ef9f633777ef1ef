"""Small accessibility fixes to the HTML that Sphinx and furo write.

Sphinx 8.2 writes a toctree's caption as ``<p class="caption" role="heading">`` without the
``aria-level`` that the heading role requires (axe-core: ``aria-required-attr``, critical), in
the page body and in furo's sidebar. The captions name sections of the table of contents, so
they get level 2, under the page's title. (Scrollable code blocks are made keyboard-focusable
in the browser by conf/_static/gpukit.js, since whether a block scrolls depends on the screen.)
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

CAPTION = 'class="caption" role="heading"'
FIXED = 'class="caption" role="heading" aria-level="2"'
PARTS = ("body", "toc", "furo_navigation_tree")  # the parts of a page that hold toctrees


def add_heading_levels(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    for part in PARTS:
        if isinstance(context.get(part), str):
            context[part] = context[part].replace(CAPTION, FIXED)


def setup(app: Sphinx) -> dict[str, Any]:
    # After furo (priority 500), which builds its sidebar tree in the same event.
    app.connect("html-page-context", add_heading_levels, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
