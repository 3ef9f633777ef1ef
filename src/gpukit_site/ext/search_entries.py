"""A rebuild keeps the search index's entries of the pages it does not write again.

Sphinx collects a page's index entries (the glossary's terms, the API's names: what the search
lists first for a term) while it writes the page, into the build environment, and it saves that
environment before it writes. A rebuild then loads an environment without them and writes only
the changed pages, so the search of an author's rebuilt site forgets every glossary term
(sphinx-doc/sphinx#12599, open). Saving the environment again once the build has succeeded
keeps them; a fresh build, as CI and the hosted site do, is the same either way.
"""

import pickle

from sphinx.application import ENV_PICKLE_FILENAME


def save_environment_again(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        with open(app.doctreedir / ENV_PICKLE_FILENAME, "wb") as f:
            pickle.dump(app.env, f, pickle.HIGHEST_PROTOCOL)


def forget_entries(app, env, docname: str) -> None:
    """A page read again gets its entries when it is written; a removed page has none (Sphinx
    never drops them itself: kept, they would name a page the index no longer has)."""
    env._search_index_index_entries.pop(docname, None)


def setup(app):
    app.connect("env-purge-doc", forget_entries)
    app.connect("build-finished", save_environment_again)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
