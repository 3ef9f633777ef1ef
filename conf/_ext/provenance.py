"""Say on every page which machine, software and profile produced its outputs.

The facts are gathered once per build (the same machine executes every page: the execution
cache is keyed by hardware and profile). A page whose front matter asks for more GPUs than
the machine has gets a visible notice, so a CPU build is never mistaken for a GPU one.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
from importlib.metadata import version
from typing import Any

import torch
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.locale import _
from sphinx.util.docutils import SphinxDirective

import gpukit
from always_reread import reread_every_build

CPU_ONLY = re.compile(r"^CPU only, (\d+) cores?")  # how gpukit.describe_machine() starts


def line_of(facts: dict[str, str], executed: bool) -> str:
    """The provenance line in the build's language (conf/locales holds the translations)."""
    facts = dict(facts, profile=_("profile " + facts["profile"]))
    cpu_only = _("CPU only, {cores} cores")
    if cpu_only != "CPU only, {cores} cores":  # the CPU model and its kernels stay as they are
        facts["machine"] = CPU_ONLY.sub(
            lambda m: cpu_only.format(cores=m.group(1)), facts["machine"]
        )
    if executed:
        line = _("Outputs on this page: {machine}, PyTorch {torch}, {profile}, built {date}.")
    else:
        line = _("This build: {machine}, PyTorch {torch}, {profile}, built {date}.")
    return line.format(**facts)


def notice_of(wanted: int, found: int) -> str:
    """What a reader must know about a page built with fewer GPUs than it is written for."""
    found_text = _("no GPU") if found == 0 else _("only {n} GPU(s)").format(n=found)
    return _(
        "This page is written for {wanted} GPU(s); the machine that built it has {found}. "
        "Its code ran all the same, on the devices this machine has, so the times below are "
        "this machine's. The text says what a machine with {wanted} GPU(s) shows."
    ).format(wanted=wanted, found=found_text)


def build_facts() -> dict[str, str]:
    """What produced this build's outputs."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    today = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    return {
        "machine": gpukit.describe_machine(),
        "torch": torch.__version__.split("+")[0],
        "profile": gpukit.current_profile().name,
        "date": today.date().isoformat(),
    }


def gpus_wanted(metadata: dict[str, Any]) -> int:
    return int(metadata.get("gpus", 0))


def add_provenance(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    metadata = app.env.metadata.get(pagename, {})
    context["provenance"] = line_of(app.env.gpukit_facts, executed="kernelspec" in metadata)
    wanted, found = gpus_wanted(metadata), gpukit.num_gpus()
    if wanted > found:
        context["provenance_notice"] = notice_of(wanted, found)


def two_column_table(rows: list[tuple[str, str]]) -> nodes.table:
    """A docutils table of (name, value) rows, values set as literals."""
    tgroup = nodes.tgroup(cols=2)
    tgroup += [nodes.colspec(colwidth=1), nodes.colspec(colwidth=3)]
    body = nodes.tbody()
    for name, value in rows:
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph(text=name))
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(text=value)))
        body += row
    tgroup += body
    return nodes.table("", tgroup)


class BuildInfo(SphinxDirective):
    """``{build-info}``: a table of the hardware and software versions of this build."""

    def run(self) -> list[nodes.Node]:
        facts = self.env.gpukit_facts
        rows = [
            (_("Hardware"), facts["machine"]),
            (_("Profile"), gpukit.current_profile().describe()),
            ("Python", platform.python_version()),
            ("PyTorch", torch.__version__),
            ("CUDA", torch.version.cuda or "—"),
            ("cuDNN", str(torch.backends.cudnn.version() or "—")),
        ]
        rows += [(name, version(name)) for name in ("sphinx", "myst-nb", "jupyter-cache", "furo")]
        rows.append((_("Built"), facts["date"]))
        reread_every_build(self.env)  # the facts are this build's
        return [two_column_table(rows)]


def remember_facts(app: Sphinx) -> None:
    app.env.gpukit_facts = build_facts()


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("always_reread")
    app.connect("builder-inited", remember_facts)
    app.connect("html-page-context", add_provenance)
    app.add_directive("build-info", BuildInfo)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
