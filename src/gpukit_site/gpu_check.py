"""The GPU check: in a few minutes, what works on this GPU, per page and per CUDA test.

For a machine that has a CUDA build of PyTorch and little else: often no network, and minutes,
not the half hour of a full GPU build. It

1. runs gpukit's CUDA-marked tests (``@pytest.mark.gpus(n)``, tests/conftest.py) with
   ``GPUKIT_REQUIRE_GPUS=1``, so that none can pass by skipping; tests that want more GPUs
   than the machine has are left out, and the report names them;
2. executes every page's notebook (``docs/en``) with the quick profile, in the kernel
   environment of the real build (gpukit_site.kernel_env), each page under its own timeout, a few
   pages at a time, carrying on past a failing page;
3. writes ``report.json`` and ``report.txt``: per page ok / failed / timed out / not run, its
   seconds, the failing cell with its traceback; per test its result; the GPU, torch, Python;
   and ``recording.json``, every cell's outputs with the machine's provenance
   (gpukit_site.recordings), which ``nox -s record -- DIR`` imports for the site to show.

On a machine without a GPU it does the same (the CUDA tests are then reported as skipped, and
the pages run their CPU path), so CI tests the check itself.

Usage (from the repository's root, with src/ on the path: nothing needs to be installed;
MAINTAINERS.md says more)::

    nox -s gpu-check -- prepare        # with a network: the offline folder (.gpu-check/offline)
    PYTHONPATH=src python3 -m gpukit_site.gpu_check run   # anywhere: installs from it, checks

``run`` uses the Python that runs it and its torch (never installing torch). What the check
needs besides (ipykernel, nbclient, jupytext, pytest: the ``gpu-check`` dependency group) is
taken from that Python if it has it, else installed with ``pip --no-index`` from the prepared
folder into a virtual environment (.gpu-check/venv) that sees the Python's own packages.
``nox -s gpu-check`` does the same with a network.

The script itself needs only the standard library until it has installed what it needs.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.etree import ElementTree

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
# Seconds a page's worker gets past its timeout (interrupting the cell, its traceback, the
# kernel's shutdown) before it is killed.
GRACE = 30
KERNEL = "gpu-check"  # the kernelspec the pages run in: this Python, whatever Jupyter has
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CODE_CELL = re.compile(r"^`{3,}\{code-cell\}", re.MULTILINE)
# Statuses of a page.
OK = "ok"
FAILED = "failed"
TIMED_OUT = "timed out"
NOT_RUN = "not run"


# -- Prepare (on a machine with a network) --------------------------------------------------
def requirements() -> list[str]:
    """The packages the check needs besides torch: pyproject.toml's ``gpu-check`` group."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["dependency-groups"][GROUP]


def tracked_size(root: Path) -> int:
    """Bytes of the repository's tracked files (what a clone holds, without .git)."""
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.split(b"\0")
    return sum(
        (root / os.fsdecode(n)).stat().st_size for n in names if (root / os.fsdecode(n)).is_file()
    )


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def check_size(root: Path, folder: Path, limit: int = SIZE_LIMIT) -> int:
    """The bytes of ``folder`` plus the tracked files of ``root``; ValueError over ``limit``."""
    total = tracked_size(root) + folder_size(folder)
    if total >= limit:
        raise ValueError(
            f"{folder} ({folder_size(folder) / 2**20:.1f} MiB) and the repository "
            f"({tracked_size(root) / 2**20:.1f} MiB) make {total / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB a GPU machine is sent: drop packages or data"
        )
    return total


def idx_count(path: Path) -> int:
    """The number of records a gzipped IDX file's header announces."""
    with gzip.open(path, "rb") as f:
        return int.from_bytes(f.read(8)[4:8], "big")


