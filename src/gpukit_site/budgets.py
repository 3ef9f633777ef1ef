"""Check the pages' execution times, as the execution cache records them, against the budgets.

The budgets hold for the quick profile on the reference machine: 2 CPU cores with AVX2 only.
A machine with AVX-512 imitates one with ::

    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 nox -s docs
    .nox/docs/bin/python -m gpukit_site.budgets    # reads docs/_build/.jupyter_cache/<quick key>

(``ATEN_CPU_CAPABILITY`` alone leaves oneDNN's convolutions on AVX-512.) It prints every
page's time against its budget, and the total, and exits with status 1 if a page is over. The
times are those of the build that executed each page: myst-nb stores them with each notebook
in jupyter-cache (``execution_seconds``, the times About's table shows), so measure from an
empty cache on a quiet machine. The whole quick build of both languages has a budget too,
:data:`BUILD_SECONDS`; it is the wall time of ``nox -s docs``, which no page records, so this
script only prints it. It runs in the docs session's Python, which has jupyter-cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CACHES = Path(__file__).resolve().parents[2] / "docs/_build/.jupyter_cache"
PAGE_SECONDS = 60
# The training pages of the multi-GPU part train one network several times over.
TRAINING_PAGE_SECONDS = {"multiple-gpus": 90, "multiple-gpus-concise": 90}
BUILD_SECONDS = 10 * 60  # both languages, from an empty execution cache


def budget(page: str) -> int:
    """The most seconds ``page`` may execute for in the quick profile."""
    return TRAINING_PAGE_SECONDS.get(page, PAGE_SECONDS)


def execution_times(cache: Path) -> dict[str, float]:
    """Page -> seconds of its latest execution, from a jupyter-cache folder of the build."""
    from jupyter_cache import get_cache

    times = {}
    for record in sorted(get_cache(cache).list_cache_records(), key=lambda r: r.created):
        if (seconds := (record.data or {}).get("execution_seconds")) is not None:
            times[Path(record.uri).stem] = float(seconds)
    return times


def quick_cache() -> Path | None:
    """The latest execution cache of the quick profile (its folder's name says the profile:
    gpukit_site.ext.execution), or None."""
    found = sorted(CACHES.glob("*-quick-*"), key=lambda folder: folder.stat().st_mtime)
    return found[-1] if found else None


def report(times: dict[str, float]) -> tuple[str, list[str]]:
    """The table to print, and the pages over their budgets."""
    over = [page for page, seconds in times.items() if seconds > budget(page)]
    lines = [f"{'page':<30}{'seconds':>9}{'budget':>8}"]
    for page, seconds in sorted(times.items(), key=lambda item: -item[1]):
        mark = "  OVER" if page in over else ""
        lines.append(f"{page:<30}{seconds:>9.1f}{budget(page):>8}{mark}")
    lines.append(f"{'all pages':<30}{sum(times.values()):>9.1f}")
    lines.append(f"(the whole build of both languages: at most {BUILD_SECONDS} s of `nox -s docs`)")
    return "\n".join(lines), over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpukit_site.budgets", description=__doc__.split("\n")[0])
    parser.add_argument(
        "cache",
        nargs="?",
        type=Path,
        help="an execution cache folder (default: the latest quick one in docs/_build)",
    )
    args = parser.parse_args(argv)
    cache = args.cache or quick_cache()
    if cache is None or not cache.is_dir():
        raise SystemExit(f"budgets: no execution cache {cache or CACHES}: build the site first")
    times = execution_times(cache)
    if not times:
        raise SystemExit(f"budgets: {cache} records no execution times")
    text, over = report(times)
    print(text)
    if over:
        print(f"budgets: {len(over)} page(s) over budget: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
