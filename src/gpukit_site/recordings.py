"""Recorded runs: the outputs of every page's code cells from one run on one machine.

A recording is one JSON file, ``recording.json``::

    {"format": "gpukit-recording/1",
     "provenance": {"kind": "1x-nvidia-h200", "gpus": ["NVIDIA H200"], "torch": "2.11.0", ...},
     "dropped": ["memory cell 7: a figure of 2150 KiB, over the budget of 3 MiB"],
     "pages": {"memory": [{"hash": "3f2a...", "outputs": [{"text": "..."}, {"svg": "<svg..."}]}]}}

One entry per code cell, in the page's order; ``hash`` is the hash of the cell's source
(:func:`cell_hash`), so the site shows a recorded output only while the cell is unchanged.
An output is ``{"text": ...}`` (a stream or a plain-text result), ``{"svg": ...}`` (a figure,
the SVG the page made), ``{"error": ...}`` (the error as the page shows it), ``{"glue": name,
"text": ...}`` (a value the page glued, for the ``{recorded}`` role) or ``{"dropped": why}``.

Writers: the GPU check's ``run`` (into its ``--out`` folder), ``nox -s docs -- --record``
and ``python -m gpukit_site.recordings write OUT`` (from the last docs build's execution cache).
``nox -s record -- PATH`` (``python -m gpukit_site.recordings import PATH``) imports one into
``docs/recordings/<kind>/recording.json``, replacing the previous one of that kind of machine;
``gpukit_site.ext.recorded`` shows them on the site.

Importing needs only the standard library; collecting the provenance needs torch, and writing
from a docs build myst-nb and jupyter-cache (the docs environment).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORMAT = "gpukit-recording/1"
FILE = "recording.json"
FOLDER = ROOT / "docs" / "recordings"  # one folder per kind of machine
BUDGET = 3 * 2**20  # bytes of one recording, all pages
KIND = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OUTPUT_KEYS = ("text", "svg", "error", "glue", "dropped")
# The variables that lower a CPU's kernels (DESIGN.md): a recording says which were set.
LOWERING = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
PROVENANCE_KEYS = ("kind", "gpus", "torch", "python", "profile", "date", "commit")


def cell_hash(source: str) -> str:
    """The hash that ties a recorded output to its cell's source; trailing blanks and blank
    lines around the code do not count (readers of MyST differ there).

    >>> cell_hash("print(1)\\n") == cell_hash("print(1)  ")
    True
    >>> cell_hash("print(1)") == cell_hash("print(2)")
    False
    """
    text = "\n".join(line.rstrip() for line in source.strip("\n").splitlines())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- Provenance (on the machine that ran the pages) -----------------------------------------
def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def machine_kind(provenance: dict) -> str:
    """The folder a recording goes to: its GPUs, or a CPU's kernel level.

    >>> machine_kind({"gpus": ["NVIDIA H200"]})
    '1x-nvidia-h200'
    >>> machine_kind({"gpus": [], "cpu_capability": "DEFAULT"})
    'cpu-default'
    """
    gpus = provenance["gpus"]
    if gpus:
        names = dict.fromkeys(gpus)
        return "-".join(f"{gpus.count(name)}x-{slug(name)}" for name in names)[:63]
    return f"cpu-{slug(provenance.get('cpu_capability') or 'unknown')}"


def run_text(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):  # missing, or hung (a stuck nvidia-smi)
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")  # Linux; platform.processor() is often empty there
    text = cpuinfo.read_text(errors="replace") if cpuinfo.is_file() else ""
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found[1].strip() if found else platform.processor() or platform.machine()


def collect_provenance(profile: str) -> dict:
    """This machine, read directly from torch, nvidia-smi and git (in the Python and the
    environment that ran the pages: lowered CPU kernels count)."""
    import torch

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    driver = run_text(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = None
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    commit = run_text(["git", "-C", str(ROOT), "rev-parse", "--short=7", "HEAD"])
    status = run_text(["git", "-C", str(ROOT), "status", "--porcelain", "--", "docs", "src"])
    provenance = {
        "gpus": gpus,
        "driver": driver.splitlines()[0] if driver else None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "lowered": {k: os.environ[k] for k in LOWERING if os.environ.get(k)},
        "profile": profile,
        "date": now.date().isoformat(),
        "commit": commit,
        "uncommitted_changes": bool(status),
    }
    return {"kind": machine_kind(provenance)} | provenance


# -- Writing --------------------------------------------------------------------------------
def outputs_of(cell: dict) -> tuple[list[dict], list[str]]:
    """A notebook code cell's outputs in the recording's form, and what had no such form."""
    kept: list[dict] = []
    left: list[str] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        data = output.get("data", {})
        glued = output.get("metadata", {}).get("scrapbook", {})
        if kind == "stream":
            text = ANSI.sub("", "".join(output.get("text", "")))
            if kept and "text" in kept[-1] and len(kept[-1]) == 1:  # one block, as on the page
                kept[-1]["text"] += text
            else:
                kept.append({"text": text})
        elif kind == "error":
            kept.append({"error": ANSI.sub("", "\n".join(output.get("traceback", [])))})
        elif glued.get("name"):  # myst-nb's glue: display data named in its metadata
            text = data.get(glued.get("mime_prefix", "") + "text/plain", "")
            kept.append({"glue": glued["name"], "text": "".join(text)})
        elif "image/svg+xml" in data:
            kept.append({"svg": "".join(data["image/svg+xml"])})
        elif "text/plain" in data:
            kept.append({"text": "".join(data["text/plain"])})
        else:
            left.append(", ".join(sorted(data)) or kind)
    return kept, left


def from_notebook(notebook: dict, page: str) -> tuple[list[dict], list[str]]:
    """A page's cells for a recording, from its executed notebook (nbformat's JSON)."""
    cells = []
    dropped = []
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    for n, cell in enumerate(code, start=1):
        source = "".join(cell["source"])
        outputs, left = outputs_of(cell)
        for what in left:
            outputs.append({"dropped": f"an output of type {what}"})
            dropped.append(f"{page} cell {n}: an output of type {what} (no text or SVG form)")
        cells.append({"hash": cell_hash(source), "outputs": outputs})
    return cells, dropped


def encode(recording: dict) -> bytes:
    return (json.dumps(recording, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def fit(recording: dict, budget: int = BUDGET) -> dict:
    """Drop the largest outputs until ``recording`` fits ``budget`` bytes; say each in
    ``recording["dropped"]``."""
    size = len(encode(recording))
    found = [
        (len(json.dumps(o, ensure_ascii=False).encode()), page, n, o)
        for page, cells in recording["pages"].items()
        for n, cell in enumerate(cells)
        for o in cell["outputs"]
        if "dropped" not in o and "glue" not in o
    ]
    for weight, page, n, output in sorted(found, key=lambda f: -f[0]):
        if size <= budget:
            break
        what = "a figure" if "svg" in output else "an output"
        why = f"{what} of {weight / 1024:.0f} KiB, over the budget of {budget / 2**20:g} MiB"
        output.clear()
        output["dropped"] = why
        recording["dropped"].append(f"{page} cell {n + 1}: {why}")
        size = len(encode(recording))
    return recording


def write(out: Path, provenance: dict, pages: dict[str, list[dict]], dropped: list[str]) -> dict:
    """Write ``out/recording.json`` within the budget: its path, size and what was dropped."""
    recording = {"format": FORMAT, "provenance": provenance, "dropped": list(dropped)}
    recording = fit(recording | {"pages": pages})
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE
    path.write_bytes(encode(recording))
    return {"path": str(path), "bytes": path.stat().st_size, "dropped": recording["dropped"]}


def said(written: dict) -> str:
    """What :func:`write` wrote, in words."""
    lines = [f"recording: {written['path']} ({written['bytes'] / 1024:.0f} KiB)"]
    return "\n".join(lines + [f"  dropped {line}" for line in written["dropped"]])


def write_from_cache(docs: Path, cache: Path, out: Path, profile: str) -> dict:
    """A recording of this machine from a docs build: each executed page of ``docs`` with its
    outputs from the build's jupyter-cache at ``cache`` (myst-nb's notebooks in jupyter_execute
    lack the glued values). A page the cache does not hold, as it is now, is left out."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    store = get_cache(str(cache))
    pages: dict[str, list[dict]] = {}
    dropped: list[str] = []
    for page in sorted(executed_pages(docs)):
        notebook = read_myst_markdown_notebook((docs / f"{page}.md").read_text(encoding="utf-8"))
        try:
            _, executed = store.merge_match_into_notebook(notebook)
        except KeyError:
            dropped.append(f"{page}: not in {cache} as it is now (build the docs first)")
            continue
        pages[page], left = from_notebook(executed, page)
        dropped += left
    if not pages:
        raise SystemExit(f"no executed page in {cache}: run `nox -s docs` first")
    return write(out, collect_provenance(profile), pages, dropped)


