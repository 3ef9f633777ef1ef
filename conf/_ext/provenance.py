"""Say on every page which machine, software and profile produced its outputs.

The facts are gathered once per build (the same machine executes every page: the execution
cache is keyed by hardware and profile) and shown in a line at the top of every page; the
About page (conf/_ext/about.py) shows them in full.

gpukit speaks English (its phrases are page outputs, shared by both languages). The site says
the machine (``gpukit.describe_machine()``) in the build's language: ``machine_in_language``
reads the machine phrase back by its documented shape and says it again through the catalog
(conf/locales); a Chinese build writes 「仅 CPU，2 核（AMD EPYC 7B13，AVX2 核函数）」.
"""

import datetime as dt
import os
import re
from collections.abc import Callable

import torch
from sphinx.locale import _

import gpukit

# The shapes of gpukit.describe_machine()'s phrase: "CPU only, 2 cores (AMD EPYC 7B13, AVX2
# kernels[, ONEDNN_MAX_CPU_ISA=SSE41])" and "2 x NVIDIA H200 (CUDA 13.0)" (" + " between models).
CPU_MACHINE = re.compile(r"^CPU only, (?P<cores>\d+) cores? \((?P<details>.*)\)$")
GPU_MACHINE = re.compile(r"^(?P<gpus>\d+ x .+) \(CUDA (?P<cuda>[^()]*)\)$")
GPU_MODEL = re.compile(r"^(?P<n>\d+) x (?P<name>.+)$")
KERNELS = re.compile(r"^(?P<isa>\S+) kernels$")
# The templates the catalog translates; where it does not (English), gpukit's phrase stays.
CPU_TEMPLATE = "CPU only, {cores} cores ({details})"
GPU_TEMPLATE = "{gpus} (CUDA {cuda})"
# The catalog's words for each profile, one entry per profile: a profile without one fails here.
PROFILE_NAMES = {"quick": "profile quick", "full": "profile full"}


def remember_facts(app) -> None:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    today = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    app.env.gpukit_facts = {
        "machine": gpukit.describe_machine(),
        "torch": torch.__version__.split("+")[0],
        "profile": gpukit.current_profile().name,
        "date": today.date().isoformat(),
    }


def machine_in_language(machine: str, translate: Callable[[str], str] = _) -> str:
    """``gpukit.describe_machine()``'s phrase in the build's language (``translate``: the
    catalog's, Sphinx's ``_``). English, and a phrase of another shape, stay as they are; the
    CPU model, GPU names and settings are names, and stay too.

    >>> zh = {CPU_TEMPLATE: "仅 CPU，{cores} 核（{details}）", "{isa} kernels": "{isa} 核函数",
    ...       ", ": "，", GPU_TEMPLATE: "{gpus}（CUDA {cuda}）", "{n} x {name}": "{n} 块 {name}"}
    >>> machine_in_language("CPU only, 2 cores (AMD EPYC 7B13, AVX2 kernels)", zh.get)
    '仅 CPU，2 核（AMD EPYC 7B13，AVX2 核函数）'
    >>> machine_in_language("1 x NVIDIA H100 + 1 x NVIDIA H200 (CUDA 13.0)", zh.get)
    '1 块 NVIDIA H100 + 1 块 NVIDIA H200（CUDA 13.0）'
    >>> machine_in_language("CPU only, 1 core (x, AVX2 kernels)", lambda text: text)
    'CPU only, 1 core (x, AVX2 kernels)'
    """
    if (cpu := CPU_MACHINE.match(machine)) and translate(CPU_TEMPLATE) != CPU_TEMPLATE:
        kernels = translate("{isa} kernels")
        details = [
            kernels.format(isa=m["isa"]) if (m := KERNELS.match(d)) else d
            for d in cpu["details"].split(", ")
        ]
        details_text = translate(", ").join(details)
        return translate(CPU_TEMPLATE).format(cores=cpu["cores"], details=details_text)
    if (gpu := GPU_MACHINE.match(machine)) and translate(GPU_TEMPLATE) != GPU_TEMPLATE:
        models = [GPU_MODEL.match(g) for g in gpu["gpus"].split(" + ")]
        if all(models):
            gpus = " + ".join(translate("{n} x {name}").format(**m.groupdict()) for m in models)
            return translate(GPU_TEMPLATE).format(gpus=gpus, cuda=gpu["cuda"])
    return machine


def profile_in_language(name: str) -> str:
    """``"profile quick"`` in the build's language, e.g. 「快速配置」."""
    return _(PROFILE_NAMES[name])


def add_provenance(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The provenance line in the build's language (conf/locales holds the translations)."""
    facts = dict(app.env.gpukit_facts)
    facts["profile"] = profile_in_language(facts["profile"])
    facts["machine"] = machine_in_language(facts["machine"])
    if "kernelspec" in app.env.metadata.get(pagename, {}):
        line = _("Outputs on this page: {machine}, PyTorch {torch}, {profile}, built {date}.")
    else:
        line = _("This build: {machine}, PyTorch {torch}, {profile}, built {date}.")
    context["provenance"] = line.format(**facts)


def setup(app):
    app.connect("builder-inited", remember_facts)
    app.connect("html-page-context", add_provenance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
