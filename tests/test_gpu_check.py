"""The GPU check (gpukit_site.gpu_check) on a planted site: its report on a page that fails, one
that hangs, one whose kernel dies, one whose raises-exception cell does not raise, and one that
works; the CUDA tests it runs; the pages read as myst-nb reads them; the data subset; the size
limit."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gpukit
from gpukit_site import gpu_check, kernel_env

ROOT = Path(__file__).resolve().parents[1]
# As MAINTAINERS.md runs it on a bare Python: the package found in src/, nothing installed.
CHECK = [sys.executable, "-m", "gpukit_site.gpu_check"]
BARE = {"PYTHONPATH": str(ROOT / "src")}

FRONT = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n"
PAGES = {
    # The kernel runs in the build's environment (gpukit_site.kernel_env): the quick profile, and
    # the IPython profile whose short tracebacks the failing page's report shows.
    "works": FRONT + "gpus: 2\n---\n\n# Works\n\n```{code-cell} ipython3\nimport os\n"
    "assert os.environ['GPUKIT_PROFILE'] == 'quick'\n"
    "assert os.environ['IPYTHONDIR'].endswith('ipython')\n```\n\n"
    "```{code-cell} ipython3\n:tags: [raises-exception]\nint('x')\n```\n",
    "fails": FRONT + "gpus: 1\n---\n\n# Fails\n\n```{code-cell} ipython3\ndef ratio(a, b):\n"
    "    return a / b\n```\n\n```{code-cell} ipython3\n:tags: [raises-exception]\n"
    "int('expected')\n```\n\nSome text.\n\n```{code-cell} ipython3\nratio(1, 0)\n```\n\n"
    "```{code-cell} ipython3\nprint('never reached')\n```\n",
    "hangs": FRONT + "---\n\n# Hangs\n\n```{code-cell} ipython3\nimport time\n```\n\n"
    "```{code-cell} ipython3\ntime.sleep(1_000)\n```\n",
    "does-not-raise": FRONT + "---\n\n# Tagged\n\n```{code-cell} ipython3\n```\n\n"
    "```{code-cell} ipython3\n:tags: [raises-exception]\nx = 1\n```\n",
    "dies": FRONT + "---\n\n# Dies\n\n```{code-cell} ipython3\nimport os, signal\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n```\n",
    "index": "# Index\n\nNot a notebook: not executed.\n",
}
TESTS = """
import pytest

@pytest.mark.gpus(1)
def test_one_gpu():
    pass

@pytest.mark.gpus(2)
def test_two_gpus():
    pass

def test_without_a_gpu():  # not CUDA-marked: not the check's
    pass

@pytest.mark.gpus(0)
@pytest.mark.xfail(reason="a known bug")
def test_expected_to_fail():
    assert False
