"""Check that the English and Chinese pages are the same site, apart from their prose.

``nox -s parity`` checks that every page of ``docs/en`` and ``docs/zh`` exists in both languages;
that the notebooks myst-nb reads from the two, the ones it executes, have the same code cells
(source, tags, other options) and front matter but for translated keys, so that both languages
share one execution; that labels, cross-reference targets (including ``{term}`` roles) and toctree
entries are the same; that the glossaries define the same terms in the same order (each Chinese
entry names its Chinese term and then the English term lines of its English entry, so that
``{term}`warp``` links the same entry in both languages, see ``glossary_entries``); and that the
translation is up to date: each Chinese page records ``translation_of: <first 16 hex
digits of the SHA-256 of the English file>``. A page whose English text changed since is listed
with the command that records the new hash, to run once the translation is up to date::

    nox -s parity -- --refresh zh/<page>.md

It prints every problem and exits with status 1 if there is any. Pages are read with myst-nb's
and myst-parser's own parsers (the docs group); recording needs only PyYAML.
"""

import argparse
import hashlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import yaml

from gpukit_site.ext.front_matter import split_front_matter
from gpukit_site.languages import CHINESE_CHARACTER, LANGUAGES, MYST_EXTENSIONS, SOURCE, TRANSLATION

DOCS = Path(__file__).resolve().parents[2] / "docs"
KEY = "translation_of"
# Front matter that may differ between the languages; every other key decides how the page runs
# or where it sits, and must be the same.
TRANSLATED = {
    KEY,
    "summary",
    "title",
    "description",
    "html_meta",
    "author",
    "authors",
}
# Directives whose content is not MyST: no labels or references are looked for inside.
LITERAL = {"code-cell", "code-block", "code", "sourcecode", "math", "raw", "toctree", "eval-rst"}
ROLES = {"ref", "numref", "eq", "doc", "term"}
TARGET = re.compile(r"<([^<>]+)>\s*$")  # ``title <target>``
FRONT_MATTER = re.compile(r"\A---\n(.*?\n)?---(\n|\Z)", re.DOTALL)


