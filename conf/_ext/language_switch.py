"""Link every page to the same page in the other language.

The two languages are built into sibling folders (``html/en``, ``html/zh``) from mirrored
source trees, so a page's counterpart has the same page name one folder over.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

# (folder, name shown in the switcher, hreflang)
OTHER = {
    "en": ("zh", "中文", "zh-CN"),
    "zh": ("en", "English", "en"),
}


def counterpart_url(pagename: str, other_folder: str) -> str:
    """Relative URL of ``pagename`` in the sibling language folder (works from file:// too)."""
    up = "../" * (pagename.count("/") + 1)
    return f"{up}{other_folder}/{pagename}.html"


def add_counterpart(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    folder, name, hreflang = OTHER[app.config.site_language]
    context["other_language"] = {
        "url": counterpart_url(pagename, folder),
        "name": name,
        "hreflang": hreflang,
    }


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("site_language", "en", "html", types=[str])
    app.connect("html-page-context", add_counterpart)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
