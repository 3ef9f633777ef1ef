"""The benchmark's numbers as data: ratios, targets, the JSON record and the Markdown tables.

Nothing here measures anything, so all of it is unit-tested (tests/test_bench.py). The record
(``bench.json``) is a plain dict; :func:`render_markdown` turns it into the tables that
``nox -s bench`` prints and the About page shows, in English or in Chinese.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCHEMA = 1

#: Targets of the build steps (issue 8).
ZH_OVER_EN_MAX = 0.25  # the Chinese build reuses every English execution
WARM_OVER_COLD_MAX = 0.10  # a rebuild with nothing changed
#: Target of the training runs: speed-up on 2 GPUs, and the accuracy it may lose.
SPEEDUP_MIN = 1.8
ACC_TOLERANCE = 0.01

#: D2L's published ResNet-18 runs (the concise multi-GPU section; a machine with 4 V100s,
#: of which 2 were used). Not measured here: shown for comparison only.
D2L_ANCHORS: list[dict[str, Any]] = [
    {
        "gpus": 1,
        "sec_per_epoch": 12.2,
        "test_acc": "0.91",
        "n_train": 60_000,
        "n_test": 10_000,
        "batch_size": 256,
        "lr": 0.1,
        "epochs": 10,
    },
    {
        "gpus": 2,
        "sec_per_epoch": 7.5,
        "test_acc": "0.67–0.73",
        "n_train": 60_000,
        "n_test": 10_000,
        "batch_size": 512,
        "lr": 0.2,
        "epochs": 10,
    },
]


# -- Numbers --------------------------------------------------------------------------------
def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or ``None`` when the denominator is not positive."""
    return None if denominator <= 0 else numerator / denominator


def target(
    key: str,
    value: float | None,
    limit: float,
    op: str,
    *,
    executed: int | None = None,
    executed_expected: int | None = None,
) -> dict[str, Any]:
    """One target: ``value op limit`` and, where given, ``executed == executed_expected``.

    ``met`` is ``None`` when the value could not be measured.
    """
    if op not in ("<=", ">=", "=="):
        raise ValueError(f"op must be '<=', '>=' or '==', got {op!r}")
    if value is None:
        met = None
    elif op == "<=":
        met = value <= limit
    elif op == ">=":
        met = value >= limit
    else:
        met = value == limit
    if met is not None and executed_expected is not None:
        met = met and executed == executed_expected
    return {"key": key, "value": value, "limit": limit, "op": op, "met": met}