def write_subset(source: Path, target: Path, counts: dict[str, int] = SUBSET) -> None:
    """The first ``counts[split]`` records of each Fashion-MNIST file of ``source``, as valid
    gzipped IDX files in ``target``: same magic number, the header's first dimension made for
    the subset, so gpukit reads them as it reads the full files."""
    target.mkdir(parents=True, exist_ok=True)
    for split, names in FASHION_MNIST_FILES.items():
        for name in names:
            raw = gzip.decompress((source / name).read_bytes())
            magic = int.from_bytes(raw[:4], "big")
            header = 4 + 4 * (magic & 0xFF)  # the low byte of the magic number: dimensions
            dims = [int.from_bytes(raw[i : i + 4], "big") for i in range(4, header, 4)]
            n = counts[split]
            if n > dims[0]:
                raise ValueError(f"{source / name} holds {dims[0]} records, fewer than {n}")
            record = math.prod(dims[1:])
            head = b"".join(d.to_bytes(4, "big") for d in (magic, n, *dims[1:]))
            body = raw[header : header + n * record]
            # mtime=0: the same bytes every time, so a re-prepared folder is identical.
            (target / name).write_bytes(gzip.compress(head + body, mtime=0))


def download_wheels(folder: Path, pythons: Iterable[str], packages: list[str]) -> None:
    """Wheels of ``packages`` and their dependencies (and pip's own, to install them with),
    for CPython ``pythons`` on manylinux x86_64: pip resolves for each version in turn."""
    for version in pythons:
        abi = "cp" + version.replace(".", "")
        platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
        command += [*platforms, "--python-version", version, "--implementation", "cp"]
        command += ["--abi", abi, "--dest", str(folder), "pip", *packages]
        subprocess.run(command, check=True)


def prepare(folder: Path, pythons: Iterable[str]) -> dict:
    """Fill ``folder`` (emptied first) with the wheels and the data subset; check its size."""
    from gpukit.data import find_fashion_mnist  # the real files, downloaded if need be

    shutil.rmtree(folder, ignore_errors=True)
    pythons = list(pythons)
    download_wheels(folder / "wheels", pythons, requirements())
    write_subset(find_fashion_mnist(), folder / "fashion-mnist")
    total = check_size(ROOT, folder)
    manifest = {
        "pythons": pythons,
        "platforms": list(PLATFORMS),
        "wheels": sorted(p.name for p in (folder / "wheels").glob("*.whl")),
        "fashion_mnist": {split: n for split, n in SUBSET.items()},
        "bytes": folder_size(folder),
        "bytes_with_repository": total,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


# -- Install (offline, on the GPU machine) --------------------------------------------------
def module_names() -> list[str]:
    """The modules of the gpu-check group's packages (their names, here)."""
    return [
        re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0].replace("-", "_") for req in requirements()
    ]


def missing_modules() -> list[str]:
    """The packages of the gpu-check group this Python cannot import."""
    import importlib.util

    return [name for name in module_names() if importlib.util.find_spec(name) is None]


def reusable(venv: Path) -> bool:
    """Whether an earlier run made ``venv`` from this Python and it has the packages (a
    second run on the same machine then skips installing)."""
    python = venv / "bin" / "python"
    outer = venv / "gpu-check-outer-python"
    if not outer.is_file() or outer.read_text(encoding="utf-8") != sys.executable:
        return False
    command = [python, "-c", "import " + ", ".join(module_names())]
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


def site_dirs() -> list[str]:
    """This Python's package folders, e.g. the site-packages holding its torch."""
    import site

    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    return [d for d in dict.fromkeys([*site.getsitepackages(), *user]) if Path(d).is_dir()]


