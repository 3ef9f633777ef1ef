"""Benchmark this machine: build cost of the site and compute speed, in one run.

``nox -s bench`` runs this module (``python -m bench.run``). It writes
``docs/_build/bench.json`` (the record), ``docs/_build/bench.md`` (the tables, in English) and
``docs/_build/bench.zh.md`` (in Chinese), and prints the English tables. The About page shows
them when they were measured on the machine that builds it (``conf/_ext/bench_table.py``).

    python -m bench.run [--skip-build] [--skip-compute] [--warm-repeats N] [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

import gpukit
from bench import compute, report
from bench.build import LANGUAGES, run_build_steps

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "_build", help="where to write")
    parser.add_argument("--skip-build", action="store_true", help="measure compute only")
    parser.add_argument("--skip-compute", action="store_true", help="measure the build only")
    parser.add_argument(
        "--warm-repeats", type=int, default=3, help="rebuilds with no change (the median counts)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary copy, its builds and their logs"
    )
    args = parser.parse_args(argv)
    if args.warm_repeats < 1:
        parser.error("--warm-repeats must be >= 1")
    return args


def log(message: str) -> None:
    print(message, flush=True)


def measure(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    profile = gpukit.current_profile()
    record: dict = {"schema": report.SCHEMA, "machine": compute.machine(profile)}
    log(f"bench: {record['machine']['description']}, profile {profile.name}")

    if not args.skip_build:
        work = Path(tempfile.mkdtemp(prefix="gpukit-bench-"))
        logs = args.out / "bench-logs"  # one sphinx-build log per build, kept
        shutil.rmtree(logs, ignore_errors=True)
        try:
            build = run_build_steps(
                ROOT, work, warm_repeats=args.warm_repeats, log_dir=logs, log=log
            )
        finally:
            if args.keep:
                log(f"bench: kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
        if build.get("site"):
            record["site"] = build.pop("site")
        build["targets"] = report.build_targets(build["steps"])
        record["build"] = build

    if not args.skip_compute:
        device = gpukit.try_gpu()
        log(f"compute: matmul and copies on {device}")
        record["compute"] = {
            "matmul": compute.matmuls(device, profile.hw_matmul_repeats),  # at the largest size
            "copy": compute.copies(device, profile.hw_copy_mib, profile.hw_copy_repeats),
        }
        runs = compute.training(profile, log=log)
        report.add_speedups(runs)
        record["training"] = {
            "runs": runs,
            "anchors": report.D2L_ANCHORS,
            "target": report.training_target(runs, gpukit.num_gpus()),
        }

    record["machine"]["load_average"]["end"] = compute.load_average()
    record["run_seconds"] = time.perf_counter() - start
    return record


def write(record: dict, out: Path) -> dict[str, Path]:
    """bench.json, bench.md (English) and bench.<lang>.md for the other languages."""
    paths = {"json": out / "bench.json"}
    report.write_json(record, paths["json"])
    for lang in LANGUAGES:
        name = "bench.md" if lang == "en" else f"bench.{lang}.md"
        paths[lang] = out / name
        paths[lang].write_text(report.render_markdown(record, lang), encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(0)
    record = measure(args)
    paths = write(record, args.out)
    print()
    print(paths["en"].read_text(encoding="utf-8"))
    log(f"bench: wrote {', '.join(str(p) for p in paths.values())}")
    failed = record.get("build", {}).get("failed")
    if failed:
        log(f"bench: the build step {failed} failed (logs in {args.out / 'bench-logs'})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
