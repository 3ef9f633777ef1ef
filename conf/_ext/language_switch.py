"""Link every page to the same page in the other language.

The two languages are built into sibling folders (``html/en``, ``html/zh``) from mirrored
source trees, so a page's counterpart has the same page name one folder over.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

# folder -> (name shown in the switcher, hreflang)
LANGUAGES = {"en": ("English", "en"), "zh": ("中文", "zh-CN")}
OTHER = {"en": "zh", "zh": "en"}


def counterpart_url(pagename: str, other_folder: str) -> str:
    """Relative URL of ``pagename`` in the sibling language folder (works from file:// too)."""
    up = "../" * (pagename.count("/") + 1)
    return f"{up}{other_folder}/{pagename}.html"


def add_counterpart(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    this = app.config.site_language
    other = OTHER[this]
    context["this_language"] = {"name": LANGUAGES[this][0], "hreflang": LANGUAGES[this][1]}
    context["other_language"] = {
        "url": counterpart_url(pagename, other),
        "name": LANGUAGES[other][0],
        "hreflang": LANGUAGES[other][1],
    }


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("site_language", "en", "html", types=[str])
    app.connect("html-page-context", add_counterpart)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
