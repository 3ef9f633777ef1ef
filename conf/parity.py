"""Check that the English and Chinese pages are the same site, apart from their prose.

Run it as ``nox -s parity`` (or ``python conf/parity.py``). For every page of ``docs/en`` and
``docs/zh`` it checks that

- the page exists in both languages;
- the code cells are identical: source, tags and other options, in the same order (then both
  languages share one execution), and so is the front matter that decides how a page runs
  (kernelspec, file_format, gpus, ...);
- the labels (``(label)=``, ``:name:``, ``:label:``), the cross-reference targets ({ref},
  {numref}, {eq}, {doc}, ``[](#label)``) and the toctree entries are the same;
- the translation is up to date: each Chinese page records in its front matter
  ``translation_of: <first 16 hex digits of the SHA-256 of the English file>``. When the
  English page has changed since, the page is listed with the command that records the new
  hash, to run once the translation has been brought up to date::

      nox -s parity -- --refresh zh/<page>.md

It prints every problem and exits with status 1 if there is any, 0 otherwise.
Only the standard library and PyYAML are needed.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from languages import LANGUAGES, SOURCE, TRANSLATION

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
KEY = "translation_of"
HASH_LENGTH = 16
# Front matter that may differ between the languages; every other key decides how the page
# runs or where it sits, and must be the same.
TRANSLATED_FRONT_MATTER = {KEY, "title", "description", "html_meta", "author", "authors"}
# Directives whose content is code, not MyST: no labels or references are looked for inside.
LITERAL_DIRECTIVES = {"code-cell", "code-block", "code", "sourcecode", "math", "raw", "toctree"}

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
EQUATION_LABEL = re.compile(r"\$\$\s*\((?P<label>[^()\s]+)\)\s*$")
NAME_OPTION = re.compile(r"^\s*:(?:name|label):\s*(?P<label>\S+)\s*$")
ROLE = re.compile(r"\{(?P<role>ref|numref|eq|doc)\}`(?P<text>[^`]*)`")
LINK = re.compile(r"\]\(#(?P<target>[^)\s]+)\)")


def page_hash(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:HASH_LENGTH]


# -- Reading a page -----------------------------------------------------------------------------
@dataclass
class CodeCell:
    line: int  # 1-based line of the opening fence
    argument: str
    options: dict
    source: str


@dataclass
class Page:
    front_matter: dict
    cells: list[CodeCell] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    references: set[str] = field(default_factory=set)
    toctree: list[str] = field(default_factory=list)


def split_front_matter(text: str) -> tuple[str | None, str, int]:
    """Return (front matter text or None, the rest, the number of lines the front matter uses)."""
    if not text.startswith("---\n"):
        return None, text, 0
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            return None, text, 0
    block = text[4 : end + 1]
    rest = text[end + 5 :]
    return block, rest, block.count("\n") + 2


def _option_value(value: str) -> object:
    try:
        return yaml.safe_load(value) if value else None
    except yaml.YAMLError:
        return value


def _directive_options(body: list[str]) -> tuple[dict, list[str]]:
    """Split a directive's content into its options (``:key: value`` or a YAML block)."""
    if body and body[0].strip() == "---":
        end = next((i for i in range(1, len(body)) if body[i].strip() == "---"), None)
        if end is not None:
            options = yaml.safe_load("\n".join(body[1:end])) or {}
            return (options if isinstance(options, dict) else {"": options}), body[end + 1 :]
    options = {}
    i = 0
    while i < len(body):
        match = re.match(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$", body[i])
        if not match:
            break
        options[match["key"]] = _option_value(match["value"].strip())
        i += 1
    return options, body[i:]


def _scan_text(lines: list[str], page: Page) -> None:
    """Labels and references in MyST text (outside literal blocks)."""
    for line in lines:
        if match := TARGET.match(line):
            page.labels.add(match["label"])
        if match := EQUATION_LABEL.search(line):
            page.labels.add(match["label"])
        for match in ROLE.finditer(line):
            text = match["text"]
            target = re.search(r"<([^<>]+)>\s*$", text)
            page.references.add(f"{{{match['role']}}}{(target[1] if target else text).strip()}")
        for match in LINK.finditer(line):
            page.references.add(f"#{match['target']}")


def read_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    block, rest, offset = split_front_matter(text)
    try:
        front_matter = yaml.safe_load(block) if block else {}
    except yaml.YAMLError as err:
        raise SystemExit(f"{path}: front matter is not valid YAML: {err}") from None
    page = Page(front_matter if isinstance(front_matter, dict) else {})
    read_myst(rest.split("\n"), page, offset)
    return page


def read_myst(lines: list[str], page: Page, offset: int = 0) -> None:
    """Add the code cells, labels, references and toctree entries of MyST ``lines`` to ``page``.

    ``offset``: the line number in the file of the line before ``lines[0]``.
    """
    plain: list[str] = []  # MyST text outside fences, scanned for labels and references
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or (opening["fence"][0] == "`" and "`" in opening["info"]):
            plain.append(lines[i])
            i += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        directive = re.match(r"^\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*)$", info)
        if fence[0] == ":" and not directive:
            plain.append(lines[i])
            i += 1
            continue
        # The fence closes at a line of the same character, at least as long, nothing else.
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), len(lines))
        body = lines[i + 1 : end]
        if directive:
            name = directive["name"]
            options, content = _directive_options(body)
            for key in ("name", "label"):
                if isinstance(options.get(key), str):
                    page.labels.add(options[key])
            if name == "code-cell":
                # Only the blank line after the options goes: myst-nb keeps a cell's trailing
                # blank lines, so they change the notebook's hash (a zh build would execute it).
                source = "\n".join(content).lstrip("\n")
                argument = directive["argument"].strip()
                page.cells.append(CodeCell(offset + i + 1, argument, options, source))
            elif name == "toctree":
                for entry in content:
                    entry = entry.strip()
                    if entry:
                        target = re.search(r"<([^<>]+)>\s*$", entry)
                        page.toctree.append(target[1] if target else entry)
            elif name not in LITERAL_DIRECTIVES:
                # MyST content: it may hold labels, references and fences of its own.
                read_myst(content, page, offset + end - len(content))
        i = end + 1
    _scan_text(plain, page)