def build_targets(steps: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets of the build steps, from each step's ``seconds`` and ``executed``.

    ``steps`` maps ``cold-en``, ``cold-zh``, ``warm``, ``prose-edit`` and ``code-edit`` to
    dicts with those two keys. A step that was not run gives no target; a failed step (one
    with an ``error``) gives targets that were not measured (``value`` and ``met`` ``None``).
    """

    def done(*keys: str) -> bool:
        return all(key in steps and "error" not in steps[key] for key in keys)

    def executed(key: str) -> int | None:
        return steps[key].get("executed") if done(key) else None

    out = []
    if "cold-zh" in steps:
        value = None
        if done("cold-en", "cold-zh"):
            value = ratio(steps["cold-zh"]["seconds"], steps["cold-en"]["seconds"])
        out.append(
            target(
                "zh-over-en",
                value,
                ZH_OVER_EN_MAX,
                "<=",
                executed=executed("cold-zh"),
                executed_expected=0,
            )
        )
    if "warm" in steps:
        value = None
        if done("cold-en", "cold-zh", "warm"):
            cold = steps["cold-en"]["seconds"] + steps["cold-zh"]["seconds"]
            value = ratio(steps["warm"]["seconds"], cold)
        out.append(
            target(
                "warm-over-cold",
                value,
                WARM_OVER_COLD_MAX,
                "<=",
                executed=executed("warm"),
                executed_expected=0,
            )
        )
    if "prose-edit" in steps:
        out.append(target("prose-edit", executed("prose-edit"), 0, "=="))
    if "code-edit" in steps:
        out.append(target("code-edit", executed("code-edit"), 1, "=="))
    return out


def training_target(runs: list[dict[str, Any]], num_gpus: int) -> dict[str, Any]:
    """Speed-up of the N-device run over the 1-device run, and the accuracy it kept.

    Applies only to a run on 2 GPUs; otherwise ``met`` is ``None`` and ``reason`` says why.
    """
    one = next((r for r in runs if r["processes"] == 1), None)
    many = next((r for r in runs if r["processes"] > 1), None)
    result: dict[str, Any] = {
        "key": "speedup",
        "limit": SPEEDUP_MIN,
        "acc_tolerance": ACC_TOLERANCE,
        "speedup": None,
        "acc_gap": None,
        "met": None,
        "reason": None,
    }
    if one is not None and many is not None:
        result["speedup"] = ratio(one["sec_per_epoch"], many["sec_per_epoch"])
        result["acc_gap"] = abs(one["test_acc"] - many["test_acc"])
    if num_gpus == 0:
        result["reason"] = "no-gpus"
    elif num_gpus == 1:
        result["reason"] = "one-gpu"
    elif many is None or many["processes"] != 2 or many["backend"] != "nccl":
        result["reason"] = "not-two-gpus"
    elif result["speedup"] is None:
        result["reason"] = "no-time"
    else:
        result["met"] = (
            result["speedup"] >= SPEEDUP_MIN and result["acc_gap"] <= ACC_TOLERANCE + 1e-12
        )
    return result


def add_speedups(runs: list[dict[str, Any]]) -> None:
    """Set each run's ``speedup`` over the first 1-process run (in place)."""
    one = next((r for r in runs if r["processes"] == 1), None)
    for run in runs:
        run["speedup"] = None if one is None else ratio(one["sec_per_epoch"], run["sec_per_epoch"])


FEW_STEPS = 100  # fewer steps leave batch norm's running averages far behind (0.9 ** 100)


def total_steps(run: dict[str, Any]) -> int:
    """Optimizer steps of a training run: minibatches per epoch times epochs."""
    return -(-run["n_train"] // run["batch_size"]) * run["epochs"]


def page_weights(sizes: dict[str, int]) -> dict[str, Any]:
    """Count, total and median of the sizes (bytes) of a language's HTML pages."""
    values = sorted(sizes.values())
    return {
        "pages": len(values),
        "total_bytes": sum(values),
        "median_bytes": median(values) if values else 0,
    }


# -- The record -----------------------------------------------------------------------------
def write_json(record: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_json(path: Path) -> dict[str, Any] | None:
    """The record at ``path``, or ``None`` if there is none or it is not a record of ours."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        return None
    return record


def same_machine(record: dict[str, Any] | None, signature: str) -> bool:
    """Whether ``record`` was measured on hardware with this ``gpukit.hardware_signature()``."""
    return bool(record) and record.get("machine", {}).get("hardware_signature") == signature


# -- Formatting -----------------------------------------------------------------------------
def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def fmt_duration(seconds: float, lang: str = "en") -> str:
    minutes, rest = divmod(round(seconds), 60)
    if lang == "zh":
        return f"{minutes} 分 {rest:02d} 秒" if minutes else f"{rest} 秒"
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def fmt_bytes(n: float) -> str:
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def fmt_rate(value: float, unit: str) -> str:
    return f"{value:,.1f} {unit}" if value >= 10 else f"{value:.2f} {unit}"


TEXT: dict[str, dict[str, str]] = {
    "en": {
        "intro": (
            "Measured on **{machine}** ({cpu}), PyTorch {torch}, profile `{profile}`, "
            "{date}, by `nox -s bench` in {run_time}. Load average (1 min) {load_start} at the "
            "start and {load_end} at the end on {cores} cores{noisy}.{environment}"
        ),
        "environment": " Environment: {vars}.",
        "noisy": ": the machine was busy with other work, so the times are noisy",
        "build_head": (
            "**Build cost.** Each step runs `sphinx-build` with the arguments of `nox -s docs`, "
            "on a temporary copy of the tree, starting from an empty execution cache. The "
            "edits change the page that executes fastest, in both languages."
        ),
        "reread": "The rebuild with no change read these documents again: {read}.",
        "failed": "failed",
        "failed_line": "{step} failed, so the steps after it were not run: {error}",
        "step": "Step",
        "wall": "Wall time",
        "executed": "Notebooks executed",
        "target": "Target",
        "result": "Result",
        "cold-en": "Cold build, en",
        "cold-zh": "Cold build, zh",
        "warm": "Rebuild with no change, en + zh{repeats}",
        "repeats": " (median of {n})",
        "prose-edit": "After a prose edit of `{page}`, en + zh",
        "code-edit": "After a code edit of `{page}`, en + zh",
        "t-zh-over-en": "zh / en ≤ {limit:.2f}, none executed",
        "t-warm-over-cold": "≤ {limit:.2f} × cold en + zh, none executed",
        "t-prose-edit": "none executed",
        "t-code-edit": "exactly 1 executed",
        "met": "met",
        "missed": "missed",
        "na": "not measured",
        "site_head": (
            "**Site** (the cold build). Page weight counts each page's HTML file, without the "
            "shared static files; the largest plot is the largest SVG in `_images`."
        ),
        "pages": "HTML pages",
        "total": "Total HTML",
        "median_page": "Median page",
        "largest_svg": "Largest plot SVG",
        "compute_head": (
            "**Compute** (`gpukit.measure`: the median of up to 5 rounds; GPU work is timed "
            "with CUDA events)."
        ),
        "measurement": "Measurement",
        "device": "Device",
        "value": "Result",
        "of_peak": "Of peak",
        "matmul": "{dtype} matmul {n}×{n}",
        "copy-host_to_device": "host → device copy, {memory} memory, {size}",
        "copy-device_to_host": "device → host copy, {memory} memory, {size}",
        "copy-within_device": "device → device copy, {size}",
        "copy-host": "host memory copy, {size} (no GPU: no host ↔ device link)",
        "pinned": "pinned",
        "pageable": "pageable",
        "train_head": (
            "**ResNet-18 on Fashion-MNIST** (`gpukit.train_ddp`; time per epoch: the median "
            "over the epochs, training only). The last two rows are D2L's published runs, "
            "not measured here."
        ),
        "few_steps": (
            "{runs}: only {steps} optimizer steps in all. That is too few for batch norm's "
            "running averages, with which the test accuracy is measured, to catch up with the "
            "weights, so these accuracies say little about the training (the concise multi-GPU "
            "page shows why)."
        ),
        "and": " and ",
        "and_numbers": " and ",
        "quoted": "“{}”",
        "run": "Run",
        "devices": "Devices",
        "data": "Data and settings",
        "sec_epoch": "Sec/epoch",
        "speedup": "Speed-up",
        "test_acc": "Test acc",
        "threads": "{devices} ({n} thread{s}{each})",
        "each": " each",
        "run-one-gloo": "1 process (CPU)",
        "run-one-nccl": "1 GPU, 1 process",
        "run-many-gloo": "DDP, {n} gloo processes (CPU stand-ins for GPUs)",
        "run-many-nccl": "DDP, {n} GPUs (NCCL)",
        "anchor": "D2L's published run: {n} GPU{s} (4× V100 machine)",
        "workload": (
            "{n_train:,} / {n_test:,} images, batch {batch}, lr {lr:g}{schedule}, {epochs} epoch{s}"
        ),
        "warmup-cosine": " (warm-up + cosine decay)",
        "train_target": (
            "Target: speed-up ≥ {limit:.1f}× on 2 GPUs, test accuracy within {tol:.2f} of the "
            "1-GPU run: {verdict}."
        ),
        "measured": "speed-up {speedup}×, accuracy gap {gap}",
        "no-gpus": "not applicable: no GPUs",
        "one-gpu": "not applicable: only 1 GPU",
        "not-two-gpus": "not applicable: the target is stated for 2 GPUs",
        "no-time": "not measured",
    },
    "zh": {
        "intro": (
            "测量于 **{machine}**（{cpu}），PyTorch {torch}，`{profile}` 配置，{date}，"
            "由 `nox -s bench` 运行，用时 {run_time}。{cores} 个核心上的 1 分钟平均负载：开始时 "
            "{load_start}，结束时 {load_end}{noisy}。{environment}"
        ),
        "environment": "环境变量：{vars}。",
        "noisy": "；机器同时在做别的工作，因此时间有噪声",
        "build_head": (
            "**构建开销。** 每一步都用 `nox -s docs` 的参数运行 `sphinx-build`，"
            "在源码树的临时副本上、从空的执行缓存开始。修改的是执行最快的页面，两种语言都改。"
        ),
        "reread": "无改动重建重新读取了这些文档：{read}。",
        "failed": "失败",
        "failed_line": "“{step}”失败，之后的步骤没有运行：{error}",
        "step": "步骤",
        "wall": "耗时",
        "executed": "执行的笔记本",
        "target": "目标",
        "result": "结果",
        "cold-en": "冷构建，en",
        "cold-zh": "冷构建，zh",
        "warm": "无改动重建，en + zh{repeats}",
        "repeats": "（{n} 次的中位数）",
        "prose-edit": "修改 `{page}` 的正文后，en + zh",
        "code-edit": "修改 `{page}` 的代码后，en + zh",
        "t-zh-over-en": "zh / en ≤ {limit:.2f}，不执行笔记本",
        "t-warm-over-cold": "≤ {limit:.2f} × 冷构建 en + zh，不执行笔记本",
        "t-prose-edit": "不执行笔记本",
        "t-code-edit": "恰好执行 1 个",
        "met": "达到",
        "missed": "未达到",
        "na": "未测量",
        "site_head": (
            "**网站**（冷构建的结果）。页面大小只计每页的 HTML 文件，不含共享的静态文件；"
            "最大的图是 `_images` 中最大的 SVG。"
        ),
        "pages": "HTML 页面数",
        "total": "HTML 总大小",
        "median_page": "页面大小中位数",
        "largest_svg": "最大的 SVG 图",
        "compute_head": (
            "**计算**（`gpukit.measure`：最多 5 轮的中位数；GPU 上的工作用 CUDA 事件计时）。"
        ),
        "measurement": "测量项",
        "device": "设备",
        "value": "结果",
        "of_peak": "占峰值",
        "matmul": "{dtype} 矩阵乘法 {n}×{n}",
        "copy-host_to_device": "主机 → 设备复制，{memory}，{size}",
        "copy-device_to_host": "设备 → 主机复制，{memory}，{size}",
        "copy-within_device": "设备 → 设备复制，{size}",
        "copy-host": "内存复制，{size}（没有 GPU：没有主机 ↔ 设备链路）",
        "pinned": "锁页内存",
        "pageable": "可分页内存",
        "train_head": (
            "**在 Fashion-MNIST 上训练 ResNet-18**（`gpukit.train_ddp`；每轮时间取各轮的中位数，"
            "只计训练）。最后两行是 D2L 公布的结果，并非在这里测得。"
        ),
        "few_steps": (
            "{runs}总共只走了 {steps} 步优化。这么少的步数，批量归一化的滑动平均值还跟不上权重，"
            "而测试精度正是用这些平均值测出来的，所以这里的精度说明不了训练的效果"
            "（原因见多 GPU 的简洁实现一节）。"
        ),
        "and": "和",
        "and_numbers": " 和 ",
        "quoted": "“{}”",
        "run": "运行",
        "devices": "设备",
        "data": "数据与设置",
        "sec_epoch": "每轮秒数",
        "speedup": "加速比",
        "test_acc": "测试精度",
        "threads": "{devices}（{each}{n} 个线程）",
        "each": "每个进程 ",
        "cpu_only": "仅 CPU，{cores} 核",
        "run-one-gloo": "1 个进程（CPU）",
        "run-one-nccl": "1 块 GPU，1 个进程",
        "run-many-gloo": "DDP，{n} 个 gloo 进程（CPU 代替 GPU）",
        "run-many-nccl": "DDP，{n} 块 GPU（NCCL）",
        "anchor": "D2L 公布的结果：{n} 块 GPU（4× V100 机器）",
        "workload": (
            "{n_train:,} / {n_test:,} 张图像，批量 {batch}，学习率 {lr:g}{schedule}，{epochs} 轮"
        ),
        "warmup-cosine": "（预热 + 余弦衰减）",
        "train_target": (
            "目标：2 块 GPU 上加速比 ≥ {limit:.1f}×，测试精度与 1 块 GPU 相差不超过 {tol:.2f}："
            "{verdict}。"
        ),
        "measured": "加速比 {speedup}×，精度差 {gap}",
        "no-gpus": "不适用：没有 GPU",
        "one-gpu": "不适用：只有 1 块 GPU",
        "not-two-gpus": "不适用：目标针对 2 块 GPU",
        "no-time": "未测量",
    },
}


def _verdict(met: bool | None, text: dict[str, str]) -> str:
    return text["na"] if met is None else text["met" if met else "missed"]


def _table(header: list[str], align: str, rows: list[list[str]]) -> list[str]:
    """A Markdown pipe table; ``align`` has one letter per column, ``l`` or ``r``."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |")
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _measurement_label(m: dict[str, Any], text: dict[str, str]) -> str:
    size = f"{m['mib']} MiB" if m.get("mib") else ""
    if m["kind"] == "matmul":
        return text["matmul"].format(dtype=m["dtype"], n=m["n"])
    if m["direction"] == "within_device" and m["device"].startswith("cpu"):
        return text["copy-host"].format(size=size)
    memory = text["pinned" if m.get("pinned") else "pageable"]
    return text[f"copy-{m['direction']}"].format(memory=memory, size=size)


def _workload(w: dict[str, Any], text: dict[str, str]) -> str:
    return text["workload"].format(
        n_train=w["n_train"],
        n_test=w["n_test"],
        batch=w["batch_size"],
        lr=w["lr"],
        # D2L's runs and records from before schedules existed: a constant rate.
        schedule=text.get(w.get("schedule", "constant"), ""),
        epochs=w["epochs"],
        s="s" if w["epochs"] != 1 else "",
    )


def _build_lines(build: dict[str, Any], text: dict[str, str]) -> list[str]:
    steps = build["steps"]
    page = build.get("edited_page", "?")
    targets = {t["key"]: t for t in build.get("targets", [])}
    repeats = steps.get("warm", {}).get("repeats", 1)
    names = {
        "cold-en": text["cold-en"],
        "cold-zh": text["cold-zh"],
        "warm": text["warm"].format(
            repeats=text["repeats"].format(n=repeats) if repeats > 1 else ""
        ),
        "prose-edit": text["prose-edit"].format(page=page),
        "code-edit": text["code-edit"].format(page=page),
    }
    target_of = {"cold-zh": "zh-over-en", "warm": "warm-over-cold"}
    rows = []
    for key, name in names.items():
        if key not in steps:
            continue
        step = steps[key]
        t = targets.get(target_of.get(key, key))
        goal = "—" if t is None else text[f"t-{t['key']}"].format(limit=t["limit"])
        if "error" in step:
            result = text["failed"]
        elif t is None:
            result = "—"
        elif key in target_of:
            result = f"{fmt_ratio(t['value'])}: {_verdict(t['met'], text)}"
        else:
            result = _verdict(t["met"], text)
        rows.append([name, fmt_seconds(step["seconds"]), str(step["executed"]), goal, result])
    head = [text["step"], text["wall"], text["executed"], text["target"], text["result"]]
    lines = [text["build_head"], "", *_table(head, "lrrll", rows)]
    notes = []
    warm_runs = steps.get("warm", {}).get("runs")
    if warm_runs:
        read = "; ".join(
            f"{lang}: {', '.join(run['reread']) or '—'}"
            for lang, run in warm_runs[0]["langs"].items()
        )
        notes.append(text["reread"].format(read=read))
    if build.get("failed"):
        failed = build["failed"]
        notes.append(text["failed_line"].format(step=names[failed], error=steps[failed]["error"]))
    return lines + (["", " ".join(notes)] if notes else [])


def _site_lines(site: dict[str, Any], text: dict[str, str]) -> list[str]:
    langs = list(site)

    def svg(lang: str) -> str:
        largest = site[lang].get("largest_svg")
        return "—" if not largest else f"{fmt_bytes(largest['bytes'])} (`{largest['name']}`)"

    rows = [
        [text["pages"], *(str(site[lang]["pages"]) for lang in langs)],
        [text["total"], *(fmt_bytes(site[lang]["total_bytes"]) for lang in langs)],
        [text["median_page"], *(fmt_bytes(site[lang]["median_bytes"]) for lang in langs)],
        [text["largest_svg"], *(svg(lang) for lang in langs)],
    ]
    return [text["site_head"], "", *_table(["", *langs], "l" + "r" * len(langs), rows)]


def _compute_lines(compute: dict[str, Any], text: dict[str, str]) -> list[str]:
    rows = []
    for m in compute.get("matmul", []) + compute.get("copy", []):
        peak = "—" if m.get("fraction_of_peak") is None else f"{100 * m['fraction_of_peak']:.0f}%"
        rows.append(
            [_measurement_label(m, text), m["device"], fmt_rate(m["value"], m["unit"]), peak]
        )
    head = [text["measurement"], text["device"], text["value"], text["of_peak"]]
    return [text["compute_head"], "", *_table(head, "llrr", rows)]


def _training_lines(training: dict[str, Any], text: dict[str, str]) -> list[str]:
    rows = []
    for run in training["runs"]:
        kind = "one" if run["processes"] == 1 else "many"
        devices = ", ".join(run["devices"])
        if run.get("threads"):
            devices = text["threads"].format(
                devices=devices,
                n=run["threads"],
                s="s" if run["threads"] != 1 else "",
                each=text["each"] if run["processes"] > 1 else "",
            )
        rows.append(
            [
                text[f"run-{kind}-{run['backend']}"].format(n=run["processes"]),
                devices,
                _workload(run, text),
                fmt_seconds(run["sec_per_epoch"]),
                "—" if run.get("speedup") is None else f"{run['speedup']:.2f}×",
                f"{run['test_acc']:.2f}",
            ]
        )
    base = D2L_ANCHORS[0]["sec_per_epoch"]
    for anchor in D2L_ANCHORS:
        n = anchor["gpus"]
        rows.append(
            [
                text["anchor"].format(n=n, s="s" if n > 1 else ""),
                f"{n} × V100",
                _workload(anchor, text),
                fmt_seconds(anchor["sec_per_epoch"]),
                f"{base / anchor['sec_per_epoch']:.2f}×",
                anchor["test_acc"],
            ]
        )
    head = [
        text["run"],
        text["devices"],
        text["data"],
        text["sec_epoch"],
        text["speedup"],
        text["test_acc"],
    ]
    t = training["target"]
    if t["reason"]:
        verdict = text[t["reason"]]
    else:
        measured = text["measured"].format(
            speedup=fmt_ratio(t["speedup"]), gap=fmt_ratio(t["acc_gap"])
        )
        verdict = f"{measured}: {_verdict(t['met'], text)}"
    goal = text["train_target"].format(limit=t["limit"], tol=t["acc_tolerance"], verdict=verdict)
    lines = [text["train_head"], "", *_table(head, "lllrrr", rows), "", goal]
    few = [r for r in training["runs"] if total_steps(r) < FEW_STEPS]
    if few:
        names = (
            text[f"run-{'one' if r['processes'] == 1 else 'many'}-{r['backend']}"].format(
                n=r["processes"]
            )
            for r in few
        )
        runs = text["and"].join(text["quoted"].format(name) for name in names)
        steps = text["and_numbers"].join(str(total_steps(r)) for r in few)
        lines += ["", text["few_steps"].format(runs=runs, steps=steps)]
    return lines


def render_markdown(record: dict[str, Any], lang: str = "en") -> str:
    """The record as Markdown: a paragraph on the machine, then one table per part.

    No headings, so that a page can include it under a heading of its own.
    """
    if lang not in TEXT:
        raise ValueError(f"lang must be one of {sorted(TEXT)}, got {lang!r}")
    text = TEXT[lang]
    machine = record["machine"]
    load = machine.get("load_average", {})
    start = load.get("start", [0.0])[0]
    end = load.get("end", [0.0])[0]
    cores = machine.get("cpu_count", 1)
    description = machine["description"]
    if machine.get("hardware_signature") == "cpu" and "cpu_only" in text:
        description = text["cpu_only"].format(cores=cores)
    lines = [
        text["intro"].format(
            machine=description,
            cpu=machine["cpu"],
            torch=machine["torch"],
            profile=machine["profile"],
            date=machine["date"],
            run_time=fmt_duration(record.get("run_seconds", 0), lang),
            load_start=f"{start:.2f}",
            load_end=f"{end:.2f}",
            cores=cores,
            noisy=text["noisy"] if max(start, end) > cores else "",
            environment=text["environment"].format(
                vars=", ".join(f"`{k}={v}`" for k, v in machine["environment"].items())
            )
            if machine.get("environment")
            else "",
        )
    ]
    parts = [
        ("build", _build_lines),
        ("site", _site_lines),
        ("compute", _compute_lines),
        ("training", _training_lines),
    ]
    for key, render in parts:
        part = record.get(key)
        if part:
            lines += ["", *render(part, text)]
    return "\n".join(lines) + "\n"