def install(offline: Path, venv: Path) -> dict:
    """A virtual environment that sees this Python's packages (torch above all) and adds the
    check's from the wheels in ``offline``, with ``pip --no-index``: what is there is kept.

    ``venv --system-site-packages`` would see the base interpreter's packages only, not those of
    a virtual environment running this script, so a .pth file adds this Python's package
    folders instead (``site.addsitedir`` also reads the .pth files found there)."""
    started = time.monotonic()
    wheels = offline / "wheels"
    python = venv / "bin" / "python"
    if reusable(venv):
        seconds = round(time.monotonic() - started, 1)
        report = {"status": "reused", "from": str(venv), "python": str(python), "log": ""}
        return report | {"installed": [], "seconds": seconds}
    print(f"installing {', '.join(missing_modules())} from {wheels} ...", flush=True)
    pips = sorted(wheels.glob("pip-*.whl"))
    if not pips:
        raise SystemExit(f"no pip wheel in {wheels}: run `nox -s gpu-check -- prepare`")
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True
    )
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({d!r})" for d in site_dirs()]
    (Path(purelib) / "gpu_check_outer.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # pip runs from its wheel (a zip with __main__): the machine needs no pip of its own.
    command = [python, f"{pips[-1]}/pip", "install", "--no-index", "--find-links", str(wheels)]
    command += ["--disable-pip-version-check", "--no-warn-script-location", *requirements()]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    installed = re.findall(r"Successfully installed (.*)", done.stdout)
    if done.returncode == 0:
        (venv / "gpu-check-outer-python").write_text(sys.executable, encoding="utf-8")
    return {
        "status": OK if done.returncode == 0 else FAILED,
        "from": str(wheels),
        "python": str(python),
        "installed": installed[0].split() if installed else [],
        "seconds": round(time.monotonic() - started, 1),
        "log": (done.stdout + done.stderr)[-4000:],
    }


# -- Facts about the machine ----------------------------------------------------------------
FACTS = """
import json, os, platform, shutil, sys, sysconfig
facts = {"python": platform.python_version(), "executable": sys.executable,
         "cpu_cores": os.cpu_count()}
# torch.compile builds C code: Triton's launcher on a GPU, inductor's kernels on a CPU. Without
# a compiler or Python's headers, the compiling pages fail: the report says which is missing.
facts["c_compiler"] = shutil.which(os.environ.get("CC") or "gcc") or shutil.which("cc")
include = sysconfig.get_paths()["include"]
facts["python_headers"] = os.path.isfile(os.path.join(include, "Python.h"))
try:
    import torch
    facts.update(torch=torch.__version__, cuda=torch.version.cuda,
                 gpu_count=torch.cuda.device_count())
    facts["gpus"] = [torch.cuda.get_device_name(i) for i in range(facts["gpu_count"])]
    import gpukit
    facts["machine"] = gpukit.describe_machine()
    from gpukit_site import recordings  # what a recording says of the machine
    facts["provenance"] = recordings.collect_provenance(sys.argv[1])  # the profile
    try:
        facts["data"] = str(gpukit.find_fashion_mnist(download=False))
    except gpukit.DataNotFoundError:
        facts["data"] = None
except Exception as err:  # no torch, no numpy, ...: the report says so, the pages will fail
    facts["error"] = f"{type(err).__name__}: {err}"
print(json.dumps(facts))
"""


def machine_facts(env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", FACTS, PROFILE], env=env, capture_output=True, text=True, check=False
    )
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (done.stdout + done.stderr)[-2000:], "gpu_count": 0}


def choose_data(facts: dict, env: dict[str, str], offline: Path) -> dict:
    """Full Fashion-MNIST where gpukit finds it; else the prepared subset (via GPUKIT_DATA)."""
    subset = offline / "fashion-mnist"
    if env.get(DATA_VAR):
        folder = Path(env[DATA_VAR])
        source = f"{DATA_VAR} (set before the check)"
    elif facts.get("data"):
        folder = Path(facts["data"])
        source = "found by gpukit"
    elif subset.is_dir():
        env[DATA_VAR] = str(subset)
        folder = subset
        source = "the prepared subset"
    else:
        return {"folder": None, "source": "none: the pages that read Fashion-MNIST will fail"}
    counts = {}
    for split, (images, _) in FASHION_MNIST_FILES.items():
        with contextlib.suppress(OSError, EOFError):
            counts[split] = idx_count(folder / images)
    return {"folder": str(folder), "source": source, "images": counts}


# -- The CUDA tests -------------------------------------------------------------------------
def gpus_wanted_by(item) -> int | None:
    marker = item.get_closest_marker("gpus")
    if marker is None:
        return None
    return marker.args[0] if marker.args else DEFAULT_TEST_GPUS