# -- Comparing the two languages ----------------------------------------------------------------
@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    stale: list[tuple[str, str, str | None]] = field(default_factory=list)  # page, now, recorded
    pages: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.stale


def pages_of(docs: Path, lang: str) -> set[str]:
    folder = docs / lang
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*.md")
        if "_build" not in p.relative_to(folder).parts
    }


def _differ(what: str, en: set | list, zh: set | list) -> str:
    if isinstance(en, set):
        only_en, only_zh = sorted(en - zh), sorted(zh - en)
        parts = []
        if only_en:
            parts.append(f"only in {SOURCE}: {', '.join(only_en)}")
        if only_zh:
            parts.append(f"only in {TRANSLATION}: {', '.join(only_zh)}")
        return f"{what} differ ({'; '.join(parts)})"
    return f"{what} differ ({SOURCE}: {en}; {TRANSLATION}: {zh})"


def compare_cells(en: list[CodeCell], zh: list[CodeCell]) -> list[str]:
    problems = []
    if len(en) != len(zh):
        problems.append(f"{len(en)} code cells in {SOURCE}, {len(zh)} in {TRANSLATION}")
    for n, (a, b) in enumerate(zip(en, zh, strict=False), start=1):
        where = f"code cell {n} ({SOURCE} line {a.line}, {TRANSLATION} line {b.line})"
        if a.argument != b.argument:
            problems.append(f"{where}: language {a.argument!r} vs {b.argument!r}")
        if a.options.get("tags") != b.options.get("tags"):
            problems.append(f"{where}: tags {a.options.get('tags')} vs {b.options.get('tags')}")
        other_a = {k: v for k, v in a.options.items() if k != "tags"}
        other_b = {k: v for k, v in b.options.items() if k != "tags"}
        if other_a != other_b:
            problems.append(f"{where}: options {other_a} vs {other_b}")
        if a.source != b.source:
            problems.append(f"{where}: source differs{_first_difference(a.source, b.source)}")
    return problems


