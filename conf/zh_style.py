"""Check that the Chinese pages and figures follow one typography and one set of terms.

Run by ``nox -s lint`` (``python conf/zh_style.py``; ``--fix`` repairs the spacing). It reads
the prose of ``docs/zh/*.md`` (not code cells, code, math or link targets) and the text of every
figure in ``docs/img`` that holds Chinese, and reports, with file and line: a missing space
between a Chinese character and a Latin letter, a digit, inline code, a role or math (「在 GPU
上」, 「调用 `x` 时」), or a space next to full-width punctuation; a term the glossary rules out
(``VARIANTS``), including numbers grouped otherwise than 60,000 and 约 1120 万; a figure whose
font-family names no Chinese font first, or with English labels. Only the standard library is
used. Exit status 1 if anything is found.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CJK = r"[\u3400-\u4dbf\u4e00-\u9fff]"
LATIN = r"[A-Za-z0-9]"
FULL_WIDTH = r"[\u3000-\u303f\uff00-\uffef“”‘’…—]"
EMPHASIS = r"\**"
# Inline code, roles, math: Latin for the spacing rule. A link's target is left alone.
ATOM = re.compile(r"\{[\w:-]+\}`[^`]*`|``[^`]+``|`[^`]+`|\$[^$\n]+\$|\]\([^)\s]*\)")
# A Chinese character and a Latin one, with emphasis markers (*, **) between them or not.
MIXED = re.compile(f"(?<={CJK})(\\**)(?={LATIN})|(?<={LATIN})(\\**)(?={CJK})")
# A table's cell separator keeps its spaces: "| 内存（DRAM） |".
SPACE_BY_PUNCTUATION = [
    re.compile(f"(?<=[^\\s|]) +({FULL_WIDTH})"),
    re.compile(f"({FULL_WIDTH}) +(?!\\|)"),
]
# Variants the glossary rules out, and what to write instead.
VARIANTS = {
    r"主机内存": "内存",
    r"\d+\s*号\s*GPU": "GPU 0, GPU 1, ...",
    r"两设备": "双设备",
    r"代码单元(?!格)": "单元格",
    r"中转缓冲区": "锁页暂存缓冲区",
    r"(?:放进|排进|排入)队列": "放入队列",
    r"(?<!操作)操作(?!系统)": "运算 (operation) or another verb",
    r"(?:quick|full)\s*配置": "快速配置 / 完整配置",
    r"性能分析": "性能剖析",
    r"(?<![\d,.])\d{5,}(?![\d,.])": "digits grouped as in the outputs: 60,000",
    r"\d,\d{3}\s*[万亿]": "万/亿 without commas: 约 1120 万",
}
CHINESE_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei")
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})(.*)$")
CODE_INFO = re.compile(r"^\{(code-cell|code-block|code|math|eval-rst|raw)\}|^\w*$")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of everything that is prose: no front matter, code blocks, labels."""
    lines = text.splitlines()
    found, start, code_fence = [], 0, None
    directives = []  # the fences of the prose directives open here ({toctree}, {figure}, ...)
    if lines[:1] == ["---"]:
        start = lines.index("---", 1) + 1
    for number, line in enumerate(lines[start:], start + 1):
        fence = FENCE.match(line)
        if code_fence:
            if fence and fence.group(1).startswith(code_fence) and not fence.group(2).strip():
                code_fence = None
            continue
        if fence:
            info = fence.group(2).strip()
            if not info and directives and fence.group(1) == directives[-1]:
                directives.pop()  # a directive's closing fence, not the opening of a code block
            elif fence.group(1)[0] in "`~" and CODE_INFO.match(info):
                code_fence = fence.group(1)
            else:
                directives.append(fence.group(1))
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


def spacing_fixed(line: str) -> str:
    """The line with the spacing rule applied (atoms count as Latin text)."""
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
        if not linked and re.search(f"{CJK}{EMPHASIS}$", out):
            out += " "
        out += atom
        if not linked and re.match(f"{EMPHASIS}{CJK}", part):
            part = " " + part
        out += part
    return out


def line_problems(line: str) -> list[str]:
    problems = []
    if spacing_fixed(line) != line:
        problems.append("spacing between Chinese and Latin text or full-width punctuation")
    text = " ".join(ATOM.split(line))
    problems += [
        f"{m.group(0)!r}: use {use}" for p, use in VARIANTS.items() for m in re.finditer(p, text)
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
