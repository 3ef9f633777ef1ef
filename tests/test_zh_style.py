"""conf/zh_style.py (run by ``nox -s lint``): one typography and one set of terms in Chinese."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import zh_style

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_chinese_pages_and_figures_follow_the_style(capsys) -> None:
    assert zh_style.main([]) == 0, capsys.readouterr().out


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    shutil.copytree(DOCS / "zh", tmp_path / "zh")
    (tmp_path / "img").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        ("数据在GPU上。", "spacing between Chinese and Latin"),
        ("调用`x`时 ，返回。", "spacing between Chinese and Latin"),
        ("把它放进队列。", "'放进队列': use 放入队列"),
        ("复制到主机内存。", "'主机内存': use 内存"),
        ("共有 60000 张图像。", "digits grouped"),
    ],
)
def test_a_planted_violation_is_reported(docs: Path, capsys, planted: str, reported: str) -> None:
    page = docs / "zh" / "index.md"
    page.write_text(page.read_text("utf-8") + f"\n{planted}\n", "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    out = capsys.readouterr().out
    assert f"zh/index.md:{len(page.read_text('utf-8').splitlines())}: " in out and reported in out


def test_code_is_not_prose(docs: Path, capsys) -> None:
    page = docs / "zh" / "index.md"
    cell = "\n```{code-cell} ipython3\nprint('在GPU上', 60000)\n```\n\n`放进队列` 的代码。\n"
    page.write_text(page.read_text("utf-8") + cell, "utf-8")
    zh_style.main(["--docs", str(docs)])
    assert "zh/index.md" not in capsys.readouterr().out


def test_fix_repairs_the_spacing_outside_emphasis(docs: Path) -> None:
    page = docs / "zh" / "index.md"
    page.write_text("# 标题\n\n* 一块**GPU**的*事件*在CPU上 ，见{ref}`x`。\n", "utf-8")
    zh_style.main(["--docs", str(docs), "--fix"])
    assert (
        page.read_text("utf-8").splitlines()[2] == "* 一块 **GPU** 的*事件*在 CPU 上，见 {ref}`x`。"
    )


def test_a_chinese_figure_needs_a_chinese_font_and_chinese_labels(docs: Path, capsys) -> None:
    svg = '<svg font-family="DejaVu Sans, sans-serif"><text>参数服务器 push</text></svg>'
    (docs / "img" / "x-zh.svg").write_text(svg, "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    out = capsys.readouterr().out
    assert "names no Chinese font" in out and "English label '参数服务器 push'" in out


def test_prose_after_a_directive_is_read(docs: Path, capsys) -> None:
    # A directive's closing fence (```) once read as the opening of a code block, so the prose
    # after an odd number of directives went unchecked.
    page = docs / "zh" / "index.md"
    directive = "\n```{toctree}\n:hidden:\n\napi\n```\n"
    page.write_text(page.read_text("utf-8") + directive * 3 + "\n数据在GPU上。\n", "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    assert "spacing between Chinese and Latin" in capsys.readouterr().out


def test_a_table_cell_keeps_its_spaces(docs: Path, capsys) -> None:
    page = docs / "zh" / "index.md"
    table = "\n| 部件 | 带宽 |\n| --- | --- |\n| （注）内存（DRAM） | 约 100 GB/s |\n"
    page.write_text(page.read_text("utf-8") + table, "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 0, capsys.readouterr().out
