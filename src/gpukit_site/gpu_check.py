"""The GPU check: in a few minutes, what works on this GPU, per page and per CUDA test.

It runs gpukit's CUDA-marked tests, then every executed page of ``docs/en`` with the quick
profile in the build's kernel environment, with maintained tools: jupytext reads the pages as
myst-nb does, pytest runs them as notebooks (nbmake), a few at a time (pytest-xdist), writing
each result as it comes (pytest-reportlog). It writes ``report.json``, ``report.txt`` and
``recording.json`` (for ``nox -s record -- DIR``). MAINTAINERS.md ("A GPU check in ten
minutes") says what the report holds and how to run it without a network::

    nox -s gpu-check -- prepare        # with a network: the offline folder (.gpu-check/offline)
    PYTHONPATH=src python3 -m gpukit_site.gpu_check run   # anywhere: installs from it, checks

Until the check's packages are installed, only the standard library is used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import importlib.metadata as metadata
import json
import math
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
import venv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpukit_site import recordings
from gpukit_site.kernel_env import (
    DATA_VAR,
    DEFAULT_TEST_GPUS,
    FASHION_MNIST_FILES,
    REQUIRE_GPUS_VAR,
    kernel_environment,
)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"  # gpukit and this package: on the PYTHONPATH of every process the check starts
MODULE = "gpukit_site.gpu_check"
WORK = ROOT / ".gpu-check"  # ignored by git; the device tool can still carry it
OFFLINE = WORK / "offline"
GROUP = "gpu-check"  # the dependency group in pyproject.toml: what the check installs
# The prepared folder plus the repository's tracked files: what a GPU machine must receive.
SIZE_LIMIT = 48 * 2**20
PYTHONS = ("3.12", "3.11")
# glibc 2.17 and 2.28 wheels: what pip finds for these packages; any Linux of the last years.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
# Fashion-MNIST images the quick profile may read, per split: the first ones of each file.
# Quick reads at most 5,000 / 1,000 (fast-training's n_train/n_test; profiles.py: LeNet 3,000 /
# 1,000, ResNet-18 512 / 256; profiling 16 batches); tests/test_gpu_check.py checks the bound.
SUBSET = {"train": 10_000, "test": 2_000}
PROFILE = "quick"
KERNEL = "gpu-check"  # the kernelspec the pages run in: this Python, whatever Jupyter has
# Seconds kept back from the budget for writing the report after the pages' run is stopped.
MARGIN = 15
SHUTDOWN = 15  # seconds for a kernel whose cell timed out to stop (jupyter_client's 5 s and more)
OK = "ok"
FAILED = "failed"
TIMED_OUT = "timed out"
NOT_RUN = "not run"
# Run by each page's kernel after the build's IPython profile: the last error's whole
# traceback goes to a file in the page's folder (the kernel starts there), while the page's
# output stays the build's short form (xmode Minimal: neither the notebook nor nbmake's report
# holds the frames), so the recording holds what the site would show.
TRACEBACK = "full-traceback.txt"
FULL_TRACEBACK = f"""
import os as _os


def _full_traceback(shell, etype, value, tb, tb_offset=None, path=_os.path.abspath({TRACEBACK!r})):
    import contextlib, traceback

    with contextlib.suppress(OSError), open(path, "w", encoding="utf-8") as f:
        f.write("".join(traceback.format_exception(etype, value, tb)))
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)


get_ipython().set_custom_exc((Exception,), _full_traceback)
del _full_traceback, _os
"""


# -- Prepare (on a machine with a network) --------------------------------------------------
def requirements() -> list[str]:
    """The packages the check needs besides torch: pyproject.toml's ``gpu-check`` group."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["dependency-groups"][GROUP]


def size(paths: Iterable[Path]) -> int:
    return sum(path.stat().st_size for path in paths if path.is_file())


