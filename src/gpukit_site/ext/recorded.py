"""Show other machines' recorded runs beside this build's outputs (gpukit_site.recordings).

Under each executed cell, the output each recording in ``docs/recordings/<kind>/`` holds for
it, collapsed in a ``<details>`` (no script) and labelled with its machine, e.g. "1 x NVIDIA
H200, PyTorch 2.11, CUDA 13.0, profile quick, recorded 2026-12-10 at abc1234": only where the
cell's source hash is the one recorded, so a changed cell shows no old output. Pages need no
change. ``{recordings}`` lists them (the About page).

``{recorded}`kind:page:name``` (optionally ``:format``, as ``{glue:text}``) quotes a value the
page glued on that machine, followed by the machine's name. It belongs in that machine's
``{case}`` (gpukit_site.ext.machine_cases): anywhere else, or from a cell changed since the
recording, it is a build warning (an error under -W).

The recordings are read once per build. A changed recording rewrites every page (a config
value with their hash) without reading any again: the outputs are placed while writing.
"""

import hashlib
import json
from html import escape
from pathlib import Path

from docutils import nodes
from myst_nb.core.variables import format_plain_text
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from gpukit_site.ext.machine_cases import CASES, details
from gpukit_site.ext.provenance import profile_in_language
from gpukit_site.recordings import FILE, cell_hash, load  # the format, its writers

logger = logging.getLogger(__name__)
RECORDINGS: dict[str, dict] = {}  # kind of machine -> its recording, read once per build


def recordings_folder(app) -> Path:
    return Path(app.config.recordings_dir or Path(app.srcdir).parent / "recordings")


def load_recordings(app, config) -> None:
    """Read every recording once; their hash is a config value that rewrites every page."""
    RECORDINGS.clear()
    for path in sorted(recordings_folder(app).glob(f"*/{FILE}")):
        RECORDINGS[path.parent.name] = load(path)  # a hand-edited one fails, named
    app.recordings = RECORDINGS
    digest = hashlib.sha256(json.dumps(app.recordings, sort_keys=True).encode()).hexdigest()
    config.recordings_hash = digest[:16]


def machine_name(provenance: dict) -> str:
    """The recording's machine: its GPUs, or the CPU with its kernels and the lowering."""
    gpus = provenance["gpus"]
    if gpus:
        models = [_("{n} x {name}").format(n=gpus.count(m), name=m) for m in dict.fromkeys(gpus)]
        return " + ".join(models)
    lowered = [f"{k}={v}" for k, v in provenance.get("lowered", {}).items()]
    kernels = _("{isa} kernels").format(isa=provenance.get("cpu_capability"))
    cpu = _(", ").join(filter(None, [provenance.get("cpu"), kernels, *lowered]))
    return _("CPU only ({cpu})").format(cpu=cpu)


def label(provenance: dict) -> str:
    """The machine, software, profile, date and commit of a recording, in the build's language:
    "1 x NVIDIA H200, PyTorch 2.11, CUDA 13.0, profile quick, recorded 2026-12-10 at abc1234"."""
    facts = {
        "machine": machine_name(provenance),
        "torch": ".".join(provenance["torch"].split("+")[0].split(".")[:2]),
        "cuda": provenance.get("cuda"),
        "profile": profile_in_language(provenance["profile"]),
        "date": provenance["date"],
        "commit": provenance["commit"] or "?",
    }
    if provenance["gpus"]:
        line = _("{machine}, PyTorch {torch}, CUDA {cuda}, {profile}, recorded {date} at {commit}")
    else:
        line = _("{machine}, PyTorch {torch}, {profile}, recorded {date} at {commit}")
    return line.format(**facts)


def case_of(provenance: dict) -> str:
    """The ``{case}`` kind of the recording's machine: cpu, gpu or gpus."""
    return CASES[min(len(provenance["gpus"]), 2)]


# -- Reading: each code cell's hash, from the notebook myst-nb executed -----------------------
def note_cells(app, doctree) -> None:
    notebook = Path(app.env.mystnb_config.output_folder) / f"{app.env.docname}.ipynb"
    cells = [n for n in doctree.findall(nodes.container) if n.get("nb_element") == "cell_code"]
    if not cells or not notebook.is_file():
        return
    sources = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    hashes = {}
    for index, cell in enumerate(sources):
        if cell["cell_type"] == "code":
            hashes[index] = cell_hash("".join(cell["source"]))
    for node in cells:
        node["recorded_hash"] = hashes.get(node["cell_index"])
    app.env.recorded_cells = getattr(app.env, "recorded_cells", {})
    app.env.recorded_cells[app.env.docname] = list(hashes.values())


def purge(app, env, docname: str) -> None:
    getattr(env, "recorded_cells", {}).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    env.recorded_cells = getattr(env, "recorded_cells", {})
    for docname in docnames:
        if docname in getattr(other, "recorded_cells", {}):
            env.recorded_cells[docname] = other.recorded_cells[docname]


# -- Writing: the recorded outputs under each cell --------------------------------------------
def output_nodes(app, docname: str, output: dict, name: str) -> list[nodes.Node]:
    if "svg" in output:
        digest = hashlib.sha256(output["svg"].encode()).hexdigest()[:16]
        images = Path(app.outdir) / "_images"
        images.mkdir(parents=True, exist_ok=True)
        (images / f"recorded-{digest}.svg").write_text(output["svg"], encoding="utf-8")
        src = "../" * docname.count("/") + f"_images/recorded-{digest}.svg"
        alt = escape(_("The figure as recorded on {machine}").format(machine=name))
        html = f'<img src="{src}" alt="{alt}" loading="lazy" class="recorded-figure">'
        return [nodes.raw("", html, format="html")]
    text = output.get("text", output.get("error", output.get("dropped")))
    if "dropped" in output:
        text = _("(not kept in the recording: {why})").format(why=text)
    if "glue" in output or not text:
        return []
    block = nodes.literal_block(text, text, classes=["output", "recorded-output"])
    block["language"] = "none"
    return [block]


