"""Each page loads the stylesheets it uses: myst-nb's where it shows a notebook's cells or glued
values, KaTeX's where it has math.

Both extensions add their stylesheet to every page. A stylesheet in the ``<head>`` holds the
first paint until it has arrived, and on a phone on a slow network every kilobyte before that
paint counts (Lighthouse's "render-blocking resources"). Which pages use one is known only from
their HTML, so the list is cut per page, from the page's body, as Sphinx hands it to the
template.
"""

import re

# A stylesheet (the start of its path in the site) and what a page's body holds where it is used.
USED_BY = {
    "_static/mystnb.": re.compile(r'class="[^"]*\b(cell|cell_output|pasted-text|pasted-inline)\b'),
    # KaTeX's own (katex/katex.min.css) and sphinxcontrib-katex's (katex-math.css)
    "_static/katex": re.compile(r'class="[^"]*\bkatex\b'),
}


def uses(filename: str, body: str) -> bool:
    """Whether a page whose HTML body is ``body`` uses the stylesheet ``filename`` (its path in
    the site, as Sphinx lists it).

    >>> uses("_static/katex/katex.min.css", '<span class="math"><span class="katex">x</span>')
    True
    >>> uses("_static/mystnb.4510f1fc.css", '<p>Text, no cell.</p>')
    False
    >>> uses("_static/styles/furo.css", "<p>")
    True
    """
    for start, pattern in USED_BY.items():
        if filename.startswith(start):
            return bool(pattern.search(body))
    return True


def drop_unused_styles(app, pagename, templatename, context, doctree) -> None:
    if "css_files" in context:
        body = context.get("body", "")
        context["css_files"] = [css for css in context["css_files"] if uses(css.filename, body)]


def setup(app):
    # After the extensions that add to the page's context (default priority 500).
    app.connect("html-page-context", drop_unused_styles, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
