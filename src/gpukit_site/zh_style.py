"""Check that the Chinese pages and figures follow one typography and one set of terms.

Run by ``nox -s lint`` (``python -m gpukit_site.zh_style``; ``--fix`` repairs the spacing). It reads
the prose of ``docs/zh/*.md`` (not code cells, code, math or link targets) and the text of every
figure in ``docs/img`` that holds Chinese, and reports, with file and line: a missing space
between a Chinese character and a Latin letter, a digit, inline code, a role or math (「在 GPU
上」, 「调用 `x` 时」), or a space next to full-width punctuation; a term the glossary rules out
(``VARIANTS``), including numbers grouped otherwise than 60,000 and 约 1120 万, and ratios that
misread (「快了 X 倍」 reads as X + 1 times, 「1/X」 of a glued X makes the reader divide); a
cross-reference that renders a bare title inside a sentence (``bare_references``); a figure
whose font-family names no Chinese font first, or with English labels. Only the standard library
is used. Exit status 1 if anything is found.
"""

import argparse
import re
import sys
from pathlib import Path

from gpukit_site.languages import CHINESE_CHARACTER as CJK

ROOT = Path(__file__).resolve().parents[2]

LATIN = r"[A-Za-z0-9]"
FULL_WIDTH = r"[\u3000-\u303f\uff00-\uffef“”‘’…—]"
EMPHASIS = r"\**"
# Inline code, roles, math: Latin for the spacing rule. A link's target is left alone.
ATOM = re.compile(r"\{[\w:-]+\}`[^`]*`|``[^`]+``|`[^`]+`|\$[^$\n]+\$|\]\([^)\s]*\)")
# A Chinese character and a Latin one, with emphasis markers (*, **) between them or not.
MIXED = re.compile(f"(?<={CJK})(\\**)(?={LATIN})|(?<={LATIN})(\\**)(?={CJK})")
# A space next to full-width punctuation; not one beside a table's cell separator (|).
SPACE_BY_PUNCTUATION = [
    re.compile(f"(?<=[^\\s|]) +({FULL_WIDTH})"),
    re.compile(f"({FULL_WIDTH}) +(?![\\s|])"),
]
# A number in the text the variants are matched against: digits, a glued value (``{glue}``
# stands for any {glue} role there) or a Chinese numeral.
NUMBER = r"(?:\{glue\}|\d[\d,.]*|[一二两三四五六七八九十几数]+)"
# Variants the glossary rules out, and what to write instead. Inline code reads as ``{code}``.
VARIANTS = {
    r"主机内存": "内存",
    r"\d+\s*号\s*GPU": "GPU 0, GPU 1, ...",
    r"两设备": "双设备",
    r"代码单元(?!格)": "单元格",
    r"中转缓冲区": "锁页暂存缓冲区",
    r"(?:放进|排进|排入)队列": "放入队列",
    r"(?<!操作)操作(?!系统)": "运算 (operation) or another verb",
    r"(?:quick|full)\s*配置": "快速配置 / 完整配置",
    r"(?:完整|快速)构建": "完整配置 / 快速配置 (the execution profile)",
    r"性能分析": "性能剖析",
    r"(?<!\{code\} )运算符": "算子 (an operator such as aten::addmm)",
    r"热身": "预热 (warm-up)",
    r"跟踪(?=文件|格式|视图|数据)|(?<=Chrome )跟踪": "轨迹 (a trace)",
    r"产品数据表": "数据手册 (a data sheet)",
    r"训练步骤": "训练步 (a training step)",
    r"挣(?:不)?回|划算": "回本 (break even)",
    r"学完本节": "读完本节",
    r"本页": "本节 (a page is a section)",
    r"激活值": "激活 (activations)",
    r"预留": "保留 (reserved memory)",
    rf"(?:快|慢|提高|提升|增加)了\s*{NUMBER}\s*倍|[快慢]\s*(?:\{{glue\}}|\d[\d,.]*)\s*倍": (
        "是……的 X 倍 (「快了 X 倍」 reads as X + 1)"
    ),
    r"1\s*/\s*\{glue\}": "是……的 X 倍 (a glued ratio, under 1 or not)",
    r"(?<![\d,.])\d{5,}(?![\d,.])": "digits grouped as in the outputs: 60,000",
    r"\d,\d{3}\s*[万亿]": "万/亿 without commas: 约 1120 万",
    r"约\s*\d{1,3}(?:,\d{3})+(?![\d.])": "a round number without commas: 约 8800, 约 20 万",
    r"(?<![\w.])\d+ ?[xX] ?\d+(?![\w.])": "× between numbers: 5×5",
    # The glossary of issue 38: one term per concept across the parts.
    r"归约\s*[-－–—]?\s*分散|规约散射": "归约散射 (reduce-scatter)",
    r"层归一化|前置归一化": "层规范化 (layer norm; pre-norm is 前置层规范化)",
    r"Adam\s*的?\s*动量|两个动量": "一阶矩 / 二阶矩 (Adam's first and second moments)",
    r"(?<!流水线)阶段\s*(?:\d+|\{glue\})(?!\s*个)": "第 3 阶段 (ZeRO stage 3)",
    # The learning path names the page flash-attention on a line of its own: not prose.
    r"(?i:flash[ _]attention)|(?<=.)(?i:flash-attention)|(?i:flash-attention)(?=.)"
    r"|(?<![A-Za-z])[Ff]lashattention": "FlashAttention",
    r"受内存限制|内存受限|受计算限制|计算受限": (
        "受访存限制 / 受算力限制 (memory-bound / compute-bound; 内存 is host memory)"
    ),
    r"写出来的": "按公式实现的 (written-out attention) / 手写的 (hand-written mixed precision)",
    r"算术(?!强度)": "计算 (算术 only in 算术强度, arithmetic intensity)",
    r"认识的": "收录了 (a function that knows a GPU's data sheet)",
    r"注意(?:它|其)?(?:之前|前面|缓存)": "对……做注意力计算 (to attend; 注意 reads as 'to notice')",
    rf"切成\s*{NUMBER}\s*块": "个分片 (a shard is 分片; 块 is a Transformer block)",
    r"(?:的|占|保存了?)\s*\{glue\}(?=\s*(?:[，。；）、的]|$))": (
        "是……的 X 倍 for a ratio, 占 X% for a share ({glue:text}`share:.0%`), not a bare decimal"
    ),
    rf"(?:(?<={CJK})|(?<={CJK} ))\d+(?:, \d+)+|\d+(?:, \d+)+(?= ?{CJK})": (
        "、 between numbers in a Chinese sentence: 0、1"
    ),
}
# A cross-reference that renders its target's title, {ref}`label` or {doc}`page` with no text of
# its own, reads as a bare title inside a Chinese sentence («前两个见 GPU»), set apart by the
# spaces around it; so does text of its own without a Chinese character ({ref}`GPU <...>`).
# A reference reads as a noun phrase with Chinese text: 见 {ref}`GPU 一节 <sec-use-gpu>`.
TITLE_REFERENCE = re.compile(r"\{(?:ref|doc)\}`(?:([^`<]*?)\s*<[^`>]+>|[^`<]*)`")
CHINESE_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei")
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})(.*)$")
CODE_INFO = re.compile(r"^\{(code-cell|code-block|code|math|eval-rst|raw)\}|^\w*$")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of everything that is prose: the front matter's ``summary`` (what
    the page teaches, shown in the learning path), none of the rest of the front matter, no code
    blocks, no labels.

    A bare fence closes the innermost open directive whose fence it matches (a figure's closing
    ```), and otherwise opens a code block."""
    lines = text.splitlines()
    found = []
    start = 0
    code_fence = None
    directives = []
    if lines[:1] == ["---"]:
        start = lines.index("---", 1) + 1
        front_matter = enumerate(lines[1 : start - 1], 2)
        found += [(number, line) for number, line in front_matter if line.startswith("summary:")]
    for number, line in enumerate(lines[start:], start + 1):
        fence = FENCE.match(line)
        if code_fence:
            if fence and fence.group(1).startswith(code_fence) and not fence.group(2).strip():
                code_fence = None
            continue
        if fence:
            marker = fence.group(1)
            info = fence.group(2).strip()
            if not info and directives and marker.startswith(directives[-1]):
                directives.pop()
            elif marker[0] in "`~" and CODE_INFO.match(info):
                code_fence = marker
            else:
                directives.append(marker)
                if title := re.sub(r"^\{[\w-]+\}\s*", "", info):
                    found.append((number, title))  # a directive's title is prose
            continue
        if not re.match(r"^\s*\(\S+\)=\s*$|^\s*:(name|label|width|class|tags|align):", line):
            found.append((number, line))
    return found


def spaced_marker(match: re.Match, text: str) -> str:
    """The emphasis markers between a Chinese and a Latin character, with the space outside the
    emphasis: before an opening marker (``是 **GPU**``), after a closing one (``**GPU** 的``)."""
    marker = match.group(1) if match.group(1) is not None else match.group(2)
    if not marker:
        return " "
    before = re.sub(r"^\s*\*\s", "", text[: match.start()])  # a list item's marker
    opening = len(re.findall(r"\*+", before)) % 2 == 0
    return " " + marker if opening else marker + " "


def shown_text(atom: str) -> str:
    """What a reader sees at the edges of an atom: a reference's own text (``{ref}`GPU 一节
    <sec-use-gpu>``` shows 「GPU 一节」, ``{term}`线程束 <warp>``` 「线程束」), else Latin text
    (code, math, a title we cannot see)."""
    own = re.match(r"\{(?:ref|doc|numref|term)\}`([^`<]*?)\s*<[^`>]+>`$", atom)
    return own.group(1) if own and own.group(1) else "x"


def spacing_fixed(line: str) -> str:
    """The line with the spacing rule applied: atoms count as Latin text, but a reference's own
    Chinese text is Chinese (no space between it and a Chinese character)."""
    parts = ATOM.split(line)
    atoms = ATOM.findall(line)
    for i, part in enumerate(parts):
        part = MIXED.sub(lambda m, text=part: spaced_marker(m, text), part)
        for pattern in SPACE_BY_PUNCTUATION:
            part = pattern.sub(r"\1", part)
        parts[i] = part
    out = parts[0]
    for atom, part in zip(atoms, parts[1:], strict=True):
        linked = atom.startswith("](")
        shown = shown_text(atom)
        if re.match(CJK, shown[0]):
            out = re.sub(f"(?<={CJK}) +$", "", out)
        elif not linked and re.search(f"{CJK}{EMPHASIS}$", out):
            out += " "
        out += atom
        if re.match(CJK, shown[-1]):
            part = re.sub(f"^ +(?={CJK})", "", part)
        elif not linked and re.match(f"{EMPHASIS}{CJK}", part):
            part = " " + part
        out += part
    return out


def bare_references(line: str) -> list[str]:
    """The cross-references of a line that render a bare title (see ``TITLE_REFERENCE``)."""
    return [
        m.group(0) for m in TITLE_REFERENCE.finditer(line) if not re.search(CJK, m.group(1) or "")
    ]


def atom_as_text(atom: re.Match) -> str:
    """What the variants see of inline code, a role or math: a glued value is a number."""
    code = atom.group(0).startswith("`")
    if atom.group(0).startswith("{glue"):  # a glued share formatted as a percentage shows its %
        return "{glue}%" if atom.group(0).endswith("%`") else "{glue}"
    return "{code}" if code else " "


def line_problems(line: str) -> list[str]:
    problems = []
    if spacing_fixed(line) != line:
        problems.append("spacing between Chinese and Latin text or full-width punctuation")
    text = ATOM.sub(atom_as_text, line)
    problems += [
        f"{m.group(0)!r}: use {use}" for p, use in VARIANTS.items() for m in re.finditer(p, text)
    ]
    problems += [
        f"{ref!r} renders a bare title: give it Chinese text ({{ref}}`GPU 一节 <sec-use-gpu>`)"
        for ref in bare_references(line)
    ]
    return problems


def check_page(path: Path, fix: bool) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    problems = []
    for number, line in prose_lines(text):
        if fix:
            fixed = spacing_fixed(line)
            lines[number - 1] = lines[number - 1].replace(line, fixed)
            line = fixed
        where = f"{path.parent.name}/{path.name}:{number}"
        problems += [f"{where}: {p}" for p in line_problems(line)]
    if fix:
        path.write_text("".join(lines), encoding="utf-8")
    return problems


def check_figure(path: Path) -> list[str]:
    svg = path.read_text(encoding="utf-8")
    texts = re.findall(r"<(?:text|tspan)\b[^>]*>([^<]+)<", svg)
    if not any(re.search(CJK, t) for t in texts):
        return []
    where = f"{path.parent.name}/{path.name}"
    problems = [f"{where}: {t.strip()!r}: {p}" for t in texts for p in line_problems(t.strip())]
    for family in re.findall(r"font-family[=:]\s*\"?([^\";>]+)", svg):
        if "monospace" not in family and not any(font in family for font in CHINESE_FONTS):
            problems.append(f"{where}: font-family {family.strip()!r} names no Chinese font")
    english = re.findall(
        r">([^<]*\b(?:push|pull|replicate|scatter|gather|reduce|broadcast|launch)\b[^<]*)<", svg
    )
    problems += [f"{where}: English label {t.strip()!r} in a Chinese figure" for t in english]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="repair the spacing of the pages")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    args = parser.parse_args(argv)
    problems = [
        p for page in sorted((args.docs / "zh").rglob("*.md")) for p in check_page(page, args.fix)
    ]
    problems += [p for svg in sorted((args.docs / "img").glob("*.svg")) for p in check_figure(svg)]
    summary = f"{len(problems)} problem(s)" if problems else "the Chinese pages follow the style"
    print(*problems, f"zh_style: {summary}", sep="\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