# -- Reading and importing ------------------------------------------------------------------
class RecordingError(ValueError):
    """A recording that cannot be imported; the message names the problem."""


def load(path: Path) -> dict:
    """A recording from ``path``: its recording.json, a folder holding one (e.g. the GPU
    check's --out folder) or a .zip holding one (the GPU workflow's artifact)."""
    path = Path(path)
    if path.is_dir():
        found = sorted(path.rglob(FILE))
        if len(found) != 1:
            raise RecordingError(f"{path}: expected one {FILE} in the folder, found {len(found)}")
        path = found[0]
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                names = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == FILE]
                if len(names) != 1:
                    raise RecordingError(f"{path}: expected one {FILE} in the zip file")
                raw = z.read(names[0])
        else:
            raw = path.read_bytes()
        recording = json.loads(raw)
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordingError(f"{path}: not a readable recording ({err})") from err
    if len(raw) > BUDGET:
        raise RecordingError(
            f"{path}: {len(raw) / 2**20:.1f} MiB, over the budget of {BUDGET / 2**20:g} MiB "
            "(its writer drops the largest outputs to fit: was it edited?)"
        )
    validate(recording, str(path))
    return recording


def validate(recording: dict, name: str = "recording") -> None:
    """RecordingError naming the first part of ``recording`` that is not as described above."""

    def bad(where: str, what: str) -> RecordingError:
        return RecordingError(f"{name}: malformed: {where} {what}")

    if not isinstance(recording, dict) or recording.get("format") != FORMAT:
        raise bad("format", f"is not {FORMAT!r}")
    provenance = recording.get("provenance")
    if not isinstance(provenance, dict):
        raise bad("provenance", "is missing")
    missing = [k for k in PROVENANCE_KEYS if k not in provenance]
    if missing:
        raise bad("provenance", f"lacks {', '.join(missing)}")
    if not isinstance(provenance["kind"], str) or not KIND.match(provenance["kind"]):
        raise bad("provenance.kind", "is not a short lower-case name (a-z, 0-9, -)")
    if not isinstance(recording.get("dropped", []), list):
        raise bad("dropped", "is not a list")
    pages = recording.get("pages")
    if not isinstance(pages, dict) or not pages:
        raise bad("pages", "is missing or empty")
    for page, cells in pages.items():
        if not isinstance(cells, list):
            raise bad(f"pages.{page}", "is not a list of cells")
        for n, cell in enumerate(cells):
            where = f"pages.{page}[{n}]"
            if not isinstance(cell, dict) or not isinstance(cell.get("hash"), str):
                raise bad(where, "has no hash")
            if not isinstance(cell.get("outputs"), list):
                raise bad(where, "has no list of outputs")
            for m, output in enumerate(cell["outputs"]):
                keys = [k for k in OUTPUT_KEYS if isinstance(output, dict) and k in output]
                if not keys or not all(isinstance(output[k], str) for k in keys):
                    raise bad(f"{where}.outputs[{m}]", f"is none of {', '.join(OUTPUT_KEYS)}")


