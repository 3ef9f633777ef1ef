"""``{bench-table}``: the latest benchmark of the machine that builds the site.

``nox -s bench`` writes ``docs/_build/bench.json`` (the record, which names the hardware it
was measured on) and the tables as Markdown: ``bench.md`` in English, ``bench.<lang>.md`` in
the other languages. The directive includes the tables of the page's language when both the
record and the tables exist and the record's hardware signature is this machine's
(:func:`gpukit.hardware_signature`); otherwise it says that no benchmark of this machine
exists yet and how to make one. A page using it is read again by every build
(``always_reread``), so it never shows an old state. The record's format is
``bench/report.py``'s, read with its own functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report import read_json, same_machine
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

import gpukit
from always_reread import reread_every_build

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


def tables_file(build_dir: Path, lang: str) -> Path:
    """``bench.md`` for English, ``bench.<lang>.md`` (else ``bench.md``) for other languages."""
    own = build_dir / ("bench.md" if lang == "en" else f"bench.{lang}.md")
    return own if own.is_file() else build_dir / "bench.md"


def benchmark_text(build_dir: Path, lang: str, signature: str, machine: str) -> tuple[str, bool]:
    """The Markdown to show and whether it is a benchmark of this machine."""
    record = read_json(build_dir / "bench.json")
    tables = tables_file(build_dir, lang)
    if same_machine(record, signature) and tables.is_file():
        return tables.read_text(encoding="utf-8"), True
    text = TEXT[lang]["missing"].format(machine=machine)
    if record is not None and not same_machine(record, signature):
        text += TEXT[lang]["other"].format(other=record.get("machine", {}).get("description", "?"))
    return text, False


class BenchTable(SphinxDirective):
    """``{bench-table}``: this machine's ``nox -s bench`` tables, or how to make them."""

    def run(self) -> list[nodes.Node]:
        reread_every_build(self.env)  # a new benchmark may have come since
        lang = self.config.site_language
        build_dir = Path(self.env.srcdir).parent / "_build"
        text, _ = benchmark_text(
            build_dir, lang, gpukit.hardware_signature(), gpukit.describe_machine()
        )
        container = nodes.container(classes=["gpukit-bench"])
        container += self.parse_text_to_nodes(text)
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("always_reread")
    app.add_directive("bench-table", BenchTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
