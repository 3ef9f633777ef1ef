"""Say on every page which machine, software and profile produced its outputs.

The facts are gathered once per build (the same machine executes every page: the execution
cache is keyed by hardware and profile) and shown in a line at the top of every page; the
About page (gpukit_site.ext.about) shows them in full.

gpukit speaks English (its phrases are page outputs, shared by both languages). The site says
the machine (``gpukit.machine_info()``, data) in the build's language through the catalog
(conf/locales): a Chinese build writes 「仅 CPU，2 核（AMD EPYC 7B13，AVX2 核函数）」.
"""

import datetime as dt
import os

import torch
from sphinx.locale import _

import gpukit

# The catalog's words for each profile, one entry per profile: a profile without one fails here.
PROFILE_NAMES = {"quick": "profile quick", "full": "profile full"}


def remember_facts(app) -> None:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    today = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    app.env.gpukit_facts = {
        "machine": gpukit.machine_info(),
        "torch": torch.__version__.split("+")[0],
        "profile": gpukit.current_profile().name,
        "date": today.date().isoformat(),
    }


def profile_in_language(name: str) -> str:
    """``"profile quick"`` in the build's language, e.g. 「快速配置」."""
    return _(PROFILE_NAMES[name])


def add_provenance(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The provenance line in the build's language (conf/locales holds the translations)."""
    facts = dict(app.env.gpukit_facts)
    facts["profile"] = profile_in_language(facts["profile"])
    facts["machine"] = facts["machine"].describe(translate=_)
    if "kernelspec" in app.env.metadata.get(pagename, {}):
        line = _("Outputs on this page: {machine}, PyTorch {torch}, {profile}, built {date}.")
    else:
        line = _("This build: {machine}, PyTorch {torch}, {profile}, built {date}.")
    context["provenance"] = line.format(**facts)


def setup(app):
    app.connect("builder-inited", remember_facts)
    app.connect("html-page-context", add_provenance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