def pytest_collection_modifyitems(config, items) -> None:
    """(A pytest hook: ``-p gpu_check``.) Keep the CUDA-marked tests this machine can run;
    write the ones that want more GPUs to $GPU_CHECK_LEFT_OUT for the report."""
    if "GPU_CHECK_GPUS" not in os.environ:  # no GPU: tests/conftest.py skips them, saying why
        return
    found = int(os.environ["GPU_CHECK_GPUS"])
    keep = []
    left_out = []
    for item in items:
        wanted = gpus_wanted_by(item)
        (left_out if wanted is not None and wanted > found else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep
    record = [{"test": item.nodeid, "gpus": gpus_wanted_by(item)} for item in left_out]
    Path(os.environ["GPU_CHECK_LEFT_OUT"]).write_text(json.dumps(record), encoding="utf-8")


def junit_results(path: Path) -> list[dict]:
    results = []
    for case in ElementTree.parse(path).iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name')}".lstrip(":")
        result = "passed"
        message = ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                result = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (found.get("message") or found.text or "").strip()
                break
        results.append(
            {
                "test": name,
                "result": result,
                "seconds": float(case.get("time", 0)),
                "message": message,
            }
        )
    return results


def run_tests(tests: Path, *, env: dict[str, str], gpus: int, timeout: float, out: Path) -> dict:
    """The CUDA-marked tests under ``tests``: required to run where the GPUs are there."""
    started = time.monotonic()
    junit = out / "tests.xml"
    left_out_file = out / "tests-left-out.json"
    junit.unlink(missing_ok=True)
    left_out_file.unlink(missing_ok=True)
    env = dict(env)
    env.pop(REQUIRE_GPUS_VAR, None)  # no GPU: they skip, and the report says why
    if gpus:
        # A CUDA test that would skip fails instead; those that want more GPUs than the
        # machine has are left out (pytest_collection_modifyitems) and named in the report.
        env |= {REQUIRE_GPUS_VAR: "1", "GPU_CHECK_GPUS": str(gpus)}
        env["GPU_CHECK_LEFT_OUT"] = str(left_out_file)
    command = [sys.executable, "-m", "pytest", str(tests), "-m", "gpus", "-p", MODULE]
    # A module that cannot be imported is an error in the report, not the end of the others.
    command += ["-p", "no:cacheprovider", "-q", f"--junitxml={junit}"]
    command += ["--continue-on-collection-errors"]
    log = out / "logs" / "tests.log"
    code = run_logged(command, env=env, cwd=ROOT, timeout=timeout, log=log)
    report = {"seconds": round(time.monotonic() - started, 1), "log": str(log)}
    report["required"] = bool(gpus)
    if code is None:
        return report | {"status": TIMED_OUT, "timeout_s": round(timeout), "results": []}
    results = junit_results(junit) if junit.is_file() else []
    if left_out_file.is_file():
        for entry in json.loads(left_out_file.read_text(encoding="utf-8")):
            message = f"needs {entry['gpus']} CUDA GPU(s), this machine has {gpus}"
            results.append(
                {"test": entry["test"], "result": NOT_RUN, "seconds": 0.0, "message": message}
            )
    bad = [r for r in results if r["result"] in ("failed", "error")]
    status = FAILED if bad or code not in (0, 5) else OK  # 5: pytest collected no test
    return report | {"status": status, "exit_code": code, "results": results}


def run_logged(command: list, *, env: dict, cwd: Path, timeout: float, log: Path) -> int | None:
    """Run ``command`` with its output in ``log``; None when killed at ``timeout`` seconds
    (with every process it started: it runs in a session of its own)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as f:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return process.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            kill_group(process)
            return None


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# -- One page (a worker process per page) ---------------------------------------------------
def front_matter(page: Path) -> dict:
    # Imported here: PyYAML (jupytext's dependency) is there once the check's packages are.
    from gpukit_site.ext.front_matter import split_front_matter

    return split_front_matter(page.read_text(encoding="utf-8"))[0]


def executed_pages(docs: Path) -> list[Path]:
    """The pages that are executed notebooks (``file_format: mystnb``), by name."""
    pages = sorted(docs.glob("*.md"))
    return [p for p in pages if front_matter(p).get("file_format") == "mystnb"]


def error_text(cell) -> tuple[str, str]:
    """``(error, traceback)`` of a cell's error output, as the page would show them."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            traceback = ANSI.sub("", "\n".join(output.get("traceback", [])))
            return f"{output.get('ename')}: {output.get('evalue')}", traceback
    return "", ""


FULL_TRACEBACK = """
import sys as _s, traceback as _t
print(''.join(_t.format_exception(_s.last_type, _s.last_value, _s.last_traceback)), end='')
del _s, _t
"""


def execute_page(
    page: Path, timeout: float, workdir: Path, progress: Path, record: Path | None = None
) -> dict:
    """Execute ``page`` as myst-nb would (its code cells, in order, in a fresh kernel; a cell
    tagged raises-exception must raise and the others must not), within ``timeout`` seconds.
    ``record``: where to write the cells' outputs for the recording, whatever the status."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from nbclient.util import run_sync

    text = page.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="md:myst")
    lines = [text.count("\n", 0, m.start()) + 1 for m in CODE_CELL.finditer(text)]
    code_cells = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    n_cells = len(nb.cells)
    ordinal = {index: n for n, index in enumerate(code_cells)}
    started = time.monotonic()
    deadline = started + timeout
    state: dict = {"index": None, "cell_started": started, "slowest": None}

    def where(index: int) -> dict:
        n = ordinal[index]
        cell = nb.cells[index]
        return {
            "cell": n + 1,  # the page's n-th code cell, counting from 1
            "line": lines[n] if n < len(lines) else None,
            "tags": list(cell.metadata.get("tags", [])),
            "source": cell.source,
        }

    def on_start(cell, cell_index, **_) -> None:
        if cell_index not in ordinal:  # full_traceback's cell
            return
        state["index"] = cell_index
        state["cell_started"] = time.monotonic()
        progress.write_text(json.dumps(where(cell_index)), encoding="utf-8")

    def on_executed(cell, cell_index, **_) -> None:
        if cell_index not in ordinal:
            return
        seconds = time.monotonic() - state["cell_started"]
        if state["slowest"] is None or seconds > state["slowest"]["seconds"]:
            state["slowest"] = {"cell": ordinal[cell_index] + 1, "seconds": round(seconds, 1)}

    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        startup_timeout=max(1, min(60, math.ceil(timeout))),
        timeout_func=lambda cell: max(1, math.ceil(deadline - time.monotonic())),
        resources={"metadata": {"path": str(workdir)}},
        on_cell_start=on_start,
        on_cell_executed=on_executed,
    )
    result: dict = {"status": OK}
    with client.setup_kernel():
        try:
            for index in code_cells:
                client.execute_cell(nb.cells[index], index)
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
            index = state["index"]
            result |= where(index) if index is not None else {}
            if isinstance(err, CellTimeoutError):
                result |= {"status": TIMED_OUT, "error": f"no result within {timeout:.0f} s"}
                with contextlib.suppress(Exception):  # a traceback of where it hung, below
                    run_sync(client.km.interrupt_kernel)()
                    time.sleep(2)
            elif isinstance(err, DeadKernelError):
                result |= {"status": FAILED, "error": "the kernel died (crash or out of memory)"}
            else:
                result["status"] = FAILED
                result["error"], result["traceback"] = error_text(nb.cells[index])
            if not isinstance(err, DeadKernelError):
                result["full_traceback"] = full_traceback(client, nbformat)
    if result["status"] == OK:
        for index in code_cells:  # gpukit_site.ext.execution's rule
            cell = nb.cells[index]
            if "raises-exception" in cell.metadata.get("tags", []) and not error_text(cell)[0]:
                result |= where(index)
                result |= {
                    "status": FAILED,
                    "error": "tagged raises-exception, ran without raising",
                }
                break
    result["seconds"] = round(time.monotonic() - started, 1)
    result["slowest_cell"] = state["slowest"]
    if record is not None:  # the page's own cells: full_traceback's is appended after them
        cells, dropped = recordings.from_notebook({"cells": nb.cells[:n_cells]}, page.stem)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"cells": cells, "dropped": dropped}), encoding="utf-8")
    return result


def full_traceback(client, nbformat) -> str:
    """Python's whole traceback of the kernel's last error, with files and lines: the page
    shows only the error's type and message (conf/ipython)."""
    cell = nbformat.v4.new_code_cell(FULL_TRACEBACK)
    client.nb.cells.append(cell)  # nbclient writes the outputs into the notebook
    client.timeout_func = None
    client.timeout = 10  # a kernel stuck in C code does not answer: leave it
    try:
        client.execute_cell(cell, len(client.nb.cells) - 1)
    except Exception:
        return ""
    return ANSI.sub(
        "", "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
    )


# -- The run --------------------------------------------------------------------------------
def describe(page: Path, gpus: int) -> dict:
    wanted = front_matter(page).get("gpus", 0)
    entry = {"page": page.stem, "gpus_wanted": wanted}
    if wanted > gpus:
        on = f"on {gpus} GPU(s)" if gpus else "on the CPU"
        entry["note"] = f"wants {wanted} GPU(s): ran its fewer-device path {on}"
    return entry


def run_page(page: Path, *, env: dict, workdir: Path, out: Path, timeout: float) -> dict:
    """``page`` in a worker process of its own (``_page``), killed with its kernel GRACE seconds
    past ``timeout`` if it has not stopped itself; the page's entry in the report."""
    cwd = Path(tempfile.mkdtemp(prefix=f"{page.stem}-", dir=workdir))
    result, progress = cwd / "result.json", cwd / "progress.json"
    log = out / "logs" / f"{page.stem}.log"
    command = [sys.executable, "-m", MODULE, "_page", str(page), "--timeout", str(timeout)]
    command += ["--result", str(result), "--progress", str(progress)]
    command += ["--record", str(workdir / "recorded" / f"{page.stem}.json")]
    print(f"  started {page.stem} (timeout {timeout:.0f} s)", flush=True)
    started = time.monotonic()
    code = run_logged(command, env=env, cwd=cwd, timeout=timeout + GRACE, log=log)
    entry = {"status": FAILED, "seconds": round(time.monotonic() - started, 1)}
    if result.is_file():
        entry |= json.loads(result.read_text(encoding="utf-8"))
    elif code is None:  # the worker overran its own timeout: what it was doing is in progress
        entry["status"] = TIMED_OUT
        if progress.is_file():
            entry |= json.loads(progress.read_text(encoding="utf-8"))
    else:
        entry["error"] = f"the page's worker exited with {code}"
        entry["traceback"] = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    print(f"  {entry['status']:9} {page.stem} ({entry['seconds']} s)", flush=True)
    return entry | {"timeout_s": round(timeout), "log": str(log)}


def run_pages(
    pages: list[Path], save, *, jobs: int, page_timeout: float, deadline: float, gpus: int, **where
) -> list[dict]:
    """``pages``, ``jobs`` at a time, each with its own timeout, all within the budget; after
    each page ``save`` is called with the results so far."""
    results: dict[str, dict] = {}
    lock = threading.Lock()

    def one(page: Path) -> None:
        # A worker past its timeout is killed GRACE seconds later; the last seconds after
        # that are kept for the report: so no page outlives the budget.
        timeout = min(page_timeout, deadline - time.monotonic() - GRACE - 15)
        if timeout < 15:
            why = "the check's time budget was spent before it could start"
            entry = {"status": NOT_RUN, "seconds": 0, "error": why}
        else:
            entry = run_page(page, timeout=timeout, **where)
        with lock:
            results[page.stem] = describe(page, gpus) | entry
            save([results[p.stem] for p in pages if p.stem in results])

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, pages))  # in order: once one cannot start, no later one can
    return [results[p.stem] for p in pages]


