"""The benchmark's logic (bench/): ratios, targets, the record, the tables, the edits.

No timing is asserted here: ``nox -s bench`` measures; these tests check what it does with
the measurements, on made-up numbers.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

from bench import report  # noqa: E402
from bench.build import (  # noqa: E402
    CODE_EDIT,
    count_executed,
    documents_read,
    edit_first_code_cell,
    edit_prose,
    failure_summary,
    site_metrics,
    sphinx_command,
)

import bench_table  # noqa: E402  (conf/_ext)


def steps(**overrides: tuple[float, int]) -> dict:
    base = {
        "cold-en": (400.0, 9),
        "cold-zh": (40.0, 0),
        "warm": (30.0, 0),
        "prose-edit": (35.0, 0),
        "code-edit": (50.0, 1),
    }
    base.update(overrides)
    return {key: {"seconds": s, "executed": n} for key, (s, n) in base.items()}


def cpu_runs() -> list[dict]:
    common = {"n_train": 256, "n_test": 256, "epochs": 1, "devices": ["cpu"]}
    return [
        {**common, "processes": 1, "backend": "gloo", "sec_per_epoch": 4.0, "test_acc": 0.12,
         "batch_size": 32, "lr": 0.05, "threads": 2},
        {**common, "processes": 2, "backend": "gloo", "sec_per_epoch": 5.0, "test_acc": 0.11,
         "batch_size": 64, "lr": 0.1, "devices": ["cpu", "cpu"], "threads": 1},
    ]  # fmt: skip


def gpu_runs(speedup: float, acc_two: float, processes: int = 2) -> list[dict]:
    runs = copy.deepcopy(cpu_runs())
    for run in runs:
        run["backend"], run["threads"] = "nccl", None
    runs[1]["processes"] = processes
    runs[0]["test_acc"] = 0.90
    runs[1]["test_acc"] = acc_two
    runs[1]["sec_per_epoch"] = runs[0]["sec_per_epoch"] / speedup
    return runs


def record(**parts: object) -> dict:
    machine = {
        "description": "CPU only, 2 cores",
        "hardware_signature": "cpu",
        "cpu": "cpu: Some CPU, 2 cores, 2 PyTorch thread(s)",
        "cpu_count": 2,
        "torch": "2.13.0",
        "profile": "quick",
        "date": "2026-01-01 12:00 UTC",
        "load_average": {"start": [9.5, 9.0, 8.0], "end": [10.0, 9.0, 8.0]},
    }
    runs = cpu_runs()
    report.add_speedups(runs)
    out = {
        "schema": report.SCHEMA,
        "machine": machine,
        "run_seconds": 612.0,
        "build": {
            "steps": steps(),
            "edited_page": "async-computation",
            "targets": report.build_targets(steps()),
        },
        "site": {
            lang: {
                "pages": 14,
                "total_bytes": 1_234_567,
                "median_bytes": 41_000,
                "largest_svg": {"name": "plot.svg", "bytes": 120_300},
            }
            for lang in ("en", "zh")
        },
        "compute": {
            "matmul": [
                {
                    "kind": "matmul",
                    "dtype": "fp32",
                    "n": 256,
                    "device": "cpu (2 threads)",
                    "value": 20.1,
                    "unit": "GFLOP/s",
                    "fraction_of_peak": None,
                },
            ],
            "copy": [
                {
                    "kind": "copy",
                    "direction": "within_device",
                    "pinned": False,
                    "mib": 64,
                    "device": "cpu (2 threads)",
                    "value": 5.3,
                    "unit": "GB/s",
                    "fraction_of_peak": None,
                },
            ],
        },
        "training": {"runs": runs, "target": report.training_target(runs, 0)},
    }
    out.update(parts)
    return out


# -- Numbers and targets --------------------------------------------------------------------
def test_median_and_ratio() -> None:
    assert report.median([3.0, 1.0, 2.0]) == 2.0
    assert report.median([1.0, 2.0]) == 1.5
    with pytest.raises(ValueError):
        report.median([])
    assert report.ratio(1.0, 4.0) == 0.25
    assert report.ratio(1.0, 0.0) is None


def test_build_targets_met() -> None:
    targets = {t["key"]: t for t in report.build_targets(steps())}
    assert targets["zh-over-en"]["value"] == pytest.approx(0.1)
    assert targets["warm-over-cold"]["value"] == pytest.approx(30 / 440)
    assert all(t["met"] for t in targets.values())


def test_build_targets_missed() -> None:
    # Fast enough, but the Chinese build executed a page: the target is missed all the same.
    targets = {t["key"]: t for t in report.build_targets(steps(**{"cold-zh": (40.0, 1)}))}
    assert targets["zh-over-en"]["met"] is False
    slow = steps(**{"warm": (100.0, 0), "prose-edit": (35.0, 1), "code-edit": (90.0, 2)})
    targets = {t["key"]: t for t in report.build_targets(slow)}
    assert targets["warm-over-cold"]["met"] is False
    assert targets["prose-edit"]["met"] is False
    assert targets["code-edit"]["met"] is False


def test_build_targets_of_missing_steps() -> None:
    assert report.build_targets({}) == []
    only_cold = {k: v for k, v in steps().items() if k.startswith("cold")}
    assert [t["key"] for t in report.build_targets(only_cold)] == ["zh-over-en"]


def test_build_targets_after_a_failed_step() -> None:
    failed = steps()
    failed["cold-zh"]["error"] = "zh: WARNING: Executing notebook failed: CellTimeoutError"
    del failed["warm"], failed["prose-edit"], failed["code-edit"]
    (zh,) = report.build_targets(failed)
    assert zh["value"] is None and zh["met"] is None


def test_target_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError, match="op"):
        report.target("x", 1.0, 1.0, "<")


def test_training_target_without_gpus_is_not_applicable() -> None:
    t = report.training_target(cpu_runs(), num_gpus=0)
    assert t["met"] is None and t["reason"] == "no-gpus"
    assert t["speedup"] == pytest.approx(0.8)
    assert report.training_target(cpu_runs()[:1], num_gpus=1)["reason"] == "one-gpu"


@pytest.mark.parametrize(
    ("speedup", "acc_two", "met"),
    [(1.9, 0.895, True), (1.81, 0.91, True), (1.5, 0.90, False), (1.95, 0.87, False)],
)
def test_training_target_on_two_gpus(speedup: float, acc_two: float, met: bool) -> None:
    t = report.training_target(gpu_runs(speedup, acc_two), num_gpus=2)
    assert t["reason"] is None
    assert t["speedup"] == pytest.approx(speedup)
    assert t["met"] is met


def test_training_target_is_stated_for_two_gpus() -> None:
    t = report.training_target(gpu_runs(3.5, 0.9, processes=4), num_gpus=4)
    assert t["met"] is None and t["reason"] == "not-two-gpus"


def test_speedups_are_relative_to_the_one_process_run() -> None:
    runs = cpu_runs()
    report.add_speedups(runs)
    assert [r["speedup"] for r in runs] == [pytest.approx(1.0), pytest.approx(0.8)]


def test_page_weights() -> None:
    assert report.page_weights({"a.html": 10, "b.html": 30, "c.html": 20}) == {
        "pages": 3,
        "total_bytes": 60,
        "median_bytes": 20,
    }
    assert report.page_weights({})["pages"] == 0


# -- The record -----------------------------------------------------------------------------
def test_json_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "bench.json"
    report.write_json(record(), path)
    assert report.read_json(path) == record()
    assert report.same_machine(report.read_json(path), "cpu")
    assert not report.same_machine(report.read_json(path), "2xNVIDIA-H200")


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]", '{"schema": 999}'])
def test_read_json_rejects_what_is_not_a_record(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bench.json"
    path.write_text(content, encoding="utf-8")
    assert report.read_json(path) is None
    assert report.read_json(tmp_path / "missing.json") is None
    assert not report.same_machine(None, "cpu")


# -- The tables -----------------------------------------------------------------------------
def table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("| ")]


def test_markdown_tables_in_english() -> None:
    text = report.render_markdown(record(), "en")
    assert not any(line.startswith("#") for line in text.splitlines())  # no headings
    rows = table_rows(text)
    assert "| Cold build, zh | 40.0 s | 0 | zh / en ≤ 0.25, none executed | 0.10: met |" in rows
    assert any(
        r.startswith("| Rebuild with no change, en + zh |") and "0.07: met" in r for r in rows
    )
    assert any("code edit of `async-computation`" in r and "| 1 |" in r for r in rows)
    assert "| Largest plot SVG | 120.3 kB (`plot.svg`) | 120.3 kB (`plot.svg`) |" in rows
    assert "| fp32 matmul 256×256 | cpu (2 threads) | 20.1 GFLOP/s | — |" in rows
    assert any("host memory copy, 64 MiB (no GPU: no host ↔ device link)" in r for r in rows)
    assert any(
        r.startswith(
            "| DDP, 2 gloo processes (CPU stand-ins for GPUs) | cpu, cpu (1 thread each) |"
        )
        for r in rows
    )
    assert any(r.startswith("| 1 process (CPU) | cpu (2 threads) |") for r in rows)
    assert any("D2L's published run: 1 GPU" in r and "12.2 s" in r and "0.91" in r for r in rows)
    assert any(
        "D2L's published run: 2 GPUs" in r and "7.50 s" in r and "0.67–0.73" in r for r in rows
    )
    assert "not applicable: no GPUs" in text
    assert "the machine was busy" in text  # load above the core count
    assert "10 min 12 s" in text
    assert "Environment:" not in text
    with_env = record()
    with_env["machine"]["environment"] = {"OMP_WAIT_POLICY": "PASSIVE"}
    assert "Environment: `OMP_WAIT_POLICY=PASSIVE`." in report.render_markdown(with_env, "en")
    # Every table row has as many cells as its header.
    for block in text.split("\n\n"):
        rows = table_rows(block)
        if rows:
            assert len({r.count(" | ") for r in rows}) == 1, block


def test_markdown_warns_of_runs_too_short_for_their_accuracy() -> None:
    assert [report.total_steps(r) for r in cpu_runs()] == [8, 4]  # 256 images, 1 epoch
    text = report.render_markdown(record(), "en")
    assert (
        "“1 process (CPU)” and “DDP, 2 gloo processes (CPU stand-ins for GPUs)”: "
        "only 8 and 4 optimizer steps in all" in text
    )
    assert "总共只走了 8 和 4 步优化" in report.render_markdown(record(), "zh")
    runs = gpu_runs(1.9, 0.895)
    for run in runs:
        run["n_train"], run["epochs"] = 60_000, 10
    report.add_speedups(runs)
    long = record(training={"runs": runs, "target": report.training_target(runs, 2)})
    assert "optimizer steps" not in report.render_markdown(long, "en")


def test_markdown_tables_in_chinese() -> None:
    text = report.render_markdown(record(), "zh")
    assert "冷构建，zh" in text and "不适用：没有 GPU" in text and "D2L 公布的结果" in text
    assert (
        "仅 CPU，2 核" in text and "10 分 12 秒" in text and "cpu, cpu（每个进程 1 个线程）" in text
    )
    assert "Cold build" not in text
    with pytest.raises(ValueError, match="lang"):
        report.render_markdown(record(), "fr")


def test_markdown_on_two_gpus_and_partial_records() -> None:
    runs = gpu_runs(1.9, 0.895)
    report.add_speedups(runs)
    gpu = record(training={"runs": runs, "target": report.training_target(runs, 2)})
    text = report.render_markdown(gpu, "en")
    assert "DDP, 2 GPUs (NCCL)" in text and "speed-up 1.90×, accuracy gap 0.01: met" in text
    assert "decay" not in text  # no schedule recorded: a constant rate
    for run in runs:
        run["schedule"] = "warmup-cosine"
    assert "lr 0.1 (warm-up + cosine decay), 1 epoch" in report.render_markdown(gpu, "en")
    assert "学习率 0.1（预热 + 余弦衰减），1 轮" in report.render_markdown(gpu, "zh")
    compute_only = {k: v for k, v in record().items() if k not in ("build", "site")}
    text = report.render_markdown(compute_only, "en")
    assert "Build cost" not in text and "Compute" in text


def test_markdown_of_a_failed_build() -> None:
    failed = record()
    build = failed["build"]
    build["failed"] = "cold-en"
    build["steps"] = {"cold-en": {"seconds": 310.0, "executed": 5, "error": "en: CellTimeoutError"}}
    build["targets"] = report.build_targets(build["steps"])
    text = report.render_markdown(failed, "en")
    assert "| Cold build, en | 310.0 s | 5 | — | failed |" in table_rows(text)
    assert "Cold build, en failed, so the steps after it were not run: en: CellTimeoutError" in text
    assert "失败" in report.render_markdown(failed, "zh")


# -- The build steps ------------------------------------------------------------------------
LOG = """\
reading sources... [ 50%] about
/tmp/x/docs/en/use-gpu.md: Executing notebook using local CWD [mystnb]
reading sources... [100%] use-gpu
Executed notebook in 12.34 seconds [mystnb]
Executing notebook failed: CellExecutionError [mystnb]
"""


def test_failure_summary() -> None:
    log = (
        "[IPKernelApp] WARNING | Kernel is running over TCP without encryption.\n"
        "zmq.error.ZMQError: Socket operation on non-socket\n"
        "/x/en/multiple-gpus.md: WARNING: Executing notebook failed: CellTimeoutError\n"
        "nbclient.exceptions.CellTimeoutError: A cell timed out while it was being executed\n"
    )
    summary = failure_summary(log)
    assert "IPKernelApp" not in summary
    assert summary.startswith("/x/en/multiple-gpus.md: WARNING: Executing notebook failed")
    assert "A cell timed out" in summary
    assert "no error line" in failure_summary("")


def test_log_parsing() -> None:
    assert count_executed(LOG) == 1
    assert count_executed("Using cached notebook: ID=3 [mystnb]") == 0
    # A crash report repeats the last messages, indented: not another execution.
    assert count_executed(LOG + "    /x/en/a.md: Executing notebook using local CWD [mystnb]") == 1
    assert documents_read(LOG) == ["about", "use-gpu"]
    # With FORCE_COLOR (some CI runners) Sphinx colours its progress lines.
    coloured = (
        "\x1b[2K\x1b[01mreading sources... \x1b[39;49;00m[ 10%] \x1b[35mabout\x1b[39;49;00m"
        "\x1b[2K\x1b[01mreading sources... \x1b[39;49;00m[ 20%] \x1b[35mapi\x1b[39;49;00m"
    )
    assert documents_read(coloured) == ["about", "api"]


PAGE = """\
# Title

