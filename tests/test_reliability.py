"""Reliability of the build (issue 7): it fails loudly, never publishes stale or wrong outputs,
and survives interruption.

Most tests build tiny fixture sites with the project's own conf/: ``tests/fixtures/reliability``
(a page with seeded training and errors, and a plain page), built twice from an empty cache,
side by side, and shared by the tests through a module-scoped fixture; and one-page sites
written by the tests that need a page of their own (a cell that hangs, a kill during
execution, missing data, ...).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from sphinx_site import (
    ANSI,
    ROOT,
    Build,
    copy_fixture_site,
    executed_pages,
    load_conf,
    machine_paths,
    sphinx_build,
    sphinx_command,
)

import gpukit
from gpukit_site.ext import execution
from gpukit_site.ext.execution import repair_cache

LANG = "en"
PAGES = ("outputs", "plain")  # the executed pages of tests/fixtures/reliability
# Everything in an output that reports a wall-clock time or a rate derived from one.
TIMES = [
    re.compile(r"\d+\.\d+ sec\b"),  # gpukit.timing.format_seconds
    re.compile(r"[\d,]+(\.\d+)? (examples|images)/sec\b"),
    re.compile(r"\d+(\.\d+)? ([KMGT]i?B/s|[GT]FLOPS)\b"),
]


# -- Helpers --------------------------------------------------------------------------------
FRONT_MATTER = """\
---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---
"""


def one_page_site(root: Path, body: str) -> Path:
    """``root/en``: an index and ``page.md`` made of the front matter and ``body``."""
    (root / LANG).mkdir(parents=True)
    (root / LANG / "index.md").write_text("# Site\n\n```{toctree}\npage\n```\n", encoding="utf-8")
    page = FRONT_MATTER + "\n# Page\n\n" + textwrap.dedent(body)
    (root / LANG / "page.md").write_text(page, encoding="utf-8")
    return root


def code_cell(source: str, tags: tuple[str, ...] = ()) -> str:
    options = f":tags: [{', '.join(tags)}]\n" if tags else ""
    return f"```{{code-cell}} ipython3\n{options}{textwrap.dedent(source).strip()}\n```\n\n"


def write_fashion_mnist(folder: Path, n_train: int = 96, n_test: int = 48) -> Path:
    """A tiny, fixed Fashion-MNIST (the four gzip IDX files) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        for kind, magic, array in (("images-idx3", 2051, images), ("labels-idx1", 2049, labels)):
            header = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
            payload = gzip.compress(header + array.tobytes(), mtime=0)
            (folder / f"{prefix}-{kind}-ubyte.gz").write_bytes(payload)
    return folder


def executed_outputs(cache: Path) -> dict[str, list[list[str]]]:
    """Page name -> per code cell, its outputs as text, from the jupyter-cache of a build."""
    from jupyter_cache import get_cache

    jc = get_cache(cache)
    pages = {}
    for record in jc.list_cache_records():
        notebook = jc.get_cache_bundle(record.pk).nb
        cells = []
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            texts = []
            for output in cell.get("outputs", []):
                if output.output_type == "stream":
                    texts.append(f"{output.name}: {output.text}")
                elif output.output_type == "error":
                    texts.append("\n".join([output.ename, output.evalue, *output.traceback]))
                else:
                    texts.append(json.dumps(output.get("data", {}), sort_keys=True))
            cells.append(texts)
        pages[Path(record.uri).stem] = cells
    return pages


def mask_times(text: str) -> str:
    for pattern in TIMES:
        text = pattern.sub("<time>", text)
    return text


def cell_outputs(html: str) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    return [div.get_text() for div in soup.select("div.cell_output")]


