"""Say on every page which machine, software and profile produced its outputs.

The facts are gathered once per build (the same machine executes every page: the execution
cache is keyed by hardware and profile). Pages declare in their front matter how many GPUs their
full run wants (``gpus: 2``). A page built on a machine with fewer gets a visible notice, so a
CPU build is never mistaken for a GPU one; and a build started with ``GPUKIT_REQUIRE_GPUS=1``
(``nox -s docs -- --require-gpus``) fails within seconds instead, before executing anything,
naming the pages: a GPU build is never silently a CPU one.

The About page shows them in full: ``{build-info}``, a table of this build's hardware and
software (read again by every build: the facts are not in the page's source), and myst-nb's
execution table (``{nb-exec-table}``), which myst-nb writes in English with an emoji status
(✅/❌, an empty box where no emoji font is installed). We build that table just before myst-nb
would, its words translated through the gettext catalog (conf/locales), the status as a word.

gpukit speaks English (its phrases are page outputs, shared by both languages). The site says
the machine (``gpukit.describe_machine()``) and the profile's workloads in the build's language:
``machine_in_language`` reads the machine phrase back by its documented shape and says it again
through the catalog; a Chinese build writes 「仅 CPU，2 核（AMD EPYC 7B13，AVX2 核函数）」.
"""

import datetime as dt
import os
import platform
import re
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import torch
import yaml
from docutils import nodes
from myst_nb.ext.execution_tables import ExecutionStatsNode, make_stat_table
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.errors import ConfigError
from sphinx.locale import _
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

import gpukit

REQUIRE_GPUS = "GPUKIT_REQUIRE_GPUS"
# The shapes of gpukit.describe_machine()'s phrase: "CPU only, 2 cores (AMD EPYC 7B13, AVX2
# kernels[, ONEDNN_MAX_CPU_ISA=SSE41])" and "2 x NVIDIA H200 (CUDA 13.0)" (" + " between models).
CPU_MACHINE = re.compile(r"^CPU only, (?P<cores>\d+) cores? \((?P<details>.*)\)$")
GPU_MACHINE = re.compile(r"^(?P<gpus>\d+ x .+) \(CUDA (?P<cuda>[^()]*)\)$")
GPU_MODEL = re.compile(r"^(?P<n>\d+) x (?P<name>.+)$")
KERNELS = re.compile(r"^(?P<isa>\S+) kernels$")
# The templates the catalog translates; where it does not (English), gpukit's phrase stays.
CPU_TEMPLATE, GPU_TEMPLATE = "CPU only, {cores} cores ({details})", "{gpus} (CUDA {cuda})"
WORKLOAD_TEMPLATE = (
    "{name}: {n_train:,} training / {n_test:,} test images, batch {batch_size}, lr {lr:g}"
    "{schedule}, {epochs} epochs"
)
# The words of myst-nb's execution table (headers, methods, status) and what we write instead.
HEADERS = ("Document", "Modified", "Method", "Run Time (s)", "Status")
STATUS = {"✅": "done", "❌": "failed"}
EXEC_TABLE = {w: w for w in (*HEADERS, "cache", "auto", "force", "inline")} | STATUS


def gpus_wanted(path: Path) -> int:
    """The GPUs a page's full run wants: ``gpus`` in its YAML front matter, 0 if none."""
    found = re.match(r"---\n(.*?)\n---", path.read_text(encoding="utf-8"), re.DOTALL)
    gpus = ((yaml.safe_load(found[1]) if found else None) or {}).get("gpus", 0)
    if not isinstance(gpus, int) or gpus < 0:
        raise ConfigError(f"{path}: front matter 'gpus' must be an integer >= 0, got {gpus!r}")
    return gpus


def list_table(rows: list[tuple[str, ...]], classes: str = "", header: bool = True) -> str:
    """A MyST ``{list-table}`` of ``rows`` (each cell MyST text), for a directive to parse."""
    lines = ["::::{list-table}", ":widths: auto", f":header-rows: {int(header)}"]
    if classes:
        lines.append(f":class: {classes}")
    for first, *others in rows:
        lines += [f"* - {first}", *(f"  - {cell}" for cell in others)]
    return "\n".join([*lines, "::::"])