"""
TIMEOUT = 20


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    site = tmp_path_factory.mktemp("site")
    docs = site / "docs"
    tests = site / "tests"
    out = site / "out"
    docs.mkdir()
    tests.mkdir()
    for name, text in PAGES.items():
        (docs / f"{name}.md").write_text(text, encoding="utf-8")
    shutil.copy(ROOT / "tests" / "conftest.py", tests)
    (tests / "test_planted.py").write_text(TESTS, encoding="utf-8")
    command = [*CHECK, "run", "--docs", str(docs), "--tests", str(tests)]
    command += ["--out", str(out), "--page-timeout", str(TIMEOUT), "--jobs", "4"]
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "GPUKIT_PROFILE")}
    env |= BARE
    done = subprocess.run(command, cwd=site, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # pages failed
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    result["text"] = (out / "report.txt").read_text(encoding="utf-8")
    return result


def page(report: dict, name: str) -> dict:
    return next(p for p in report["pages"] if p["page"] == name)


def test_the_report_names_the_machine(report):
    assert report["machine"]["torch"] == torch.__version__
    assert len(report["machine"]["gpus"]) == torch.cuda.device_count()
    assert report["profile"] == "quick" and report["complete"] is True
    assert f"torch {torch.__version__}" in report["text"]
    pages = ["dies", "does-not-raise", "fails", "hangs", "works"]
    assert [p["page"] for p in report["pages"]] == pages


def test_a_failing_page_names_its_cell_and_traceback(report):
    failed = page(report, "fails")
    assert failed["status"] == "failed"
    assert failed["cell"] == 3 and failed["source"] == "ratio(1, 0)"
    text = PAGES["fails"]
    assert failed["line"] == text[: text.index("ratio(1, 0)")].count("\n")  # the fence's line
    # What the page would show (the build's IPython profile), and Python's whole traceback.
    assert failed["error"] == "ZeroDivisionError: division by zero"
    assert "return a / b" in failed["full_traceback"]
    assert "expected" not in failed["full_traceback"]  # the tagged cell's error is not this one
    assert "cell 3 (fails.md:" in report["text"]


def test_a_hanging_page_times_out_at_its_cell(report):
    hung = page(report, "hangs")
    assert hung["status"] == "timed out"
    assert hung["cell"] == 2 and hung["source"] == "time.sleep(1_000)"
    assert TIMEOUT <= hung["seconds"] < TIMEOUT + 30


def test_a_kernel_that_dies_fails_its_page_and_says_so(report):
    died = page(report, "dies")
    assert died["status"] == "failed" and died["error"].startswith("Kernel died")
    assert "Kernel died" in report["text"]


def test_a_raises_exception_cell_must_raise(report):
    tagged = page(report, "does-not-raise")
    assert tagged["status"] == "failed" and tagged["cell"] == 2  # after an empty cell
    assert "raises-exception" in tagged["error"]


def test_a_working_page_says_it_ran_on_fewer_devices(report):
    works = page(report, "works")
    assert works["status"] == "ok", works
    gpus = torch.cuda.device_count()
    assert ("note" in works) == (gpus < 2)
    if gpus < 2:
        assert "wants 2 GPU(s): ran its fewer-device path" in works["note"]


def test_the_cuda_tests_run_where_they_can(report):
    results = {r["test"].split("::")[-1]: r for r in report["tests"]["results"]}
    assert set(results) == {"test_one_gpu", "test_two_gpus", "test_expected_to_fail"}
    xfailed = results["test_expected_to_fail"]
    assert (xfailed["result"], xfailed["message"]) == ("xfailed", "a known bug")
    gpus = torch.cuda.device_count()
    if gpus == 0:
        assert report["tests"]["required"] is False
        assert results["test_one_gpu"]["result"] == "skipped"
        assert "needs 1 CUDA GPU(s), this machine has 0" in results["test_one_gpu"]["message"]
        assert any("no CUDA GPU" in s for s in report["skipped"])
    else:
        assert report["tests"]["required"] is True
        assert results["test_one_gpu"]["result"] == "passed"
        assert results["test_two_gpus"]["result"] == ("passed" if gpus >= 2 else "not run")


def test_the_check_uses_the_builds_kernel_environment():
    env = kernel_env.kernel_environment("quick", {})
    assert Path(env["IPYTHONDIR"]) == ROOT / "conf" / "ipython"


def code_cells(notebook) -> list[tuple[str, list[str]]]:
    return [(c.source, c.metadata.get("tags", [])) for c in notebook.cells if c.cell_type == "code"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_jupytext_reads_every_page_as_myst_nb_does(lang):
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    pages = gpu_check.executed_pages(ROOT / "docs" / lang)
    assert len(pages) >= 10
    for name, notebook in pages.items():
        path = ROOT / "docs" / lang / f"{name}.md"
        text = path.read_text(encoding="utf-8")
        ours = code_cells(notebook)
        assert ours == code_cells(read_myst_markdown_notebook(text, MdParserConfig())), path
        # Each code cell's line, as the report gives it, is its fence's.
        lines = text.splitlines()
        for n, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                fence = lines[notebook.metadata["source_map"][n] - 1]
                assert fence.startswith("```{code-cell}"), (path, n, fence)


def test_the_data_subset_is_fashion_mnist_that_gpukit_reads(tmp_path):
    full = gpukit.find_fashion_mnist(download=False)
    gpu_check.write_subset(full, tmp_path)
    for split, (images, _) in gpu_check.FASHION_MNIST_FILES.items():
        n = gpu_check.SUBSET[split]
        # The first records of the real file, byte for byte.
        sub, real = (gzip.decompress((d / images).read_bytes()) for d in (tmp_path, full))
        assert sub[16:] == real[16 : 16 + n * 784] and sub[8:16] == real[8:16]
    # gpukit reads all of them (it checks that images and labels agree), and no more.
    train, test = gpukit.load_data_fashion_mnist(64, root=tmp_path)
    assert len(train.dataset) == gpu_check.SUBSET["train"]
    assert len(test.dataset) == gpu_check.SUBSET["test"]
    with pytest.raises(ValueError, match="n_train"):
        gpukit.load_data_fashion_mnist(64, root=tmp_path, n_train=gpu_check.SUBSET["train"] + 1)


def test_the_subset_holds_what_the_quick_profile_reads():
    quick = gpukit.PROFILES["quick"]
    for work in (quick.lenet, quick.resnet):
        assert work.n_train <= gpu_check.SUBSET["train"] and work.n_test <= gpu_check.SUBSET["test"]
    # Sizes the pages pick themselves: n_train first on a line, n_test last.
    for path in (ROOT / "docs" / "en").glob("*.md"):
        for line in path.read_text(encoding="utf-8").splitlines():
            quick_sizes = [int(n.replace("_", "")) for n in re.findall(r"quick=([\d_]+)", line)]
            if quick_sizes and re.match(r"\s*n_train\b", line):
                assert quick_sizes[0] <= gpu_check.SUBSET["train"], (path, line)
            if quick_sizes and re.match(r"\s*(n_train, )?n_test\b", line):
                assert quick_sizes[-1] <= gpu_check.SUBSET["test"], (path, line)


def test_the_size_check_refuses_a_folder_over_the_limit(tmp_path):
    repo = tmp_path / "repo"
    folder = tmp_path / "offline"
    repo.mkdir()
    folder.mkdir()
    (repo / "tracked.txt").write_bytes(b"x" * 1000)
    (repo / "untracked.txt").write_bytes(b"x" * 10**6)  # not sent: not counted
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "tracked.txt"], cwd=repo, check=True)
    with open(folder / "wheel.whl", "wb") as f:
        f.truncate(2**20)
    assert gpu_check.check_size(repo, folder, limit=2**20 + 1001) == 2**20 + 1000
    with pytest.raises(ValueError, match="over the 1 MiB"):
        gpu_check.check_size(repo, folder, limit=2**20 + 1000)


def test_on_one_gpu_the_tests_are_required_and_two_gpu_tests_left_out(tmp_path):
    """The one-GPU path, on any machine: told it has one GPU, the check requires the one-GPU
    test to run (here, without a GPU, it fails for that reason) and names the two-GPU test as
    not run."""
    tests = tmp_path / "tests"
    out = tmp_path / "out"
    tests.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests)
    (tests / "test_planted.py").write_text(TESTS, encoding="utf-8")
    env = os.environ | BARE
    report = gpu_check.run_tests(tests, env=env, gpus=1, timeout=120, out=out)
    results = {r["test"].split("::")[-1]: r for r in report["results"]}
    assert report["required"] is True
    assert results["test_two_gpus"]["result"] == "not run"
    assert results["test_two_gpus"]["message"] == "needs 2 CUDA GPU(s), this machine has 1"
    if torch.cuda.device_count() == 0:
        assert report["status"] == "failed"
        assert results["test_one_gpu"]["result"] in ("failed", "error")
        assert "GPUKIT_REQUIRE_GPUS is set" in results["test_one_gpu"]["message"]
    else:
        assert results["test_one_gpu"]["result"] == "passed"


def test_pages_that_cannot_start_within_the_budget_are_not_run(tmp_path):
    """The whole check keeps to its budget: the hanging page's cell gets the time left (not
    its own 300 s), the page after it cannot finish, and the report says so."""
    docs = tmp_path / "docs"
    out = tmp_path / "out"
    docs.mkdir()
    (docs / "hangs.md").write_text(PAGES["hangs"], encoding="utf-8")
    late = PAGES["hangs"].replace("1_000", "60").replace("# Hangs", "# Late")
    (docs / "late.md").write_text(late, encoding="utf-8")  # longer than the time left
    budget = 90  # a cell gets at most budget - MARGIN - SHUTDOWN s, less the check's start
    command = [*CHECK, "run", "--docs", str(docs), "--out", str(out)]
    command += ["--no-tests", "--jobs", "1", "--budget", str(budget), "--page-timeout", "300"]
    env = os.environ | BARE
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    hung, late = report["pages"]
    assert hung["status"] == "timed out" and hung["seconds"] <= budget - gpu_check.MARGIN
    assert late["status"] == "not run" and "budget" in late["error"]
    assert report["seconds"] <= budget


def test_a_result_line_cut_short_by_the_budget_is_left_out(tmp_path):
    """pytest killed while pytest-reportlog wrote a line: the results before it stand."""
    log = tmp_path / "tests.jsonl"
    passed = {"$report_type": "TestReport", "nodeid": "t.py::test_a", "when": "call"}
    passed |= {"outcome": "passed", "duration": 0.5, "longrepr": None}
    log.write_text(json.dumps(passed) + "\n" + json.dumps(passed)[:20], encoding="utf-8")
    assert gpu_check.read_log(log) == {"t.py::test_a": {"result": "passed", "seconds": 0.5}}


def test_a_torch_that_hangs_does_not_hold_the_check(monkeypatch):
    monkeypatch.setattr(gpu_check, "FACTS", "import time; time.sleep(60)")
    facts = gpu_check.machine_facts(dict(os.environ), timeout=1)
    assert facts == {"error": "torch and gpukit did not say within 1 s"}
