"""``{bench-table}``: the latest benchmark of the machine that builds the site.

``nox -s bench`` writes ``docs/_build/bench.json`` (the record, which names the hardware it
was measured on) and the tables as Markdown: ``bench.md`` in English, ``bench.<lang>.md`` in
the other languages. The directive includes the tables of the page's language when both the
record and the tables exist and the record's hardware signature is this machine's
(:func:`gpukit.hardware_signature`); otherwise it says that no benchmark of this machine
exists yet and how to make one. A page using it is read again by every build (the same
``env-get-outdated`` mechanism as ``{build-info}``), so it never shows an old state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

import gpukit

SCHEMA = 1  # bench/report.py: the record's format

TEXT = {
    "en": {
        "missing": (
            "No benchmark of this machine ({machine}) exists yet. To measure one, run "
            "`nox -s bench` on it (about 10 minutes on 2 CPU cores), then build the site again."
        ),
        "other": " The latest benchmark in `docs/_build` was measured on other hardware ({other}).",
    },
    "zh": {
        "missing": (
            "还没有这台机器（{machine}）的基准测试。要测量，请在这台机器上运行 `nox -s bench`"
            "（在 2 个 CPU 核心上约 10 分钟），然后重新构建网站。"
        ),
        "other": "`docs/_build` 中最新的基准测试是在另一台硬件（{other}）上测得的。",
    },
}


def read_record(path: Path) -> dict[str, Any] | None:
    """The benchmark record at ``path``, or ``None`` if there is none or it is not one."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        return None
    return record


def tables_file(build_dir: Path, lang: str) -> Path:
    """``bench.md`` for English, ``bench.<lang>.md`` (else ``bench.md``) for other languages."""
    own = build_dir / ("bench.md" if lang == "en" else f"bench.{lang}.md")
    return own if own.is_file() else build_dir / "bench.md"


def benchmark_text(build_dir: Path, lang: str, signature: str, machine: str) -> tuple[str, bool]:
    """The Markdown to show and whether it is a benchmark of this machine."""
    record = read_record(build_dir / "bench.json")
    tables = tables_file(build_dir, lang)
    recorded = (record or {}).get("machine", {})
    if record is not None and recorded.get("hardware_signature") == signature and tables.is_file():
        return tables.read_text(encoding="utf-8"), True
    text = TEXT[lang]["missing"].format(machine=machine)
    if record is not None and recorded.get("hardware_signature") != signature:
        text += TEXT[lang]["other"].format(other=recorded.get("description", "?"))
    return text, False


class BenchTable(SphinxDirective):
    """``{bench-table}``: this machine's ``nox -s bench`` tables, or how to make them."""

    def run(self) -> list[nodes.Node]:
        self.env.gpukit_bench_pages.add(self.env.docname)
        lang = self.config.site_language
        build_dir = Path(self.env.srcdir).parent / "_build"
        text, _ = benchmark_text(
            build_dir, lang, gpukit.hardware_signature(), gpukit.describe_machine()
        )
        container = nodes.container(classes=["gpukit-bench"])
        container += self.parse_text_to_nodes(text)
        return [container]


def remember_pages(app: Sphinx) -> None:
    if not hasattr(app.env, "gpukit_bench_pages"):
        app.env.gpukit_bench_pages = set()


def reread_bench_pages(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list:
    """Pages showing the benchmark are read again by every build: it may have changed."""
    return sorted(env.gpukit_bench_pages - removed)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", remember_pages)
    app.connect("env-get-outdated", reread_bench_pages)
    app.add_directive("bench-table", BenchTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