def check_gpus(app, config) -> None:
    if os.environ.get(REQUIRE_GPUS, "") in ("", "0"):
        return
    found, srcdir = gpukit.num_gpus(), Path(app.srcdir)
    # Relative: a checkout that happens to sit under a folder named _build is still read.
    pages = (p.relative_to(srcdir) for p in sorted(srcdir.rglob("*.md")))
    wanted = {page: gpus_wanted(srcdir / page) for page in pages if "_build" not in page.parts}
    short = "".join(f"\n  {p.as_posix()}: wants {n} GPU(s)" for p, n in wanted.items() if n > found)
    if short:
        # SystemExit, not a SphinxError: Sphinx would bury the message under a crash report
        # that asks the reader to file a Sphinx bug.
        raise SystemExit(
            f"GPU guard: this build requires GPUs ({REQUIRE_GPUS} is set), but the machine has "
            f"{found} ({gpukit.describe_machine()}); these pages want more:{short}\n"
            "Build on a machine with enough GPUs, or drop --require-gpus for a build whose "
            "pages say they ran on fewer devices."
        )


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


def workload_in_language(workload: gpukit.Workload, translate: Callable[[str], str] = _) -> str:
    """``workload.describe()`` in the build's language (English: as gpukit writes it)."""
    if translate(WORKLOAD_TEMPLATE) == WORKLOAD_TEMPLATE:
        return workload.describe()
    schedule = gpukit.SCHEDULES[workload.schedule]
    return translate(WORKLOAD_TEMPLATE).format(
        name=workload.name,
        n_train=workload.n_train or 60_000,
        n_test=workload.n_test or 10_000,
        batch_size=workload.batch_size,
        lr=workload.lr,
        schedule=translate(" ({schedule})").format(schedule=translate(schedule))
        if schedule
        else "",
        epochs=workload.epochs,
    )


def add_provenance(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The provenance line in the build's language (conf/locales holds the translations), and
    what a reader must know about a page built with fewer GPUs than it is written for."""
    facts, metadata = dict(app.env.gpukit_facts), app.env.metadata.get(pagename, {})
    facts["profile"] = _("profile " + facts["profile"])
    facts["machine"] = machine_in_language(facts["machine"])
    if "kernelspec" in metadata:
        line = _("Outputs on this page: {machine}, PyTorch {torch}, {profile}, built {date}.")
    else:
        line = _("This build: {machine}, PyTorch {torch}, {profile}, built {date}.")
    context["provenance"] = line.format(**facts)
    wanted, found = int(metadata.get("gpus", 0)), gpukit.num_gpus()
    if wanted > found:
        found_text = _("no GPU") if found == 0 else _("only {n} GPU(s)").format(n=found)
        context["provenance_notice"] = _(
            "This page is written for {wanted} GPU(s); the machine that built it has {found}. "
            "Its code ran all the same, on the devices this machine has, so the times below are "
            "this machine's. The text says what a machine with {wanted} GPU(s) shows."
        ).format(wanted=wanted, found=found_text)


class BuildInfo(SphinxDirective):
    """``{build-info}``: a table of the hardware and software versions of this build."""

    def run(self) -> list[nodes.Node]:
        facts, profile = self.env.gpukit_facts, gpukit.current_profile()
        workloads = [workload_in_language(w) for w in (profile.lenet, profile.resnet)]
        name = _("profile " + profile.name)  # English: the name alone
        name = profile.name if name == "profile " + profile.name else name
        runs = _("{profile}: {workloads}").format(profile=name, workloads=_("; ").join(workloads))
        rows = [
            (_("Hardware"), machine_in_language(facts["machine"])),
            (_("Profile"), runs),
            ("Python", platform.python_version()),
            ("PyTorch", torch.__version__),
            ("CUDA", torch.version.cuda or "—"),
            ("cuDNN", str(torch.backends.cudnn.version() or "—")),
        ]
        rows += [(name, version(name)) for name in ("sphinx", "myst-nb", "jupyter-cache", "furo")]
        rows.append((_("Built"), facts["date"]))
        self.env.note_reread()  # the facts are this build's
        return self.parse_text_to_nodes(list_table([(n, f"`{v}`") for n, v in rows], header=False))


class ExecTableInLanguage(SphinxPostTransform):
    default_priority = 7  # before myst-nb's ExecutionStatsPostTransform (8)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(ExecutionStatsNode)):
            table = make_stat_table(self.env.docname, NbMetadataCollector.get_doc_data(self.env))
            for text in list(table.findall(nodes.Text)):  # its words in the build's language
                if str(text) in EXEC_TABLE:
                    text.parent.replace(text, nodes.Text(_(EXEC_TABLE[str(text)])))
            node.replace_self(table)


def setup(app):
    app.connect("config-inited", check_gpus)
    app.connect("builder-inited", remember_facts)
    app.connect("html-page-context", add_provenance)
    app.add_directive("build-info", BuildInfo)
    app.add_post_transform(ExecTableInLanguage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