def page_hash(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def glossary_entries(body: list[str]) -> list[tuple[str, ...]]:
    """The entries of a ``{glossary}`` directive's body, each as its term lines (a classifier
    after `` : `` dropped): a term is a line that is not indented, its definition the indented
    lines below the entry's last term.

    >>> glossary_entries(["线程束", "warp", "   32 个线程。", "", "SM : hw", "   A processor."])
    [('线程束', 'warp'), ('SM',)]
    """
    entries, terms = [], []
    for line in body:
        if not line.strip():
            continue
        if line[0].isspace():
            if terms:
                entries.append(tuple(terms))
            terms = []
        else:
            terms.append(line.split(" : ")[0].strip())
    return [*entries, tuple(terms)] if terms else entries


def source_terms(entries: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each entry's terms without a Chinese character: the English terms both languages share."""
    return [tuple(t for t in terms if not re.search(CHINESE_CHARACTER, t)) for terms in entries]


def read_page(path: Path) -> SimpleNamespace:
    """What must agree: the code cells (line of the opening fence, cell) and front matter of the
    notebook myst-nb reads, the labels, the references and the toctree entries."""
    from docutils.parsers.rst.directives.misc import TestDirective  # takes any option
    from markdown_it.renderer import RendererHTML
    from myst_nb.core.read import MystMetadataParsingError, read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.directives import parse_directive_text
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions=set(MYST_EXTENSIONS))
    text = path.read_text(encoding="utf-8")
    try:
        notebook = read_myst_markdown_notebook(text, config, add_source_map=True)
        front_matter, _ = split_front_matter(text)  # the notebook's metadata, source_map aside
    except (MystMetadataParsingError, yaml.YAMLError) as err:
        raise SystemExit(f"{path}: {err}") from None
    cells = zip(notebook.metadata.source_map, notebook.cells, strict=True)
    code = [(line, cell) for line, cell in cells if cell.cell_type == "code"]
    kept = {k: v for k, v in front_matter.items() if k not in TRANSLATED}
    page = SimpleNamespace(cells=code, front_matter=kept, labels=set(), references=set())
    page.toctree = []
    page.glossary = []  # the glossary's entries, in order, each as its terms
    page.recorded = front_matter.get(KEY)  # the translation's record
    # Translated keys each page must have in both languages or in neither.
    page.translated_keys = set(front_matter) & TRANSLATED - {KEY}
    parser = create_md_parser(config, RendererHTML)

    def scan(text: str) -> None:
        for token in parser.parse(text):
            if token.type in ("myst_target", "math_block_label"):
                page.labels.add(token.content if token.type == "myst_target" else token.info)
            for child in token.children or ():
                if child.type == "myst_role" and child.meta["name"] in ROLES:
                    target = TARGET.search(child.content)
                    target = (target[1] if target else child.content).strip()
                    page.references.add(f"{{{child.meta['name']}}}{target}")
                elif child.type == "link_open" and str(child.attrs["href"]).startswith("#"):
                    page.references.add(str(child.attrs["href"]))
            if token.type in ("fence", "colon_fence") and token.info.startswith("{"):
                name, _, argument = token.info[1:].partition("}")
                found = parse_directive_text(TestDirective, "", token.content)
                page.labels |= {str(v) for k, v in found.options.items() if k in ("name", "label")}
                if name == "toctree":
                    entries = [line.strip() for line in found.body if line.strip()]
                    page.toctree += [(TARGET.search(e) or ["", e])[1] for e in entries]
                elif name == "glossary":
                    page.glossary += glossary_entries(found.body)
                    scan("\n".join(found.body))  # the definitions' references
                elif name == "learning-path":  # the book's toctree: "# part" lines and pages
                    entries = [line.strip() for line in found.body if line.strip()]
                    page.toctree += [e for e in entries if not e.startswith("#")]
                elif name not in LITERAL:  # MyST, with labels and references of its own
                    scan(argument + "\n\n" + "\n".join(found.body))

    scan(text)
    return page


def _first_difference(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return f" at its line {n}: {x!r} vs {y!r}"
    return " (one is longer)"


def compare_pages(name: str, en: SimpleNamespace, zh: SimpleNamespace) -> list[str]:
    problems = []
    if len(en.cells) != len(zh.cells):
        problems.append(f"{len(en.cells)} code cells in {SOURCE}, {len(zh.cells)} in {TRANSLATION}")
    for n, ((line_a, a), (line_b, b)) in enumerate(zip(en.cells, zh.cells, strict=False), 1):
        where = f"code cell {n} ({SOURCE} line {line_a}, {TRANSLATION} line {line_b})"
        if a.metadata != b.metadata:  # tags and other options
            problems.append(f"{where}: options {dict(a.metadata)} vs {dict(b.metadata)}")
        if a.source != b.source:
            problems.append(f"{where}: source differs{_first_difference(a.source, b.source)}")
    if keys := sorted(
        k
        for k in en.front_matter.keys() | zh.front_matter.keys()
        if en.front_matter.get(k) != zh.front_matter.get(k)
    ):
        problems.append(f"front matter differs in {', '.join(keys)}")
    for lang, keys, other in (
        (SOURCE, en.translated_keys, zh.translated_keys),
        (TRANSLATION, zh.translated_keys, en.translated_keys),
    ):
        for key in sorted(keys - other):
            problems.append(f"front matter '{key}' only in {lang}: translate it with the page")
    for what, title in (("labels", "labels"), ("references", "cross-reference targets")):
        a = getattr(en, what)
        b = getattr(zh, what)
        pairs = ((SOURCE, a, b), (TRANSLATION, b, a))
        only = [f"only in {lang}: {', '.join(sorted(x - y))}" for lang, x, y in pairs if x - y]
        problems += [f"{title} differ ({'; '.join(only)})"] if only else []
    problems += compare_glossaries(source_terms(en.glossary), source_terms(zh.glossary))
    if en.toctree != zh.toctree:
        problems.append(
            f"toctree entries differ ({SOURCE}: {en.toctree}; {TRANSLATION}: {zh.toctree})"
        )
    return [f"{name}: {problem}" for problem in problems]


def compare_glossaries(en: list[tuple[str, ...]], zh: list[tuple[str, ...]]) -> list[str]:
    """Problems between the glossaries' entries, each given by its English terms: an entry in
    one language only, or the same entries in another order."""
    if en == zh:
        return []
    names = {SOURCE: en, TRANSLATION: zh}
    problems = [
        f"glossary term only in {lang}: {' / '.join(terms) or '(no English term)'}"
        for lang, other in ((SOURCE, TRANSLATION), (TRANSLATION, SOURCE))
        for terms in names[lang]
        if terms not in names[other]
    ]
    return problems or ["glossary entries in another order: keep the English order"]


def pages_of(docs: Path, lang: str) -> set[str]:
    paths = (p.relative_to(docs / lang) for p in (docs / lang).rglob("*.md"))
    return {p.as_posix() for p in paths if "_build" not in p.parts}


def check(docs: Path) -> int:
    """Print every problem; return how many there are."""
    en_pages = pages_of(docs, SOURCE)
    zh_pages = pages_of(docs, TRANSLATION)
    problems = [
        f"{SOURCE if name in en_pages else TRANSLATION}/{name}: only in one language "
        f"(no {TRANSLATION if name in en_pages else SOURCE}/{name})"
        for name in sorted(en_pages ^ zh_pages)
    ]
    stale = []
    for name in sorted(en_pages & zh_pages):
        en_path = docs / SOURCE / name
        zh = read_page(docs / TRANSLATION / name)
        problems += compare_pages(name, read_page(en_path), zh)
        if (recorded := zh.recorded) != (now := page_hash(en_path)):
            was = f"records {recorded}" if recorded else f"records no {KEY}"
            command = f"nox -s parity -- --refresh {TRANSLATION}/{name}"
            stale.append(
                f"  {TRANSLATION}/{name} ({was}; {SOURCE}/{name} is now {now})\n    {command}"
            )
    for problem in problems:
        print(f"PARITY: {problem}")
    if stale:
        print(
            f"\nSTALE: these translations do not record the {SOURCE} page as it is now ({KEY} "
            f"in their front matter). Bring each one up to date with its {SOURCE} page, then "
            "record that with the command below it:\n" + "\n".join(stale)
        )
    where = docs if docs != DOCS else Path("docs")
    if n := len(problems) + len(stale):
        print(f"\nparity: {n} problem(s) in {where}/{SOURCE} vs {where}/{TRANSLATION}")
    else:
        print(f"parity: {where}/{SOURCE} and {where}/{TRANSLATION} agree ({len(en_pages)} pages)")
    return n


# -- Recording that a translation is up to date ------------------------------------------------
def page_name(argument: str) -> str:
    """``zh/x.md``, ``docs/zh/x.md``, ``en/x.md``, ``x.md`` or ``x`` -> ``x.md``."""
    name = re.sub(rf"^(.*/)?({'|'.join(LANGUAGES)})/", "", Path(argument).as_posix())
    return name.removesuffix(".md") + ".md"


def with_translation_of(text: str, value: str) -> str:
    """``text`` with ``translation_of: value`` in its front matter; nothing else changes."""
    line = f"{KEY}: " + (value if yaml.safe_load(f"k: {value}")["k"] == value else f'"{value}"')
    found = FRONT_MATTER.match(text)
    if found is None:
        return f"---\n{line}\n---\n\n{text}"
    block = found[1] or ""
    pattern = re.compile(rf"^{KEY}:.*$", re.MULTILINE)
    block = pattern.sub(line, block) if pattern.search(block) else block + line + "\n"
    return f"---\n{block}---{found[2]}{text[found.end() :]}"


def refresh(docs: Path, argument: str) -> None:
    name = page_name(argument)
    en_path = docs / SOURCE / name
    zh_path = docs / TRANSLATION / name
    if missing := [path for path in (en_path, zh_path) if not path.is_file()]:
        raise SystemExit(f"--refresh {argument}: {missing[0]} does not exist")
    text = zh_path.read_text(encoding="utf-8")
    if (updated := with_translation_of(text, page_hash(en_path))) != text:
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
    parser.add_argument("--docs", type=Path, default=DOCS, help="the folder of en/ and zh/")
    args = parser.parse_args(argv)
    if missing := [lang for lang in LANGUAGES if not (args.docs / lang).is_dir()]:
        parser.error(f"{args.docs / missing[0]} is not a folder")
    for argument in args.refresh:
        refresh(args.docs, argument)
    try:
        return 1 if check(args.docs) else 0
    except ImportError as err:  # the record is written; checking needs myst-nb
        raise SystemExit(f"parity: no {err.name} here: check with `nox -s parity`") from None


if __name__ == "__main__":
    sys.exit(main())