# -- The reliability fixture site, built twice from an empty cache ----------------------------
@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_fashion_mnist(tmp_path_factory.mktemp("data") / "fashion-mnist")


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict:
    """Two independent builds (own copy, own empty cache), run side by side, and their outputs.

    Build b is edited and rebuilt later (see ``edits``): read its pages from ``pages``.
    """
    runs = {}
    for name in ("a", "b"):
        tmp = tmp_path_factory.mktemp(f"build-{name}")
        runs[name] = {"site": copy_fixture_site(tmp / "src", "reliability"), "out": tmp / "out"}

    def build(run: dict) -> Build:
        return sphinx_build(run["site"], LANG, run["out"], env={"GPUKIT_DATA": str(data_dir)})

    with ThreadPoolExecutor(2) as pool:
        done = dict(zip(runs, pool.map(build, runs.values()), strict=True))
    for name, run in runs.items():
        assert done[name].returncode == 0, done[name].log
        run["build"] = done[name]
        run["outputs"] = executed_outputs(run["out"] / "cache")
        run["pages"] = {page: done[name].page(page) for page in PAGES}
    return runs


# -- 1. A cell tagged raises-exception must raise -----------------------------------------------
def test_raises_exception_cells_that_raise_build_cleanly(twice: dict) -> None:
    build = twice["a"]["build"]
    assert "tagged raises-exception" not in build.log
    outputs = cell_outputs(twice["a"]["pages"]["outputs"])
    assert any("RuntimeError" in text for text in outputs), outputs


def test_raises_exception_cell_that_does_not_raise_fails_the_build(tmp_path: Path) -> None:
    body = (
        code_cell("print('fine')", ("raises-exception",))
        + code_cell("1 / 0", ("raises-exception",))
        + code_cell("1 / 0", ("raises-exception", "remove-output"))
    )
    site = one_page_site(tmp_path / "src", body)
    build = sphinx_build(site, LANG, tmp_path / "out")
    assert build.returncode != 0, build.log
    problems = re.findall(
        r"page\.md:(\d+): WARNING: code cell tagged raises-exception (.*)", build.log
    )
    assert len(problems) == 2, build.log  # the cell that does raise is fine
    (line_1, why_1), (line_2, why_2) = problems
    assert why_1.startswith("ran without raising") and "print('fine')" in build.log
    assert why_2.startswith("has its outputs removed")
    assert int(line_1) < int(line_2)


# -- 2. A cell that hangs is stopped by the per-cell timeout --------------------------------------
def test_hanging_cell_is_stopped_by_the_timeout_and_fails_the_build(tmp_path: Path) -> None:
    site = one_page_site(tmp_path / "src", code_cell("import time\n\ntime.sleep(600)"))
    start = time.monotonic()
    build = sphinx_build(site, LANG, tmp_path / "out", "-D", "nb_execution_timeout=5", timeout=90)
    assert time.monotonic() - start < 60
    assert build.returncode != 0
    assert build.reports_failure_of("page.md")
    assert "CellTimeoutError" in build.log
    assert "time.sleep(600)" in build.log  # the cell that hung


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_conf_fails_loudly_and_bounds_every_cell(monkeypatch, profile: str) -> None:
    conf = load_conf(monkeypatch, profile)
    assert conf["nb_execution_raise_on_error"] is True
    assert conf["nb_execution_show_tb"] is True
    assert not conf.get("nb_execution_allow_errors", False)
    assert isinstance(conf["nb_execution_timeout"], int)
    assert 0 < conf["nb_execution_timeout"] <= 3600
    assert (
        "gpukit_site.ext.execution" in conf["extensions"]
    )  # the cache repair and the raises-exception check