def _first_difference(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return f" at its line {n}: {x!r} vs {y!r}"
    return " (one is longer)"


def compare_pages(name: str, en: Page, zh: Page) -> list[str]:
    problems = compare_cells(en.cells, zh.cells)
    fm_en = {k: v for k, v in en.front_matter.items() if k not in TRANSLATED_FRONT_MATTER}
    fm_zh = {k: v for k, v in zh.front_matter.items() if k not in TRANSLATED_FRONT_MATTER}
    if fm_en != fm_zh:
        keys = sorted(k for k in fm_en.keys() | fm_zh.keys() if fm_en.get(k) != fm_zh.get(k))
        problems.append(f"front matter differs in {', '.join(keys)}")
    if en.labels != zh.labels:
        problems.append(_differ("labels", en.labels, zh.labels))
    if en.references != zh.references:
        problems.append(_differ("cross-reference targets", en.references, zh.references))
    if en.toctree != zh.toctree:
        problems.append(_differ("toctree entries", en.toctree, zh.toctree))
    return [f"{name}: {problem}" for problem in problems]


def recorded_hash(path: Path) -> str | None:
    block, _, _ = split_front_matter(path.read_text(encoding="utf-8"))
    if block is None:
        return None
    value = (yaml.safe_load(block) or {}).get(KEY)
    return None if value is None else str(value)


def check(docs: Path = DOCS) -> Report:
    report = Report()
    en_pages, zh_pages = pages_of(docs, SOURCE), pages_of(docs, TRANSLATION)
    for name in sorted(en_pages ^ zh_pages):
        have, lack = (SOURCE, TRANSLATION) if name in en_pages else (TRANSLATION, SOURCE)
        report.problems.append(f"{have}/{name}: only in one language (no {lack}/{name})")
    for name in sorted(en_pages & zh_pages):
        report.pages += 1
        en_path, zh_path = docs / SOURCE / name, docs / TRANSLATION / name
        report.problems += compare_pages(name, read_page(en_path), read_page(zh_path))
        now, recorded = page_hash(en_path), recorded_hash(zh_path)
        if recorded != now:
            report.stale.append((name, now, recorded))
    return report


def print_report(report: Report, docs: Path) -> None:
    where = docs if docs != DOCS else Path("docs")
    for problem in report.problems:
        print(f"PARITY: {problem}")
    if report.stale:
        print(
            f"\nSTALE: these translations do not record the {SOURCE} page as it is now ({KEY} "
            f"in their front matter). Bring each one up to date with its {SOURCE} page, then "
            "record that with the command below it:"
        )
        for name, now, recorded in report.stale:
            was = f"records {recorded}" if recorded else f"records no {KEY}"
            print(f"  {TRANSLATION}/{name} ({was}; {SOURCE}/{name} is now {now})")
            print(f"    nox -s parity -- --refresh {TRANSLATION}/{name}")
    if report.ok:
        print(f"parity: {where}/{SOURCE} and {where}/{TRANSLATION} agree ({report.pages} pages)")
    else:
        n = len(report.problems) + len(report.stale)
        print(f"\nparity: {n} problem(s) in {where}/{SOURCE} vs {where}/{TRANSLATION}")


# -- Recording that a translation is up to date ------------------------------------------------
def page_name(argument: str, docs: Path) -> str:
    """``zh/x.md``, ``docs/zh/x.md``, ``en/x.md``, ``x.md`` or ``x`` -> ``x.md``."""
    path = Path(argument)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(docs.resolve())
        except ValueError:
            raise SystemExit(f"--refresh {argument}: not a page under {docs}") from None
    parts = list(path.parts)
    if parts[:1] == [docs.name] and parts[1:2] and parts[1] in LANGUAGES:
        parts = parts[1:]
    if parts[:1] and parts[0] in LANGUAGES:
        parts = parts[1:]
    if not parts:
        raise SystemExit(f"--refresh {argument}: name a page, e.g. {TRANSLATION}/index.md")
    name = "/".join(parts)
    return name if name.endswith(".md") else name + ".md"


def _yaml_scalar(value: str) -> str:
    return value if yaml.safe_load(f"k: {value}")["k"] == value else f'"{value}"'


def with_translation_of(text: str, value: str) -> str:
    """``text`` with ``translation_of: value`` in its front matter; nothing else changes."""
    line = f"{KEY}: {_yaml_scalar(value)}"
    block, rest, _ = split_front_matter(text)
    if block is None:
        return f"---\n{line}\n---\n\n{text}"
    pattern = re.compile(rf"^{KEY}:.*$", re.MULTILINE)
    block = pattern.sub(line, block) if pattern.search(block) else block + line + "\n"
    return f"---\n{block}---\n{rest}"


def refresh(docs: Path, arguments: list[str]) -> None:
    for argument in arguments:
        name = page_name(argument, docs)
        en_path, zh_path = docs / SOURCE / name, docs / TRANSLATION / name
        for path in (en_path, zh_path):
            if not path.is_file():
                raise SystemExit(f"--refresh {argument}: {path} does not exist")
        text = zh_path.read_text(encoding="utf-8")
        updated = with_translation_of(text, page_hash(en_path))
        if updated != text:
            zh_path.write_text(updated, encoding="utf-8")
        print(f"{TRANSLATION}/{name}: {KEY} {page_hash(en_path)} ({SOURCE}/{name} as it is now)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="parity", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument(
        "--refresh",
        nargs="+",
        metavar="PAGE",
        default=[],
        help=f"record that {TRANSLATION}/PAGE is up to date with {SOURCE}/PAGE, then check",
    )
    parser.add_argument(
        "--docs", type=Path, default=DOCS, help="the folder holding en/ and zh/ (default: docs)"
    )
    args = parser.parse_args(argv)
    for lang in LANGUAGES:
        if not (args.docs / lang).is_dir():
            parser.error(f"{args.docs / lang} is not a folder")
    refresh(args.docs, args.refresh)
    report = check(args.docs)
    print_report(report, args.docs)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