Some prose.

```{code-cell} ipython3
:tags: [hide-output]
x = 1
```

More prose.

```{code-cell} ipython3
y = 2
```
"""


def test_edits(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    edit_first_code_cell(page)
    lines = page.read_text(encoding="utf-8").splitlines()
    assert lines[lines.index("x = 1") + 1] == CODE_EDIT
    assert lines.count(CODE_EDIT) == 1
    edit_prose(page)
    text = page.read_text(encoding="utf-8")
    assert text.startswith(PAGE.split("x = 1")[0]) and text.endswith("the prose only.\n")
    page.write_text("# Only prose\n", encoding="utf-8")
    with pytest.raises(ValueError, match="code-cell"):
        edit_first_code_cell(page)


def test_sphinx_command_matches_the_noxfile(tmp_path: Path) -> None:
    command = sphinx_command(tmp_path / "tree", "zh", tmp_path / "out", tmp_path / "cache")
    args = command[command.index("-b") :]
    doctrees = tmp_path / "out" / "doctrees" / "html" / "zh"
    assert args[:8] == ["-b", "html", "-t", "zh", "-c", str(tmp_path / "tree" / "conf"), "-d",
                        str(doctrees)]  # fmt: skip
    assert args[8:10] == ["-W", "--keep-going"]
    assert "-n" in args and f"nb_execution_cache_path={tmp_path / 'cache'}" in args
    # The same options, in the same order, as the command in noxfile's sphinx_build().
    noxfile = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    function = next(
        node for node in noxfile.body
        if isinstance(node, ast.FunctionDef) and node.name == "sphinx_build"
    )  # fmt: skip
    run = next(node for node in ast.walk(function) if isinstance(node, ast.Call))
    nox_options = [
        arg.value for arg in run.args
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("-")
    ]  # fmt: skip
    bench_options = [arg for arg in command if arg.startswith("-") and arg not in ("-m", "-D")]
    assert nox_options == bench_options == ["-b", "-t", "-c", "-d", "-W", "--keep-going", "-n"]


def test_site_metrics(tmp_path: Path) -> None:
    html = tmp_path / "html"
    for name, size in [("index.html", 100), ("a/b.html", 300), ("_static/x.html", 10_000)]:
        (html / name).parent.mkdir(parents=True, exist_ok=True)
        (html / name).write_bytes(b"x" * size)
    (html / "_images").mkdir()
    (html / "_images" / "small.svg").write_bytes(b"x" * 5)
    (html / "_images" / "big.svg").write_bytes(b"x" * 50)
    metrics = site_metrics(html)
    assert metrics["pages"] == 2 and metrics["total_bytes"] == 400
    assert metrics["largest_svg"] == {"name": "big.svg", "bytes": 50}


# -- The About page's directive -------------------------------------------------------------
def write_bench(build_dir: Path, signature: str) -> None:
    rec = record()
    rec["machine"]["hardware_signature"] = signature
    report.write_json(rec, build_dir / "bench.json")
    (build_dir / "bench.md").write_text(report.render_markdown(rec, "en"), encoding="utf-8")
    (build_dir / "bench.zh.md").write_text(report.render_markdown(rec, "zh"), encoding="utf-8")


def test_bench_table_shows_this_machines_tables(tmp_path: Path) -> None:
    write_bench(tmp_path, "cpu")
    text, found = bench_table.benchmark_text(tmp_path, "en", "cpu", "CPU only, 2 cores")
    assert found and text == (tmp_path / "bench.md").read_text(encoding="utf-8")
    text, found = bench_table.benchmark_text(tmp_path, "zh", "cpu", "CPU only, 2 cores")
    assert found and "冷构建" in text


def test_bench_table_without_a_benchmark_of_this_machine(tmp_path: Path) -> None:
    text, found = bench_table.benchmark_text(tmp_path, "en", "cpu", "CPU only, 2 cores")
    assert not found and "`nox -s bench`" in text and "other hardware" not in text
    write_bench(tmp_path, "2xNVIDIA-H200")
    text, found = bench_table.benchmark_text(tmp_path, "en", "cpu", "CPU only, 2 cores")
    assert not found and "other hardware" in text
    text, found = bench_table.benchmark_text(tmp_path, "zh", "cpu", "CPU only, 2 cores")
    assert not found and "nox -s bench" in text and "另一台硬件" in text