# -- 3. The cache key follows gpukit; prose changes execute nothing -------------------------------
@pytest.fixture
def key_root(tmp_path: Path) -> Path:
    """A copy of what the cache key hashes, plus some prose that it must not hash."""
    for tree in ("src/gpukit", "conf/ipython"):
        shutil.copytree(ROOT / tree, tmp_path / tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src" / "gpukit_site").mkdir()
    shutil.copy(ROOT / "src" / "gpukit_site" / "kernel_env.py", tmp_path / "src" / "gpukit_site")
    (tmp_path / "docs" / "en").mkdir(parents=True)
    (tmp_path / "docs" / "en" / "page.md").write_text("# Prose\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# Read me\n", encoding="utf-8")
    return tmp_path


def test_cache_key_changes_with_every_gpukit_file(key_root: Path) -> None:
    key = execution.cache_key(key_root, "quick")
    files = sorted(p for p in (key_root / "src" / "gpukit").rglob("*") if p.is_file())
    assert len(files) >= 5
    for path in files:
        original = path.read_bytes()
        path.write_bytes(original + b"\n_changed = 1\n")
        assert execution.cache_key(key_root, "quick") != key, path
        path.write_bytes(original)
    assert execution.cache_key(key_root, "quick") == key


def test_cache_key_changes_with_new_renamed_and_profile_files(key_root: Path) -> None:
    key = execution.cache_key(key_root, "quick")
    gpukit_dir = key_root / "src" / "gpukit" / "zz"  # last: a rename keeps its place in order
    gpukit_dir.mkdir()
    new = gpukit_dir / "extra.py"
    new.write_text("X = 1\n", encoding="utf-8")
    assert execution.cache_key(key_root, "quick") != key
    with_extra = execution.cache_key(key_root, "quick")
    new.rename(gpukit_dir / "other.py")
    renamed = execution.cache_key(key_root, "quick")
    assert renamed not in (key, with_extra)  # the same bytes under another name
    (gpukit_dir / "other.py").unlink()
    assert execution.cache_key(key_root, "quick") == key
    # The IPython profile shapes every output (e.g. how tracebacks look).
    startup = next((key_root / "conf" / "ipython").rglob("*.py"))
    original = startup.read_text(encoding="utf-8")
    startup.write_text(original + "\n_changed = 1\n", encoding="utf-8")
    assert execution.cache_key(key_root, "quick") != key
    startup.write_text(original, encoding="utf-8")
    # So does the kernel's environment (say, a log level that quiets an output).
    kernel_env = key_root / "src" / "gpukit_site" / "kernel_env.py"
    kernel_env.write_text(
        kernel_env.read_text(encoding="utf-8").replace('"6"', '"5"'), encoding="utf-8"
    )
    assert execution.cache_key(key_root, "quick") != key


def test_cache_key_ignores_docstrings_comments_and_layout(key_root: Path) -> None:
    """Editing a docstring re-executes no page; editing what a function computes does."""
    key = execution.cache_key(key_root, "quick")
    timing = key_root / "src" / "gpukit" / "timing.py"
    original = timing.read_text(encoding="utf-8")
    assert '"""Format a duration' in original and "zero=True):.4f} sec" in original
    documented = original.replace('"""Format a duration', '"""Format a time span')
    documented = documented.replace("import time\n", "import time  # the wall clock\n\n")
    timing.write_text(documented, encoding="utf-8")
    assert execution.cache_key(key_root, "quick") == key
    timing.write_text(documented.replace(":.4f} sec", ":.3f} sec"), encoding="utf-8")
    assert execution.cache_key(key_root, "quick") != key


def test_cache_key_ignores_prose_and_bytecode(key_root: Path) -> None:
    key = execution.cache_key(key_root, "quick")
    (key_root / "docs" / "en" / "page.md").write_text("# Other prose\n", encoding="utf-8")
    (key_root / "README.md").write_text("# Changed\n", encoding="utf-8")
    cache = key_root / "src" / "gpukit" / "__pycache__"
    cache.mkdir()
    (cache / "data.cpython-311.pyc").write_bytes(b"\0\1\2")
    assert execution.cache_key(key_root, "quick") == key


def test_cache_key_ignores_editor_lock_files(key_root: Path) -> None:
    # Emacs marks an unsaved buffer with a dangling link ".#<name>"; docs-live rebuilds then.
    key = execution.cache_key(key_root, "quick")
    gpukit_dir = key_root / "src" / "gpukit"
    (gpukit_dir / ".#devices.py").symlink_to("user@host.1234:1700000000")
    (gpukit_dir / ".#backup.py").write_text("X = 1\n", encoding="utf-8")
    assert execution.cache_key(key_root, "quick") == key


def test_cache_key_names_profile_torch_and_hardware(key_root: Path) -> None:
    import torch

    quick = execution.cache_key(key_root, "quick")
    full = execution.cache_key(key_root, "full")
    assert quick != full
    assert quick.startswith(execution.hardware_signature() + "-quick-")
    assert f"-torch{torch.__version__.split('+')[0]}-" in quick


def test_cache_key_tells_cpu_machines_apart(key_root: Path, monkeypatch) -> None:
    # A copied docs/_build or a shared CI cache must not show one CPU's outputs as another's:
    # training ends at other accuracies under other kernels.
    epyc = gpukit.MachineInfo(
        gpus=(), cuda=None, cores=2, cpu_model="AMD EPYC 7B13", cpu_kernels="AVX2"
    )
    machines = [
        epyc,
        dataclasses.replace(epyc, kernel_settings={"ONEDNN_MAX_CPU_ISA": "SSE41"}),
        dataclasses.replace(epyc, cpu_model="Intel(R) Xeon(R) CPU @ 2.20GHz"),
        dataclasses.replace(epyc, cores=64),
    ]
    keys = set()
    for machine in machines:
        monkeypatch.setattr(gpukit, "describe_machine", machine.describe)
        keys.add(execution.cache_key(key_root, "quick"))
    assert len(keys) == 4, keys
    assert all(re.fullmatch(r"[\w.+=-]+", key) for key in keys), keys


def test_conf_puts_the_cache_in_the_keyed_folder(monkeypatch) -> None:
    conf = load_conf(monkeypatch, "quick")
    key = execution.cache_key(ROOT, "quick")
    assert conf["nb_execution_mode"] == "cache"
    assert Path(conf["nb_execution_cache_path"]) == ROOT / "docs/_build/.jupyter_cache" / key


@pytest.fixture(scope="module")
def edits(twice: dict, data_dir: Path) -> dict:
    """Rebuild build b after a prose-only edit, then after a code edit, of plain.md."""
    site = twice["b"]["site"]
    out = twice["b"]["out"]
    page = site / LANG / "plain.md"
    env = {"GPUKIT_DATA": str(data_dir)}
    builds = {}
    for edit, (old, new) in {
        "prose": ("Some prose.", "Better prose."),
        "code": ("2 + 3", "2 + 4"),
    }.items():
        text = page.read_text(encoding="utf-8")
        assert old in text
        page.write_text(text.replace(old, new), encoding="utf-8")
        build = sphinx_build(site, LANG, out, env=env)
        builds[edit] = (build, build.page("plain") if build.returncode == 0 else "")
    return builds


def test_first_build_executes_every_page(twice: dict) -> None:
    for build in twice.values():
        assert sorted(executed_pages(build["build"].log)) == sorted(PAGES)


def test_prose_edit_executes_nothing(edits: dict) -> None:
    build, html = edits["prose"]
    assert build.returncode == 0, build.log
    assert executed_pages(build.log) == []
    assert "Using cached notebook" in build.log
    assert "Better prose." in html and "plain: 5" in html


def test_code_edit_executes_exactly_that_page(edits: dict) -> None:
    build, html = edits["code"]
    assert build.returncode == 0, build.log
    assert executed_pages(build.log) == ["plain"]
    assert "plain: 6" in html and "Better prose." in html


# -- 4. A build killed during execution leaves nothing that breaks the next one -------------------
def kernels_of(pid: int) -> list[int]:
    """Kernel processes started by process ``pid`` (they live in a session of their own)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"JPY_PARENT_PID={pid}".encode() in environ:
            found.append(int(proc.name))
    return found


def test_sigkill_during_execution_then_rebuild_publishes_everything(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    hold = tmp_path / "hold"
    cell = f"""
        import time
        from pathlib import Path

        Path({str(inside)!r}).touch()  # tells the test that the kernel is in this cell
        while Path({str(hold)!r}).exists():
            time.sleep(0.1)
        print("after")
    """
    site = one_page_site(tmp_path / "src", code_cell("print('before')") + code_cell(cell))
    out = tmp_path / "out"
    hold.touch()
    with open(tmp_path / "killed.log", "w") as log:
        proc = subprocess.Popen(
            sphinx_command(site, LANG, out),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole
        )
        deadline = time.monotonic() + 60
        while not inside.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        reached = inside.exists()
        alive_before = kernels_of(proc.pid)  # proves kernels_of sees the build's kernel
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert reached and proc.returncode == -signal.SIGKILL, (tmp_path / "killed.log").read_text()
    assert alive_before, "the kernel of the killed build was never seen"
    # The kernel runs in a session of its own: it notices that its parent is gone and exits.
    deadline = time.monotonic() + 10
    while kernels_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert kernels_of(proc.pid) == []

    hold.unlink()
    build = sphinx_build(site, LANG, out)
    assert build.returncode == 0, build.log
    assert executed_pages(build.log) == ["page"]
    outputs = cell_outputs(build.page("page"))
    assert any("before" in o for o in outputs) and any("after" in o for o in outputs)


# Run sphinx-build, but SIGKILL it the moment jupyter-cache has committed the record of an
# executed notebook and before it writes the notebook file: the worst moment to be killed.
KILL_INSIDE_CACHE_WRITE = """
import os, signal, sys
from jupyter_cache.cache import db

create_record = db.NbCacheRecord.create_record

def create_record_then_die(*args, **kwargs):
    create_record(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

db.NbCacheRecord.create_record = create_record_then_die
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigkill_while_the_cache_is_written_then_rebuild_succeeds(tmp_path: Path) -> None:
    site = one_page_site(tmp_path / "src", code_cell("print('cached:', 6 * 7)"))
    out = tmp_path / "out"
    command = sphinx_command(site, LANG, out)
    assert command[1:3] == ["-m", "sphinx"]
    killed = subprocess.run(
        [sys.executable, "-c", KILL_INSIDE_CACHE_WRITE, *command[3:]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert not list((out / "cache").glob("executed/*/base.ipynb"))  # the record has no notebook

    build = sphinx_build(site, LANG, out)
    assert build.returncode == 0, build.log
    assert "removed 1 incomplete entry" in build.log
    assert executed_pages(build.log) == ["page"]
    assert any("cached: 42" in o for o in cell_outputs(build.page("page")))


def _cached_notebook(cache_dir: Path, text: str) -> tuple[object, Path]:
    """Put a small executed notebook into a jupyter-cache; return the cache and its file."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(cache_dir)
    kernelspec = {"name": "python3", "display_name": "Python 3"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    cell = nbformat.v4.new_code_cell(f"print({text!r})", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    nb.cells = [cell]
    record = cache.cache_notebook_bundle(
        CacheBundleIn(nb, "page.md"), check_validity=False, overwrite=True
    )
    return cache, cache_dir / "executed" / record.hashkey / "base.ipynb"


@pytest.mark.parametrize("damage", ["missing", "truncated", "empty folder"])
def test_repair_cache_removes_incomplete_entries(tmp_path: Path, damage: str) -> None:
    cache, good = _cached_notebook(tmp_path / "cache", "kept")
    _, path = _cached_notebook(tmp_path / "cache", "damaged")
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_text(path.read_text(encoding="utf-8")[:100], encoding="utf-8")
    else:  # a kill while jupyter-cache replaced the entry: its record is already gone
        records = [r for r in cache.list_cache_records() if path.parent.name == r.hashkey]
        from jupyter_cache.cache.db import NbCacheRecord

        NbCacheRecord.remove_records([r.pk for r in records], cache.db)
        path.unlink()
    removed = repair_cache(tmp_path / "cache")
    assert len(removed) == 1, removed
    assert [r.hashkey for r in cache.list_cache_records()] == [good.parent.name]
    assert not path.parent.exists()
    assert good.is_file()
    assert repair_cache(tmp_path / "cache") == []  # nothing left to repair


# -- 5. Two builds from an empty cache print the same outputs, apart from times -------------------
def test_two_builds_print_identical_outputs_except_times(twice: dict) -> None:
    a = twice["a"]["outputs"]
    b = twice["b"]["outputs"]
    assert sorted(a) == sorted(PAGES)
    text = json.dumps(a["outputs"])
    assert "loss " in text and "test acc " in text  # the page trained something
    assert re.search(r"one epoch: \d+\.\d+ sec", text)  # and printed a time, masked below
    masked = {page: mask_times(json.dumps(cells, indent=1)) for page, cells in a.items()}
    masked_b = {page: mask_times(json.dumps(cells, indent=1)) for page, cells in b.items()}
    assert masked == masked_b


def test_warning_lands_where_it_happened(twice: dict) -> None:
    cells = twice["a"]["outputs"]["outputs"]
    assert [
        "stdout: before the warning\n",
        "stderr: UserWarning: a warning from the page\n",
        "stdout: after the warning\n",
    ] in cells


def test_time_mask_hides_only_times() -> None:
    assert mask_times("one epoch: 0.1234 sec, loss 2.302585") == "one epoch: <time>, loss 2.302585"
    assert mask_times("1,234.5 examples/sec on cpu") == "<time> on cpu"
    assert mask_times("12.3 GB/s, 1.5 TFLOPS") == "<time>, <time>"


# -- 7. No executed output shows a path of the build machine --------------------------------------
def test_error_from_inside_a_library_shows_no_machine_path(twice: dict) -> None:
    outputs = cell_outputs(twice["a"]["pages"]["outputs"])
    assert any("RuntimeError: mat1 and mat2 shapes cannot be multiplied" in o for o in outputs)
    assert any("ValueError: seconds must be a finite number >= 0" in o for o in outputs)
    # Warnings too: one raised inside numpy, one attributed to a cell's line.
    assert any("RuntimeWarning: Mean of empty slice" in o for o in outputs)
    assert any("UserWarning: Converting a tensor" in o for o in outputs)
    for name, html in twice["a"]["pages"].items():
        for text in cell_outputs(html):
            leaked = [p for p in machine_paths() if p in text]
            assert not leaked, f"{name}: {leaked} in {text!r}"


# -- 9. Missing data: one message that says where it looked and how to get the data -------------
def test_missing_data_fails_with_one_message_and_no_urllib_traceback(tmp_path: Path) -> None:
    empty = tmp_path / "no-data"
    empty.mkdir()
    body = code_cell(
        "import gpukit as d2l\n\ntrain_iter, test_iter = d2l.load_data_fashion_mnist(256)"
    )
    site = one_page_site(tmp_path / "src", body)
    build = sphinx_build(site, LANG, tmp_path / "out", env={"GPUKIT_DATA": str(empty)})
    assert build.returncode != 0
    log = ANSI.sub("", build.log)
    assert build.reports_failure_of("page.md")
    # The message's lines: where it looked (each folder, why), then how to get the data.
    messages = re.findall(r"DataNotFoundError: (Fashion-MNIST not found.*?\n.*?\n.*?)\n", log)
    assert messages, log
    assert all(m == messages[0] for m in messages)  # the same one message, however often shown
    message = messages[0]
    assert f"{empty} (given by the GPUKIT_DATA environment variable): missing" in message
    assert "sudo apt install dataset-fashion-mnist" in message
    for frame in ("urllib", "urlopen", "http.client", "socket.py", "gpukit/data.py"):
        assert frame not in log, frame