def summary(report: dict) -> str:
    """The report's short text form."""
    m = report["machine"]
    gpus = f"{m.get('gpu_count', 0)} x {m['gpus'][0]}" if m.get("gpus") else "no CUDA GPU"
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
    install = report["install"]
    if install["status"] == "skipped":
        lines.append(f"install: nothing ({install['why']})")
    else:
        lines.append(
            f"install: {install['status']}, {len(install['installed'])} package(s) from "
            f"{install['from']} in {install['seconds']} s"
        )
    data = report["data"]
    counts = ", ".join(f"{n:,} {split}" for split, n in data.get("images", {}).items())
    lines.append(f"data: {data['folder']} ({data['source']}{'; ' + counts if counts else ''})")
    tests = report["tests"]
    if tests["status"] == "skipped":
        lines.append(f"CUDA tests: skipped ({tests['why']})")
    else:
        counts = {}
        for r in tests["results"]:
            counts[r["result"]] = counts.get(r["result"], 0) + 1
        said = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "none collected"
        required = f" with {REQUIRE_GPUS_VAR}=1" if tests.get("required") else ""
        lines.append(f"CUDA tests{required}: {tests['status']}: {said} ({tests['seconds']} s)")
        for r in tests["results"]:
            if r["result"] in ("failed", "error", "skipped", NOT_RUN):
                first = (r["message"].splitlines() or [""])[0][:160]
                lines.append(f"  {r['result']:9} {r['test']}: {first}")
    pages = report["pages"]
    counts = {s: sum(p["status"] == s for p in pages) for s in (OK, FAILED, TIMED_OUT, NOT_RUN)}
    lines.append("pages: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    for p in pages:
        where = f" cell {p['cell']} ({p['page']}.md:{p['line']})" if p.get("cell") else ""
        error = (p.get("error") or "").splitlines()
        said = f": {error[0][:160]}" if error else ""
        note = f" [{p['note']}]" if p.get("note") else ""
        lines.append(f"  {p['status']:9} {p['page']:24} {p['seconds']:6.1f} s{where}{said}{note}")
    recording = report.get("recording") or {}
    if recording.get("path"):
        lines.append(recordings.said(recording))
    elif recording:
        lines.append(f"recording: none ({recording['why']})")
    lines += [f"skipped: {s}" for s in report["skipped"]]
    if not report.get("complete", True):
        lines.append("INCOMPLETE: the check is still running, or was stopped before its end")
    return "\n".join(lines) + "\n"


def save_recording(out: Path, recorded: Path, done: list[dict], provenance: dict | None) -> dict:
    """``out/recording.json``: the pages' outputs so far, with the machine's provenance."""
    found = [p["page"] for p in done if (recorded / f"{p['page']}.json").is_file()]
    if provenance is None:
        return {"path": None, "why": "torch could not say which machine this is"}
    if not found:
        return {"path": None, "why": "no page has run yet"}
    cells = {}
    dropped = []
    for page in found:
        done = json.loads((recorded / f"{page}.json").read_text(encoding="utf-8"))
        cells[page] = done["cells"]
        dropped += done["dropped"]
    return recordings.write(out, provenance, cells, dropped)


def check(args: argparse.Namespace) -> int:
    """``run``, once the check's packages can be imported."""
    started = time.monotonic() - float(os.environ.pop("GPU_CHECK_ELAPSED", "0"))
    deadline = started + args.budget
    out = args.out.resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    env = os.environ | kernel_environment(PROFILE)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    # The pages' kernel is this Python, whichever "python3" kernel Jupyter knows elsewhere.
    spec = workdir / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "GPU check", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    env["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(workdir / "jupyter"), env.get("JUPYTER_PATH")])
    )

    facts = machine_facts(env)
    gpus = int(facts.get("gpu_count") or 0)
    provenance = facts.pop("provenance", None)  # None: torch could not say (the report does)
    report: dict = {"profile": PROFILE, "jobs": args.jobs, "budget_s": args.budget}
    report["machine"] = facts
    report["install"] = json.loads(os.environ.pop("GPU_CHECK_INSTALL", "null")) or {
        "status": "skipped",
        "why": "this Python already has the check's packages",
    }
    report["data"] = choose_data(facts, env, args.offline)
    report["skipped"] = []
    if not gpus:
        report["skipped"].append(
            "no CUDA GPU: the CUDA tests skip (the report lists them) and the pages run their "
            "CPU path, not their GPU path"
        )
    print(f"GPU check: {facts.get('machine') or facts.get('error')}", flush=True)
    if args.no_tests:
        report["tests"] = {"status": "skipped", "why": "--no-tests", "results": []}
    else:
        print("CUDA tests ...", flush=True)
        budget = min(args.tests_timeout, deadline - time.monotonic() - 60)
        report["tests"] = run_tests(args.tests, env=env, gpus=gpus, timeout=budget, out=out)
    pages = executed_pages(args.docs)
    if args.pages:
        unknown = set(args.pages) - {p.stem for p in pages}
        if unknown:
            raise SystemExit(f"--pages: no executed page named {', '.join(sorted(unknown))}")
        pages = [p for p in pages if p.stem in args.pages]
    print(f"{len(pages)} page(s), {args.jobs} at a time ...", flush=True)

    def save(done: list[dict], complete: bool = False) -> str:
        """Write the report so far: a check killed from outside still leaves one."""
        report.update(complete=complete, pages=done)
        report["recording"] = save_recording(out, workdir / "recorded", done, provenance)
        report["seconds"] = round(time.monotonic() - started, 1)
        (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        text = summary(report)
        (out / "report.txt").write_text(text, encoding="utf-8")
        return text

    save([])
    done = run_pages(
        pages,
        save,
        jobs=args.jobs,
        page_timeout=args.page_timeout,
        deadline=deadline,
        gpus=gpus,
        env=env,
        workdir=workdir,
        out=out,
    )
    print(save(done, complete=True), end="")
    shutil.rmtree(workdir, ignore_errors=True)
    bad_pages = any(p["status"] != OK for p in report["pages"])
    return 1 if bad_pages or report["tests"]["status"] in (FAILED, TIMED_OUT) else 0


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Install what is missing (offline), then check, in the Python that has it all."""
    if not missing_modules() or args.no_install:
        return check(args)
    started = time.monotonic()
    if not (args.offline / "wheels").is_dir():
        raise SystemExit(
            f"this Python lacks {', '.join(missing_modules())} and {args.offline} holds no "
            "wheels: run `nox -s gpu-check -- prepare` on a machine with a network"
        )
    installed = install(args.offline, args.venv)
    if installed["status"] == FAILED:
        print(installed["log"], file=sys.stderr)
        raise SystemExit(f"pip could not install from {args.offline}: see above")
    env = os.environ | {
        "GPU_CHECK_INSTALL": json.dumps(installed),
        "GPU_CHECK_ELAPSED": str(time.monotonic() - started),
        "PYTHONPATH": os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
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
    go.add_argument("--page-timeout", type=int, default=300, help="per page (default 300)")
    go.add_argument("--tests-timeout", type=int, default=180, help="all tests (default 180)")
    go.add_argument("--pages", nargs="+", help="only these pages (names without .md)")
    go.add_argument("--docs", type=Path, default=ROOT / "docs" / "en", help=argparse.SUPPRESS)
    go.add_argument("--tests", type=Path, default=ROOT / "tests" / "gpukit", help=argparse.SUPPRESS)
    go.add_argument("--no-tests", action="store_true", help="pages only")
    go.add_argument("--no-install", action="store_true", help=argparse.SUPPRESS)
    page = commands.add_parser("_page")  # one page, in a worker process of its own
    page.add_argument("page", type=Path)
    page.add_argument("--timeout", type=float, required=True)
    page.add_argument("--result", type=Path, required=True)
    page.add_argument("--progress", type=Path, required=True)
    page.add_argument("--record", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run" and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "prepare":
        manifest = prepare(args.dir, args.python)
        print(
            f"{args.dir}: {len(manifest['wheels'])} wheels for CPython {', '.join(args.python)} "
            f"and Fashion-MNIST's first {SUBSET['train']:,} / {SUBSET['test']:,} images; "
            f"{manifest['bytes'] / 2**20:.1f} MiB, {manifest['bytes_with_repository'] / 2**20:.1f} "
            f"MiB with the repository (limit {SIZE_LIMIT / 2**20:.0f} MiB)"
        )
        return 0
    if args.command == "_page":
        try:
            result = execute_page(
                args.page, args.timeout, Path.cwd(), args.progress, record=args.record
            )
        except Exception as err:  # e.g. the kernel did not start: a failed page, said so
            import traceback

            result = {"status": FAILED, "error": f"{type(err).__name__}: {err}"}
            result["traceback"] = traceback.format_exc()
        args.result.write_text(json.dumps(result), encoding="utf-8")
        return 0
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
