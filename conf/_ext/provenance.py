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
from sphinx.util.docutils import SphinxDirective

import gpukit
from always_reread import reread_every_build

TEXT = {
    "en": {
        "line": "Outputs on this page: {machine}, PyTorch {torch}, profile {profile}, "
        "built {date}.",
        "site_line": "This build: {machine}, PyTorch {torch}, profile {profile}, built {date}.",
        "notice": (
            "This page is written for {wanted} GPU{s}; the machine that built it has {found}. "
            "Its code still ran, with CPU replicas standing in for missing GPUs, so the times "
            "and speedups below are those of this machine: on {wanted} GPU{s}, compute-heavy "
            "cells run far faster and multi-device code spreads over real GPUs. The text says "
            "what each kind of machine shows."
        ),
        "none": "no GPU",
        "some": "only {n} GPU(s)",
    },
    "zh": {
        "line": "本页输出来自：{machine}，PyTorch {torch}，{profile} 配置，构建于 {date}。",
        "site_line": "本次构建：{machine}，PyTorch {torch}，{profile} 配置，构建于 {date}。",
        "notice": (
            "本页按 {wanted} 块 GPU 编写，而构建本页的机器{found}。代码照常运行，缺少的 GPU "
            "由 CPU 副本代替，因此下面的时间和加速比反映的是这台机器：在 {wanted} 块 GPU 上，"
            "计算量大的单元格会快得多，多设备代码也会真正分摊到各块 GPU 上。正文说明了不同机器上"
            "会看到什么。"
        ),
        "none": "没有 GPU",
        # describe_machine()'s words, the CPU model and its kernels stay as they are.
        "cpu_only": (r"^CPU only, (\d+) cores?", r"仅 CPU，\1 核"),
        "some": "只有 {n} 块 GPU",
    },
}


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
    text = TEXT[app.config.site_language]
    facts = dict(app.env.gpukit_facts)
    if "cpu_only" in text:
        facts["machine"] = re.sub(*text["cpu_only"], facts["machine"])
    metadata = app.env.metadata.get(pagename, {})
    executed = "kernelspec" in metadata
    context["provenance"] = text["line" if executed else "site_line"].format(**facts)
    wanted = gpus_wanted(metadata)
    found = gpukit.num_gpus()
    if wanted > found:
        found_text = text["none"] if found == 0 else text["some"].format(n=found)
        s = "s" if wanted > 1 else ""
        context["provenance_notice"] = text["notice"].format(wanted=wanted, s=s, found=found_text)


ROW_NAMES = {
    "en": {"hardware": "Hardware", "profile": "Profile", "built": "Built"},
    "zh": {"hardware": "硬件", "profile": "执行配置", "built": "构建日期"},
}


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
        names = ROW_NAMES[self.config.site_language]
        facts = self.env.gpukit_facts
        rows = [
            (names["hardware"], facts["machine"]),
            (names["profile"], gpukit.current_profile().describe()),
            ("Python", platform.python_version()),
            ("PyTorch", torch.__version__),
            ("CUDA", torch.version.cuda or "—"),
            ("cuDNN", str(torch.backends.cudnn.version() or "—")),
        ]
        rows += [(name, version(name)) for name in ("sphinx", "myst-nb", "jupyter-cache", "furo")]
        rows.append((names["built"], facts["date"]))
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
