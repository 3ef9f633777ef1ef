"""Link every page to the same page in the other language.

The two languages are built into sibling folders (``html/en``, ``html/zh``) from mirrored
source trees, so a page's counterpart has the same page name one folder over.
"""

from __future__ import annotations

from typing import Any

from languages import LANGUAGES
from sphinx.application import Sphinx


def counterpart_url(pagename: str, other_folder: str) -> str:
    """Relative URL of ``pagename`` in the sibling language folder (works from file:// too)."""
    up = "../" * (pagename.count("/") + 1)
    return f"{up}{other_folder}/{pagename}.html"


def add_counterpart(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    this = LANGUAGES[app.config.site_language]
    other = next(lang for lang in LANGUAGES.values() if lang != this)
    context["this_language"] = {"name": this.name, "hreflang": this.hreflang}
    context["other_language"] = {
        "url": counterpart_url(pagename, other.code),
        "name": other.name,
        "hreflang": other.hreflang,
    }


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("site_language", "en", "html", types=[str])
    app.connect("html-page-context", add_counterpart)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