def executed_pages(docs: Path) -> set[str]:
    """The names of the executed pages (MyST-NB notebooks) under ``docs``."""
    return {
        p.relative_to(docs).with_suffix("").as_posix()
        for p in docs.rglob("*.md")
        if re.search(r"^file_format: mystnb$", p.read_text(encoding="utf-8")[:2000], re.M)
    }


def import_recording(path: Path, docs: Path = ROOT / "docs" / "en", folder: Path = FOLDER) -> Path:
    """Check the recording at ``path`` and make it ``folder/<kind>/recording.json``, replacing
    that kind's previous one; nothing is changed when it is refused."""
    recording = load(path)
    unknown = sorted(set(recording["pages"]) - executed_pages(docs))
    if unknown:
        raise RecordingError(
            f"{path}: pages this repository does not have (no executed page of that name in "
            f"{docs}): {', '.join(unknown)}"
        )
    kind = recording["provenance"]["kind"]
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=folder))
    (staging / FILE).write_bytes(encode(recording))
    target = folder / kind
    old = folder / f".{kind}-replaced"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staging.rename(target)  # one rename: the kind's folder is the old one or the new one
    shutil.rmtree(old, ignore_errors=True)
    return target / FILE


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gpukit_site.recordings", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import", help="import a recording into docs/recordings")
    imp.add_argument("path", type=Path, help="recording.json, a folder or a .zip holding one")
    out = commands.add_parser("write", help="record this machine from the last docs build")
    out.add_argument("out", type=Path, help="the folder to write recording.json into")
    out.add_argument("--docs", type=Path, default=ROOT / "docs" / "en")
    out.add_argument("--cache", type=Path, help="default: the docs build's jupyter-cache")
    prov = commands.add_parser("provenance", help=argparse.SUPPRESS)
    prov.add_argument("--profile", required=True)
    args = parser.parse_args(argv)
    if args.command == "provenance":
        print(json.dumps(collect_provenance(args.profile)))
        return 0
    if args.command == "write":  # in the docs' environment: torch, gpukit, myst-nb
        import gpukit
        from gpukit_site.ext.execution import cache_key

        profile = gpukit.current_profile().name  # GPUKIT_PROFILE, as the build read it
        cache = args.cache or ROOT / "docs/_build/.jupyter_cache" / cache_key(ROOT, profile)
        print(said(write_from_cache(args.docs, cache, args.out, profile)))
        return 0
    try:
        path = import_recording(args.path)
    except RecordingError as err:
        print(f"refused: {err}", file=sys.stderr)
        return 1
    recording = json.loads(path.read_text(encoding="utf-8"))
    cells = sum(len(c) for c in recording["pages"].values())
    print(f"imported {path.relative_to(ROOT)}: {len(recording['pages'])} pages, {cells} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
