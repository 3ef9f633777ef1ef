"""gpukit_site.zh_style (run by ``nox -s lint``): one typography and one set of terms in Chinese."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpukit_site import zh_style

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
        # The glossary of issue 27: each variant, and what it reports.
        ("导出的图由 ATen 运算符写成。", "'运算符': use 算子"),
        ("热身步吸收了这部分开销。", "'热身': use 预热"),
        ("导出 Chrome 跟踪文件。", "'跟踪': use 轨迹"),
        ("见 NVIDIA 产品数据表。", "'产品数据表': use 数据手册"),
        ("一个训练步骤的时间。", "'训练步骤': use 训练步"),
        ("几秒钟的训练挣不回编译时间。", "'挣不回': use 回本"),
        ("编译是否划算。", "'划算': use 回本"),
        ("完整构建在全部数据上训练。", "'完整构建': use 完整配置"),
        ("快速构建只用一个子集。", "'快速构建': use 完整配置 / 快速配置"),
        ("学完本节，你将能够：", "'学完本节': use 读完本节"),
        ("本页只用 GPU 0。", "'本页': use 本节"),
        ("激活值从一块 GPU 传到另一块。", "'激活值': use 激活"),
        ("缓存分配器预留的显存。", "'预留': use 保留"),
        ("融合后的核函数快了 {glue:text}`speedup:.1f` 倍。", "'快了 {glue} 倍': use 是……的"),
        ("编译后快了 3 倍。", "'快了 3 倍': use 是……的"),
        ("每轮时间变为原来的 1/{glue:text}`ratio:.2f`。", "'1/{glue}': use 是……的 X 倍"),
        ("两地相距约 8,800 公里。", "'约 8,800': use a round number"),
        ("卷积核是 5 x 5。", "'5 x 5': use × between numbers"),
        ("前两个见 {ref}`sec-use-gpu`。", "'{ref}`sec-use-gpu`' renders a bare title"),
        ("所以编译是 {ref}`sec-fast-training` 的一部分。", "renders a bare title"),
        ("参考部分包括 {doc}`api`。", "'{doc}`api`' renders a bare title"),
        ("在 {ref}`sec-multi-gpu` 一节里。", "renders a bare title"),  # spaces around the title
        ("见 {ref}`GPU <sec-use-gpu>`。", "'{ref}`GPU <sec-use-gpu>`' renders a bare title"),
        ("见 {ref}`硬件一节 <sec-hardware>` 的测量。", "spacing between Chinese and Latin"),
        # The glossary of issue 38: the variants the new parts had, each with its message.
        ("梯度用归约-分散求和。", "'归约-分散': use 归约散射"),
        ("先归约分散，再全收集。", "'归约分散': use 归约散射"),
        ("嵌入层和层归一化完整保存。", "'层归一化': use 层规范化"),
        ("几个前置归一化的块。", "'前置归一化': use 层规范化"),
        ("每个进程只保存 Adam 动量。", "'Adam 动量': use 一阶矩 / 二阶矩"),
        ("AdamW 两个动量的分片。", "'两个动量': use 一阶矩 / 二阶矩"),
        ("FSDP 就是阶段 3。", "'阶段 3': use 第 3 阶段"),
        ("即 flash attention 所用的在线 softmax。", "'flash attention': use FlashAttention"),
        ("Flash-Attention 的分块。", "'Flash-Attention': use FlashAttention"),
        ("逐元素运算受内存限制。", "'受内存限制': use 受访存限制"),
        ("大矩阵乘法受计算限制。", "'受计算限制': use 受访存限制 / 受算力限制"),
        ("写出来的注意力按平方增长。", "'写出来的': use 按公式实现的"),
        ("## 写出来的混合精度", "'写出来的': use 按公式实现的 (written-out attention) / 手写的"),
        ("多花算术，省下显存。", "'算术': use 计算"),
        ("在 `matmul_throughput` 认识的 GPU 上。", "'认识的': use 收录了"),
        ("每个新词元都要注意它之前的所有词元。", "'注意它之前': use 对……做注意力计算"),
        ("FSDP2 把每个参数切成四块。", "'切成四块': use 个分片"),
        ("状态是单进程的 {glue:text}`share:.2f`，即 $1/n$。", "not a bare decimal"),
        ("进程 0 保存了 {glue:text}`tp_share:.2f` 的参数。", "not a bare decimal"),
        ("气泡占一步的 {glue:text}`bubble:.2f`。", "not a bare decimal"),
        ("本地编号为 0, 1 的两个进程。", "'0, 1': use 、 between numbers"),
        ("<text>先两步归约-分散</text>", "'归约-分散': use 归约散射"),
    ],
)
def test_a_planted_violation_is_reported(docs: Path, capsys, planted: str, reported: str) -> None:
    page = docs / "zh" / "index.md"
    page.write_text(page.read_text("utf-8") + f"\n{planted}\n", "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    out = capsys.readouterr().out
    assert f"zh/index.md:{len(page.read_text('utf-8').splitlines())}: " in out and reported in out


@pytest.mark.parametrize(
    "sentence",
    [
        "前两个见 {ref}`GPU 一节 <sec-use-gpu>`。",  # the reference's own Chinese text
        "见{ref}`硬件一节 <sec-hardware>`的测量。",  # Chinese text of its own: no space
        "速度是单设备的 {glue:text}`speedup:.2f` 倍，最多会慢一倍。",
        "PCIe 5.0 x16 的带宽；2 x H100；步长为 $1/s$，像素值是 1/255 的整数倍。",
        "`@` 运算符调用 `matmul`；一组跟踪依赖图的线程；完整配置约 20 万公里、8800 公里。",
        "| 访问内存（DRAM） | 约 100 ns |",  # a table's cell separator after full-width text
        # Issue 38's rules leave the right forms and their neighbours alone.
        "ZeRO 第 3 阶段；像第 3 阶段一样；每个阶段四个块；流水线阶段 0 先算。",
        "FlashAttention 的 `FLASH_ATTENTION` 后端；算术强度；按公式实现的注意力。",
        "每个进程保存的状态占单进程的 {glue:text}`share:.0%`，速度是 {glue:text}`r:.2f` 倍。",
        "本地编号为 0、1；`(0, 1)` 与 $(0, 1)$；线程块 (1, 0)；j = 1, 2, 3。",
        "请注意，批量规范化对每个通道做归一化。",
    ],
)
def test_what_reads_right_is_not_reported(docs: Path, capsys, sentence: str) -> None:
    page = docs / "zh" / "index.md"
    page.write_text(f"# 标题\n\n{sentence}\n", "utf-8")
    zh_style.main(["--docs", str(docs)])
    assert "zh/index.md" not in capsys.readouterr().out


def test_prose_after_a_directive_is_read(docs: Path, capsys) -> None:
    """A figure's closing fence closes the figure: it opens no code block hiding the prose."""
    page = docs / "zh" / "index.md"
    figure = "```{figure} ../img/x.svg\n:name: fig-x\n\n图注。\n```\n\n复制到主机内存。\n"
    page.write_text(f"# 标题\n\n{figure}\n```{{code-cell}} ipython3\nx = 1\n```\n", "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    assert "zh/index.md:9: '主机内存'" in capsys.readouterr().out


def test_a_pages_summary_is_prose(docs: Path, capsys) -> None:
    """The front matter's summary is the page's line in the learning path: checked like prose."""
    page = docs / "zh" / "index.md"
    page.write_text("---\ngpus: 1\nsummary: 把张量复制到主机内存。\n---\n# 标题\n", "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    assert "zh/index.md:3: '主机内存'" in capsys.readouterr().out


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


def test_fix_spaces_a_reference_by_the_text_it_shows(docs: Path) -> None:
    """A reference with Chinese text of its own reads as Chinese: no space beside Chinese."""
    page = docs / "zh" / "index.md"
    page.write_text(
        "# 标题\n\n见 {ref}`硬件一节 <sec-hardware>` 和{ref}`GPU 一节 <x>`。\n", "utf-8"
    )
    zh_style.main(["--docs", str(docs), "--fix"])
    fixed = page.read_text("utf-8").splitlines()[2]
    assert fixed == "见{ref}`硬件一节 <sec-hardware>`和 {ref}`GPU 一节 <x>`。"


def test_fix_spaces_a_glossary_term_by_the_text_it_shows(docs: Path) -> None:
    """A {term} role with Chinese text of its own (the glossary's links) reads as Chinese."""
    page = docs / "zh" / "index.md"
    page.write_text("# 标题\n\n一个 {term}`线程束 <warp>` 有 32 个{term}`SM`线程。\n", "utf-8")
    zh_style.main(["--docs", str(docs), "--fix"])
    fixed = page.read_text("utf-8").splitlines()[2]
    assert fixed == "一个{term}`线程束 <warp>`有 32 个 {term}`SM` 线程。"


def test_a_chinese_figure_needs_a_chinese_font_and_chinese_labels(docs: Path, capsys) -> None:
    svg = '<svg font-family="DejaVu Sans, sans-serif"><text>参数服务器 push</text></svg>'
    (docs / "img" / "x-zh.svg").write_text(svg, "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 1
    out = capsys.readouterr().out
    assert "names no Chinese font" in out and "English label '参数服务器 push'" in out


def test_table_pipes_may_be_spaced(docs: Path, capsys) -> None:
    page = docs / "zh" / "index.md"
    table = "\n| 部件 | 带宽 |\n| --- | --- |\n| 显存（HBM） | 3.35 TB/s |\n"
    page.write_text(page.read_text("utf-8") + table, "utf-8")
    assert zh_style.main(["--docs", str(docs)]) == 0, capsys.readouterr().out