def check_size(root: Path, folder: Path, limit: int = SIZE_LIMIT) -> int:
    """The bytes of ``folder`` plus the tracked files of ``root`` (what a clone holds, without
    .git); ValueError at ``limit`` or over."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    tracked = size(root / os.fsdecode(name) for name in names.stdout.split(b"\0"))
    total = tracked + size(folder.rglob("*"))
    if total >= limit:
        raise ValueError(
            f"{folder} ({(total - tracked) / 2**20:.1f} MiB) and the repository "
            f"({tracked / 2**20:.1f} MiB) make {total / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB a GPU machine is sent: drop packages or data"
        )
    return total


def write_subset(source: Path, target: Path, counts: dict[str, int] = SUBSET) -> None:
    """The first ``counts[split]`` records of each Fashion-MNIST file of ``source``, as valid
    gzipped IDX files in ``target``: same magic number, the header's first dimension made for
    the subset, so gpukit reads them as it reads the full files."""
    target.mkdir(parents=True, exist_ok=True)
    for split, names in FASHION_MNIST_FILES.items():
        for name in names:
            raw = gzip.decompress((source / name).read_bytes())
            header = 4 + 4 * raw[3]  # the magic number's low byte: the number of dimensions
            dims = [int.from_bytes(raw[i : i + 4], "big") for i in range(4, header, 4)]
            n = counts[split]
            if n > dims[0]:
                raise ValueError(f"{source / name} holds {dims[0]} records, fewer than {n}")
            body = raw[header : header + n * math.prod(dims[1:])]
            # mtime=0: the same bytes every time, so a re-prepared folder is identical.
            subset = raw[:4] + n.to_bytes(4, "big") + raw[8:header] + body
            (target / name).write_bytes(gzip.compress(subset, mtime=0))


def prepare(folder: Path, pythons: list[str]) -> str:
    """Fill ``folder`` (emptied first) with the wheels of the check's packages and their
    dependencies (and pip's own, to install them with) for CPython ``pythons`` on manylinux
    x86_64, and with the data subset; check its size and say what it holds."""
    from gpukit.data import find_fashion_mnist  # the real files, downloaded if need be

    shutil.rmtree(folder, ignore_errors=True)
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    for version in pythons:  # pip resolves for one Python version at a time
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
        command += [*platforms, "--python-version", version, "--implementation", "cp"]
        command += ["--abi", "cp" + version.replace(".", ""), "--dest", str(folder / "wheels")]
        subprocess.run([*command, "pip", *requirements()], check=True)
    write_subset(find_fashion_mnist(), folder / "fashion-mnist")
    wheels = len(list((folder / "wheels").glob("*.whl")))
    return (
        f"{folder}: {wheels} wheels for CPython {', '.join(pythons)} and Fashion-MNIST's first "
        f"{SUBSET['train']:,} / {SUBSET['test']:,} images; {size(folder.rglob('*')) / 2**20:.1f} "
        f"MiB, {check_size(ROOT, folder) / 2**20:.1f} MiB with the repository (limit "
        f"{SIZE_LIMIT / 2**20:.0f} MiB)"
    )


# -- Install (offline, on the GPU machine) --------------------------------------------------
def missing() -> list[str]:
    """The packages of the gpu-check group that this Python lacks."""
    names = [re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0] for req in requirements()]
    return [name for name in names if next(metadata.distributions(name=name), None) is None]


def install(offline: Path, target: Path) -> dict:
    """A virtual environment in ``target`` that sees this Python's packages (torch above all)
    and adds the check's from the wheels in ``offline`` with ``pip --no-index``: what this
    Python has is kept (MAINTAINERS.md says why not ``pip install --target``).

    ``venv --system-site-packages`` would see the base interpreter's packages only, not those of
    a virtual environment running this script, so a .pth file adds this Python's package
    folders instead (``site.addsitedir`` also reads the .pth files found there)."""
    started = time.monotonic()
    wheels = offline / "wheels"
    pips = sorted(wheels.glob("pip-*.whl"))
    if not pips:
        raise SystemExit(f"no pip wheel in {wheels}: run `nox -s gpu-check -- prepare`")
    venv.create(target, clear=True, symlinks=True)
    paths = sysconfig.get_paths("venv", vars={"base": str(target), "platbase": str(target)})
    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    outer = [d for d in dict.fromkeys([*site.getsitepackages(), *user]) if Path(d).is_dir()]
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in outer)
    (Path(paths["purelib"]) / "gpu_check_outer.pth").write_text(lines, encoding="utf-8")
    python = target / "bin" / "python"
    # pip runs from its wheel (a zip with __main__): the machine needs no pip of its own.
    command = [python, f"{pips[-1]}/pip", "install", "--no-index", "--find-links", str(wheels)]
    command += ["--disable-pip-version-check", "--quiet", "--report", "-", *requirements()]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        print(done.stdout + done.stderr, file=sys.stderr)
        raise SystemExit(f"pip could not install from {wheels}: see above")
    installed = [item["metadata"] for item in json.loads(done.stdout)["install"]]
    return {
        "python": str(python),
        "installed": [f"{package['name']}-{package['version']}" for package in installed],
        "seconds": round(time.monotonic() - started, 1),
    }


# -- Facts about the machine ----------------------------------------------------------------
# Run in a Python of its own: a torch that cannot be imported (no numpy, ...) leaves the check
# standing, and the check's own process never initialises CUDA.
FACTS = """
import json, os, platform, shutil, sys, sysconfig
facts = {"python": platform.python_version(), "executable": sys.executable}
# torch.compile builds C code: Triton's launcher on a GPU, inductor's kernels on a CPU. Without
# a compiler or Python's headers, the compiling pages fail: the report says which is missing.
facts["c_compiler"] = shutil.which(os.environ.get("CC") or "gcc") or shutil.which("cc")
facts["python_headers"] = os.path.isfile(sysconfig.get_paths()["include"] + "/Python.h")
try:
    from gpukit_site import recordings  # GPUs, torch, CUDA, driver, CPU, commit
    facts["provenance"] = recordings.collect_provenance(sys.argv[1])
    import gpukit
    facts["machine"] = gpukit.describe_machine()
    try:
        facts["data"] = str(gpukit.find_fashion_mnist(download=False))
    except gpukit.DataNotFoundError:
        facts["data"] = None
except Exception as err:  # no torch, no numpy, ...: the report says so, the pages will fail
    facts["error"] = f"{type(err).__name__}: {err}"
print(json.dumps(facts))
"""


def machine_facts(env: dict[str, str], timeout: float = 120) -> dict:
    command = [sys.executable, "-c", FACTS, PROFILE]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, check=False, timeout=timeout
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"torch and gpukit did not say within {timeout:.0f} s"}
    except (IndexError, json.JSONDecodeError):
        return {"error": (done.stdout + done.stderr)[-2000:]}


def choose_data(facts: dict, env: dict[str, str], offline: Path) -> dict:
    """Full Fashion-MNIST where gpukit finds it; else the prepared subset (via GPUKIT_DATA)."""
    subset = offline / "fashion-mnist"
    if env.get(DATA_VAR):
        return {"folder": env[DATA_VAR], "source": f"{DATA_VAR} (set before the check)"}
    if facts.get("data"):
        return {"folder": facts["data"], "source": "found by gpukit"}
    if subset.is_dir():
        env[DATA_VAR] = str(subset)
        return {"folder": str(subset), "source": "the prepared subset", "images": SUBSET}
    return {"folder": None, "source": "none: the pages that read Fashion-MNIST will fail"}


# -- pytest runs: the CUDA tests, then the pages --------------------------------------------
def pytest_collection_modifyitems(config, items) -> None:
    """(A pytest hook: ``-p gpukit_site.gpu_check``.) Keep the CUDA-marked tests this machine
    can run; the ones that want more GPUs are reported as not run, each with why."""
    import pytest  # this hook runs in pytest's process; the check itself loads without it

    found = int(os.environ.get("GPU_CHECK_GPUS", 0))  # 0: tests/conftest.py skips them, saying why
    for item in items:
        marker = item.get_closest_marker("gpus")
        wanted = (marker.args or (DEFAULT_TEST_GPUS,))[0] if marker else 0
        if found and wanted > found:
            why = f"needs {wanted} CUDA GPU(s), this machine has {found}"
            item.add_marker(pytest.mark.skip(reason=f"{NOT_RUN}: {why}"))


def run_pytest(arguments: list[str], *, env: dict, timeout: float, out: Path, name: str) -> dict:
    """pytest with ``arguments``, its output in ``logs/<name>.log`` and each result in
    ``<name>.jsonl`` as it comes (pytest-reportlog), killed with its workers after ``timeout``
    seconds (a page's kernel, in a session of its own, exits when its worker is gone); the
    results so far, by test."""
    started = time.monotonic()
    log = out / "logs" / f"{name}.log"
    results = out / f"{name}.jsonl"
    results.unlink(missing_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pytest", *arguments, f"--report-log={results}"]
    command += ["-p", "no:cacheprovider", "-q"]
    with open(log, "wb") as f:
        process = subprocess.Popen(
            command, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = process.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    seconds = round(time.monotonic() - started, 1)
    return {"exit_code": code, "seconds": seconds, "log": str(log), "results": read_log(results)}


def read_log(path: Path) -> dict[str, dict]:
    """Each test's result from a pytest-reportlog file: passed, failed, error, skipped or
    xfailed (or not run, from pytest_collection_modifyitems), its seconds and its message."""
    results: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for line in lines:
        try:
            report = json.loads(line)
        except json.JSONDecodeError:  # the last line, cut short where the budget killed pytest
            continue
        kind, outcome, longrepr = (report.get(k) for k in ("$report_type", "outcome", "longrepr"))
        if kind == "CollectReport" and outcome == "failed":
            results[report["nodeid"]] = {
                "result": "error",
                "seconds": 0.0,
                "message": str(longrepr),
            }
        if kind != "TestReport" or (report["when"] != "call" and outcome == "passed"):
            continue
        entry = results.setdefault(report["nodeid"], {"result": "passed", "seconds": 0.0})
        entry["seconds"] = round(entry["seconds"] + report["duration"], 2)
        if outcome == "skipped" and "wasxfail" in report:  # an expected failure, and why
            entry |= {"result": "xfailed", "message": report["wasxfail"]}
        elif outcome == "skipped":  # (file, line, "Skipped: why")
            why = longrepr[2].removeprefix("Skipped: ")
            result, _, said = why.partition(": ") if why.startswith(NOT_RUN) else ("", "", why)
            entry |= {"result": result or "skipped", "message": said}
        elif outcome == "failed":
            entry["result"] = "failed" if report["when"] == "call" else "error"
            # An exception's (serialized ExceptionRepr) or nbmake's text (the cell and its
            # traceback); nbmake colours an internal error's traceback for a terminal.
            crash = longrepr.get("reprcrash") if isinstance(longrepr, dict) else None
            entry["message"] = recordings.ANSI.sub("", crash["message"] if crash else str(longrepr))
    return results


def run_tests(tests: Path, *, env: dict[str, str], gpus: int, timeout: float, out: Path) -> dict:
    """The CUDA-marked tests under ``tests``: required to run where the GPUs are there."""
    env = dict(env)
    env.pop(REQUIRE_GPUS_VAR, None)  # no GPU: they skip, and the report says why
    if gpus:
        # A CUDA test that would skip fails instead; those that want more GPUs than the
        # machine has are not run (pytest_collection_modifyitems) and named in the report.
        env |= {REQUIRE_GPUS_VAR: "1", "GPU_CHECK_GPUS": str(gpus)}
    # A module that cannot be imported is an error in the report, not the end of the others.
    arguments = [str(tests), "-m", "gpus", "-p", MODULE, "--continue-on-collection-errors"]
    run = run_pytest(arguments, env=env, timeout=timeout, out=out, name="tests")
    results = [{"test": test} | entry for test, entry in run.pop("results").items()]
    if run["exit_code"] is None:
        status = TIMED_OUT
    elif run["exit_code"] not in (0, 5) or any(r["result"] in ("failed", "error") for r in results):
        status = FAILED  # 5: pytest collected no test
    else:
        status = OK
    return run | {"status": status, "required": bool(gpus), "results": results}


# -- The pages ------------------------------------------------------------------------------
def read_page(page: Path):
    """A page as the notebook myst-nb executes (jupytext's MyST reader), its front matter in the
    metadata and the line of each cell's fence in ``metadata.source_map``."""
    from jupytext.myst import myst_to_notebook  # the check's packages: there by now

    return myst_to_notebook(page.read_text(encoding="utf-8"), add_source_map=True)


def executed_pages(docs: Path) -> dict[str, Any]:
    """The pages that are executed notebooks (``file_format: mystnb``), by name: each as
    :func:`read_page` reads it."""
    pages = {page.stem: read_page(page) for page in sorted(docs.glob("*.md"))}
    return {name: nb for name, nb in pages.items() if nb.metadata.get("file_format") == "mystnb"}


def failing_cell(notebook, traceback: Path) -> dict:
    """Where an executed page's ``notebook`` went wrong, read from its cells (nbclient records
    when each cell started and replied): a cell that raised without being tagged
    raises-exception, one tagged so that did not raise (nbmake passes it), or one that never
    replied; its number, line, source, status, error and whole traceback. nbmake's own report
    names no cell."""
    code = [(n, c) for n, c in enumerate(notebook.cells) if c.cell_type == "code"]
    for number, (n, cell) in enumerate(code, start=1):
        timing = cell.metadata.get("execution", {})
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        if not timing:  # not run: empty, or after the failure (or a kernel that died)
            continue
        if "shell.execute_reply" not in timing:
            found = {"status": TIMED_OUT, "error": "no result within the cell's timeout"}
        elif bool(errors) != ("raises-exception" in cell.metadata.get("tags", [])):
            error = errors[0] if errors else "tagged raises-exception, ran without raising"
            found = {"status": FAILED, "error": error}
            if errors and traceback.is_file():  # the hook's: this error's, the last one raised
                found["full_traceback"] = traceback.read_text(encoding="utf-8")
        else:
            continue
        where = {"cell": number, "line": notebook.metadata["source_map"][n]}
        return where | {"source": cell.source} | found
    return {}


def run_pages(pages: dict[str, Any], *, env: dict, workdir: Path, args, gpus: int, out: Path):
    """The pages under nbmake, ``args.jobs`` at a time, each cell within the page timeout
    and the budget; their entries and the recording of what they printed."""
    import nbformat
    from ipykernel.kernelspec import write_kernel_spec

    folder = workdir / "pages"
    for page, notebook in pages.items():  # a folder of its own: the kernel's working directory
        (folder / page).mkdir(parents=True)
        nbformat.write(notebook, folder / page / f"{page}.ipynb")
    # The pages' kernel is this Python, whichever "python3" kernel Jupyter knows elsewhere; it
    # runs the hook that keeps whole tracebacks after the build's IPython profile.
    hook = workdir / "full_traceback.py"
    hook.write_text(FULL_TRACEBACK, encoding="utf-8")
    spec = workdir / "jupyter" / "kernels" / KERNEL
    write_kernel_spec(spec, extra_arguments=[f"--IPKernelApp.exec_files={hook}"])
    jupyter = os.pathsep.join(filter(None, [str(workdir / "jupyter"), env.get("JUPYTER_PATH")]))
    env = env | {"JUPYTER_PATH": jupyter}
    # A cell that times out leaves time for its kernel to stop and its result to be written.
    left = args.deadline - time.monotonic() - MARGIN
    cell_timeout = max(1, math.floor(min(args.page_timeout, left - SHUTDOWN)))
    arguments = [str(folder), "--nbmake", f"--nbmake-kernel={KERNEL}", "--overwrite"]
    arguments += [f"--nbmake-timeout={cell_timeout}", "-n", str(args.jobs), f"--rootdir={folder}"]
    run = run_pytest(arguments, env=env, timeout=left, out=out, name="pages")
    results = {Path(test.split("::")[0]).stem: r for test, r in run["results"].items()}
    entries, cells, dropped = [], {}, []
    for page, notebook in pages.items():
        wanted = notebook.metadata.get("gpus", 0)
        entry = {"page": page, "gpus_wanted": wanted}
        if wanted > gpus:
            on = f"on {gpus} GPU(s)" if gpus else "on the CPU"
            entry["note"] = f"wants {wanted} GPU(s): ran its fewer-device path {on}"
        result = results.get(page)
        if result is None:
            entries.append(
                entry | {"status": NOT_RUN, "seconds": 0, "error": "the budget ran out first"}
            )
            continue
        notebook = nbformat.read(folder / page / f"{page}.ipynb", as_version=4)  # as it ran
        entry["seconds"] = round(result["seconds"], 1)
        entry |= failing_cell(notebook, folder / page / TRACEBACK) or {
            "status": OK if result["result"] == "passed" else FAILED
        }
        if entry["status"] == FAILED and "error" not in entry:  # outside any cell: "Kernel died"
            entry["error"] = result.get("message", "").removeprefix("NBMAKE INTERNAL ERROR\n")
        entries.append(entry)
        cells[page], left_out = recordings.from_notebook(notebook, page)
        dropped += left_out
    return entries, cells, dropped


# -- The report -----------------------------------------------------------------------------
def summary(report: dict) -> str:
    """The report's short text form."""
    m, install, data, tests = (report[k] for k in ("machine", "install", "data", "tests"))
    gpus = f"{len(m['gpus'])} x {m['gpus'][0]}" if m.get("gpus") else "no CUDA GPU"
    lines = [
        f"GPU check: {gpus}, torch {m.get('torch', '?')} (CUDA {m.get('cuda')}), "
        f"Python {m.get('python')}; profile {report['profile']}; {report['jobs']} page(s) at a "
        f"time; {report['seconds']:.0f} s in all (budget {report['budget_s']} s)",
    ]
    if m.get("error"):
        lines.append(f"torch/gpukit: {m['error']}")
    if not m.get("c_compiler") or not m.get("python_headers"):
        lines.append(
            f"torch.compile may fail here: C compiler {m.get('c_compiler') or 'missing'}, "
            f"Python headers {'found' if m.get('python_headers') else 'missing'}"
        )
    if install:
        lines.append(f"installed {len(install['installed'])} package(s) in {install['seconds']} s")
    lines.append(f"data: {data['folder']} ({data['source']})")
    tally = collections.Counter(r["result"] for r in tests["results"])
    said = ", ".join(f"{n} {what}" for what, n in sorted(tally.items())) or "none collected"
    required = f" with {REQUIRE_GPUS_VAR}=1" if tests.get("required") else ""
    lines.append(f"CUDA tests{required}: {tests['status']}: {said} ({tests['seconds']} s)")
    for r in tests["results"]:
        if r["result"] != "passed":
            lines.append(f"  {r['result']:9} {r['test']}: {r['message'].splitlines()[0][:160]}")
    pages = report["pages"]
    tally = {s: sum(p["status"] == s for p in pages) for s in (OK, FAILED, TIMED_OUT, NOT_RUN)}
    lines.append("pages: " + ", ".join(f"{n} {s}" for s, n in tally.items()))
    for p in pages:
        where = f" cell {p['cell']} ({p['page']}.md:{p['line']})" if p.get("cell") else ""
        error = (p.get("error") or "").splitlines()
        said = f": {error[0][:160]}" if error else ""
        note = f" [{p['note']}]" if p.get("note") else ""
        lines.append(f"  {p['status']:9} {p['page']:24} {p['seconds']:6.1f} s{where}{said}{note}")
    recording = report["recording"]
    lines.append(recordings.said(recording) if recording.get("path") else recording["why"])
    lines += [f"skipped: {s}" for s in report["skipped"]]
    if not report["complete"]:
        lines.append("INCOMPLETE: the pages are running, or the check was stopped before them")
    return "\n".join(lines) + "\n"


def save(report: dict, out: Path) -> str:
    """Write ``report.json`` and ``report.txt``; the text."""
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    text = summary(report)
    (out / "report.txt").write_text(text, encoding="utf-8")
    return text


def check(args: argparse.Namespace) -> int:
    """``run``, once the check's packages can be imported."""
    started = time.monotonic() - float(os.environ.pop("GPU_CHECK_ELAPSED", "0"))
    args.deadline = started + args.budget
    out = args.out.resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    env = os.environ | kernel_environment(PROFILE)
    facts = machine_facts(env)
    provenance = facts.pop("provenance", None)  # None: torch could not say (the report does)
    gpus = len(provenance["gpus"]) if provenance else 0
    report: dict = {"profile": PROFILE, "jobs": args.jobs, "budget_s": args.budget}
    report["machine"] = (provenance or {}) | facts  # the machine as a recording says it, and more
    report["install"] = json.loads(os.environ.pop("GPU_CHECK_INSTALL", "null"))
    report["data"] = choose_data(facts, env, args.offline)
    report["skipped"] = []
    if not gpus:
        report["skipped"].append(
            "no CUDA GPU: the CUDA tests skip (the report lists them) and the pages run their "
            "CPU path, not their GPU path"
        )
    print(f"GPU check: {facts.get('machine') or facts.get('error')}", flush=True)
    if args.no_tests:
        report["tests"] = {"status": "skipped", "seconds": 0, "results": []}
    else:
        print("CUDA tests ...", flush=True)
        budget = min(args.tests_timeout, args.deadline - time.monotonic() - 60)
        report["tests"] = run_tests(args.tests, env=env, gpus=gpus, timeout=budget, out=out)
    pages = executed_pages(args.docs)
    if args.pages:
        unknown = set(args.pages) - set(pages)
        if unknown:
            raise SystemExit(f"--pages: no executed page named {', '.join(sorted(unknown))}")
        pages = {name: nb for name, nb in pages.items() if name in args.pages}
    print(f"{len(pages)} page(s), {args.jobs} at a time ...", flush=True)
    # A report before the pages run: a check stopped from outside still leaves one, and the
    # pages' results come in pages.jsonl as each page ends.
    report |= {"pages": [], "complete": False, "seconds": round(time.monotonic() - started, 1)}
    report["recording"] = {"path": None, "why": "no recording: the pages have not run"}
    save(report, out)
    report["pages"], cells, dropped = run_pages(
        pages, env=env, workdir=workdir, args=args, gpus=gpus, out=out
    )
    if provenance is None:
        report["recording"] = {"path": None, "why": "no recording: torch could not say"}
    elif not cells:
        report["recording"] = {"path": None, "why": "no recording: no page ran"}
    else:
        report["recording"] = recordings.write(out, provenance, cells, dropped)
    report |= {"complete": True, "seconds": round(time.monotonic() - started, 1)}
    print(save(report, out), end="")
    shutil.rmtree(workdir, ignore_errors=True)
    bad_pages = any(p["status"] != OK for p in report["pages"])
    return 1 if bad_pages or report["tests"]["status"] in (FAILED, TIMED_OUT) else 0


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Install what is missing (offline), then check, in the Python that has it all."""
    lacking = [] if args.no_install else missing()
    if not lacking:
        return check(args)
    started = time.monotonic()
    print(f"installing {', '.join(lacking)} from {args.offline / 'wheels'} ...", flush=True)
    installed = install(args.offline, args.venv)
    env = os.environ | {"GPU_CHECK_INSTALL": json.dumps(installed)}
    env["GPU_CHECK_ELAPSED"] = str(time.monotonic() - started)
    command = [installed["python"], "-m", MODULE, *argv, "--no-install"]
    return subprocess.run(command, env=env, check=False).returncode


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=MODULE, description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="the offline folder (needs a network)")
    prep.add_argument("--dir", type=Path, default=OFFLINE, help="default: %(default)s")
    prep.add_argument("--python", nargs="+", default=list(PYTHONS), help="default: 3.12 3.11")
    go = commands.add_parser("run", help="the check (installs from the offline folder)")
    go.add_argument("--offline", type=Path, default=OFFLINE, help="default: %(default)s")
    go.add_argument("--venv", type=Path, default=WORK / "venv", help="default: %(default)s")
    go.add_argument("--out", type=Path, default=WORK / "report", help="default: %(default)s")
    go.add_argument("--budget", type=int, default=600, help="seconds in all (default 600)")
    go.add_argument("--jobs", type=int, default=3, help="pages at a time (default 3)")
    go.add_argument("--page-timeout", type=int, default=300, help="per cell (default 300)")
    go.add_argument("--tests-timeout", type=int, default=180, help="all tests (default 180)")
    go.add_argument("--pages", nargs="+", help="only these pages (names without .md)")
    go.add_argument("--docs", type=Path, default=ROOT / "docs" / "en", help=argparse.SUPPRESS)
    go.add_argument("--tests", type=Path, default=ROOT / "tests" / "gpukit", help=argparse.SUPPRESS)
    go.add_argument("--no-tests", action="store_true", help="pages only")
    go.add_argument("--no-install", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.command == "run" and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    # Every process the check starts finds gpukit and this package (also with a relative
    # PYTHONPATH=src, from a kernel's working directory).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.getenv("PYTHONPATH")]))
    if args.command == "run":
        return run(args, argv)
    print(prepare(args.dir, args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
