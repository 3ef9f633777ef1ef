"""Check the pages' execution times, as About's table shows them, against the build budgets.

The budgets hold for the quick profile on the reference machine: 2 CPU cores with AVX2 only.
A machine with AVX-512 imitates one with ::

    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 nox -s docs
    python3 conf/budgets.py            # reads docs/_build/html/en/about.html

(``ATEN_CPU_CAPABILITY`` alone leaves oneDNN's convolutions on AVX-512.) It prints every
page's time against its budget, and the total, and exits with status 1 if a page is over. The
times are those of the build that executed each page (the execution cache keeps them), so
measure from an empty cache on a quiet machine. The whole quick build of both languages has a
budget too, :data:`BUILD_SECONDS`; it is the wall time of ``nox -s docs``, which no page
records, so this script only prints it.

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

PAGE_SECONDS = 60
# The training pages of the multi-GPU part train one network several times over.
TRAINING_PAGE_SECONDS = {"multiple-gpus": 90, "multiple-gpus-concise": 90}
BUILD_SECONDS = 10 * 60  # both languages, from an empty execution cache

ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.DOTALL)
CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def budget(page: str) -> int:
    """The most seconds ``page`` may execute for in the quick profile."""
    return TRAINING_PAGE_SECONDS.get(page, PAGE_SECONDS)


def execution_times(about_html: str) -> dict[str, float]:
    """Page -> seconds, from the execution table of a built About page.

    >>> row = '<tr><td><p><a href="x.html"><span class="doc">x</span></a></p></td>'
    >>> execution_times(row + "<td>2026-12-02</td><td>cache</td><td>6.12</td><td>done</td></tr>")
    {'x': 6.12}
    """
    times = {}
    for row in ROW.findall(about_html):
        cells = [html.unescape(TAG.sub("", cell)).strip() for cell in CELL.findall(row)]
        if len(cells) == 5 and re.fullmatch(r"\d+(\.\d+)?", cells[3]):
            times[cells[0]] = float(cells[3])
    return times


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
    parser = argparse.ArgumentParser(prog="budgets.py", description=__doc__.split("\n")[0])
    parser.add_argument(
        "about",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "docs/_build/html/en/about.html",
        help="a built About page (default: docs/_build/html/en/about.html)",
    )
    args = parser.parse_args(argv)
    if not args.about.is_file():
        raise SystemExit(f"budgets: no {args.about}: build the site first (nox -s docs)")
    times = execution_times(args.about.read_text(encoding="utf-8"))
    if not times:
        raise SystemExit(f"budgets: {args.about} has no execution table with run times")
    text, over = report(times)
    print(text)
    if over:
        print(f"budgets: {len(over)} page(s) over budget: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