def add_recorded_outputs(app, doctree, docname: str) -> None:
    """Under each cell, one collapsed block per recording that ran this very source."""
    found: dict[str, dict[str, list[list[dict]]]] = {}  # kind -> hash -> outputs, in order
    for kind, recording in sorted(app.recordings.items()):
        for cell in recording["pages"].get(docname, []):
            found.setdefault(kind, {}).setdefault(cell["hash"], []).append(cell["outputs"])
    seen: dict[str, int] = {}
    for node in [n for n in doctree.findall(nodes.container) if n.get("recorded_hash")]:
        h = node["recorded_hash"]
        n = seen[h] = seen.get(h, -1) + 1  # a source that occurs twice: in order
        if "remove-output" in node.get("cell_metadata", {}).get("tags", []):
            continue
        blocks = []
        for kind, by_hash in found.items():
            if n >= len(by_hash.get(h, [])):
                continue
            name = label(app.recordings[kind]["provenance"])
            shown = [x for o in by_hash[h][n] for x in output_nodes(app, docname, o, name)]
            if shown:
                summary = _("Recorded on {machine}").format(machine=name)
                classes = ["recorded", f"recorded-{kind}"]
                blocks.append(details("", *shown, summary=summary, classes=classes))
        index = node.parent.index(node) + 1
        node.parent[index:index] = blocks


# -- The {recorded} role and the {recordings} list --------------------------------------------
class recorded_value(nodes.Inline, nodes.TextElement):
    """A recorded glued value, resolved while writing (the recordings may change alone)."""


class RecordedRole(SphinxRole):
    """``{recorded}`kind:page:name[:format]```: a value the page glued on that machine."""

    def run(self):
        parts = self.text.split(":", 3)
        if len(parts) < 3:
            msg = f"{{recorded}} wants kind:page:name[:format], got {self.text!r}"
            return [], [self.inliner.reporter.error(msg, line=self.lineno)]
        node = recorded_value(self.rawtext, self.text, address=parts)
        self.set_source_info(node)
        return [node], []


def resolve_values(app, doctree, docname: str) -> None:
    for node in list(doctree.findall(recorded_value)):
        kind, page, name, *fmt = node["address"]
        text, problem = resolve(app, kind, page, name, fmt[0] if fmt else "")
        problem = problem or outside_case(node, case_of(app.recordings[kind]["provenance"]))
        if problem:
            logger.warning(f"{{recorded}}`{node.astext()}`: {problem}", location=node)
        node.replace_self(nodes.inline("", text or node.astext(), classes=["recorded-value"]))


def outside_case(node: nodes.Node, wanted: str) -> str | None:
    """Why ``node`` may not quote a value of a ``wanted`` machine there; None where it may."""
    parent = node.parent
    while parent is not None:
        if wanted in (parent.get("machine_case") or []):
            return None
        parent = parent.parent
    return f"quote it inside the {{case}} {wanted} of {{machine-cases}}, the machine it names"


def resolve(app, kind: str, page: str, name: str, fmt: str) -> tuple[str | None, str | None]:
    """The value as the prose shows it, or why there is none."""
    recording = app.recordings.get(kind)
    if recording is None:
        return None, f"no recording {kind!r} in {recordings_folder(app)}"
    for cell in recording["pages"].get(page, []):
        for output in cell["outputs"]:
            if output.get("glue") != name:
                continue
            if cell["hash"] not in getattr(app.env, "recorded_cells", {}).get(page, []):
                return None, f"the cell of {page} that glues {name!r} changed since {kind} ran it"
            value = format_plain_text(output["text"], fmt or "s")
            machine = machine_name(recording["provenance"])
            return _("{value} ({machine})").format(value=value, machine=machine), None
    return None, f"the recording {kind!r} holds no value glued as {name!r} on the page {page!r}"


class Recordings(SphinxDirective):
    """``{recordings}``: the recorded runs this build shows, one line each."""

    def run(self) -> list[nodes.Node]:
        recordings = RECORDINGS
        if not recordings:
            return [nodes.paragraph("", _("This build shows no recorded run."))]
        items = nodes.bullet_list()
        for _kind, recording in sorted(recordings.items()):
            pages = len(recording["pages"])
            cells = sum(len(c) for c in recording["pages"].values())
            text = _("{label}: {cells} cells of {pages} page(s)").format(
                label=label(recording["provenance"]), pages=pages, cells=cells
            )
            items += nodes.list_item("", nodes.paragraph("", text))
        self.env.note_reread()  # the list is this build's
        return [items]


def setup(app):
    app.add_config_value("recordings_dir", "", "env", types=[str])
    # Set from the recordings themselves (load_recordings): a change rewrites every page.
    app.add_config_value("recordings_hash", "", "html", types=[str])
    app.connect("config-inited", load_recordings)
    app.connect("doctree-read", note_cells)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("doctree-resolved", add_recorded_outputs)
    app.connect("doctree-resolved", resolve_values)
    app.add_node(recorded_value)
    app.add_role("recorded", RecordedRole())
    app.add_directive("recordings", Recordings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
