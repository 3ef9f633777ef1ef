"""Language parity (gpukit_site.parity, ``nox -s parity``): the two languages are one site.

The command runs on the real docs/ tree and on fixture trees: ``tests/fixtures/parity`` (a page
with every kind of code cell, label and reference the command compares, plus prose and
literal blocks that differ between the languages, as they may) and ``tests/fixtures/site``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx_site import FIXTURES, ROOT

from gpukit_site import parity
from gpukit_site.languages import LANGUAGES


def run_parity(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpukit_site.parity", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A private copy of the parity fixture tree (en/ and zh/) that a test may edit."""
    return Path(shutil.copytree(FIXTURES / "parity", tmp_path / "docs"))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# -- Trees in parity -----------------------------------------------------------------------------
def test_real_docs_are_in_parity() -> None:
    done = run_parity()
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["parity", "site"])
def test_fixture_trees_are_in_parity(name: str) -> None:
    done = run_parity("--docs", FIXTURES / name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agree (3 pages)" in done.stdout


def test_fixture_page_is_read_completely() -> None:
    page = parity.read_page(FIXTURES / "parity" / "en" / "page.md")
    assert [(line, cell.source) for line, cell in page.cells] == [
        (15, 'x = 6 * 7\nprint("answer:", x)'),
        (20, "1 / 0"),
        (26, 'print("hidden")'),
    ]
    assert page.cells[1][1].metadata == {"tags": ["raises-exception"]}
    assert page.cells[2][1].metadata["mystnb"] == {"code_prompt_show": "Show the output"}
    assert page.front_matter["gpus"] == 1
    assert page.labels == {"sec-parity-page", "eq-parity", "fig-parity"}
    assert page.references == {
        "{numref}fig-parity",
        "{ref}sec-parity-nested",
        "{ref}sec-parity-page",
        "#eq-parity",
        "{term}warp",
    }
    assert page.glossary == [("warp",), ("streaming multiprocessor", "SM")]
    assert parity.read_page(FIXTURES / "parity" / "zh" / "page.md").glossary == [
        ("线程束", "warp"),
        ("流式多处理器", "streaming multiprocessor", "SM"),
    ]
    index = parity.read_page(FIXTURES / "parity" / "en" / "index.md")
    assert index.toctree == ["page", "part/nested"]


def test_the_learning_paths_pages_are_toctree_entries(tmp_path: Path) -> None:
    # The index's {learning-path} writes the book's toctree (gpukit_site.ext.learning_path).
    index = tmp_path / "index.md"
    path = ":::{learning-path} The book\n# Part one\npage\n\n# Part two\nother\n:::\n"
    index.write_text(f"# Index\n\n{path}", encoding="utf-8")
    assert parity.read_page(index).toctree == ["page", "other"]


# -- Each difference that breaks parity is reported -------------------------------------------
# (file to edit, text, replacement, what the report says)
BREAKS = {
    "cell source": (
        "zh/page.md",
        "x = 6 * 7",
        "x = 7 * 6",
        "code cell 1 (en line 15, zh line 15): source differs at its line 1",
    ),
    "cell trailing blank line": (  # myst-nb keeps it here: the notebooks' hashes differ
        "zh/page.md",
        'print("answer:", x)\n```',
        'print("answer:", x)\n\n```',
        "code cell 1 (en line 15, zh line 15): source differs (one is longer)",
    ),
    "cell tags": (
        "zh/page.md",
        ":tags: [raises-exception]",
        ":tags: [raises-exception, hide-input]",
        "code cell 2 (en line 20, zh line 20): options {'tags': ['raises-exception']} vs "
        "{'tags': ['raises-exception', 'hide-input']}",
    ),
    "cell tags removed": (
        "zh/page.md",
        ":tags: [raises-exception]\n",
        "",
        "code cell 2 (en line 20, zh line 20): options {'tags': ['raises-exception']} vs {}",
    ),
    "translated cell option": (
        "zh/page.md",
        '"Show the output"',
        '"显示输出"',
        "code cell 3 (en line 26, zh line 26): options",
    ),
    "extra cell": (
        "zh/page.md",
        "$$\ne = mc^2",
        "```{code-cell} ipython3\n1\n```\n\n$$\ne = mc^2",
        "3 code cells in en, 4 in zh",
    ),
    "kernelspec": (
        "zh/page.md",
        "name: python3",
        "name: python2",
        "front matter differs in kernelspec",
    ),
    "gpus": ("zh/page.md", "gpus: 1", "gpus: 2", "front matter differs in gpus"),
    "summary in one language": (
        "zh/page.md",
        "gpus: 1\n",
        "gpus: 1\nsummary: 教一件事。\n",
        "front matter 'summary' only in zh: translate it with the page",
    ),
    "section label": (
        "zh/page.md",
        "(sec-parity-page)=",
        "(sec-parity-seite)=",
        "labels differ (only in en: sec-parity-page; only in zh: sec-parity-seite)",
    ),
    "figure name": (
        "zh/page.md",
        ":name: fig-parity",
        ":name: fig-parity-zh",
        "labels differ (only in en: fig-parity; only in zh: fig-parity-zh)",
    ),
    "equation label": (
        "en/page.md",
        "$$ (eq-parity)",
        "$$ (eq-other)",
        "labels differ (only in en: eq-other; only in zh: eq-parity)",
    ),
    "ref target": (
        "zh/page.md",
        "<sec-parity-nested>",
        "<sec-parity-page>",
        "cross-reference targets differ (only in en: {ref}sec-parity-nested)",
    ),
    "numref target": (
        "zh/page.md",
        "{numref}`fig-parity`",
        "{numref}`图 {number} <fig-other>`",
        "only in zh: {numref}fig-other",
    ),
    "ref in a directive": (
        "zh/page.md",
        "带引用的注释：{ref}`sec-parity-page`",
        "带引用的注释",
        "only in en: {ref}sec-parity-page",
    ),
    "markdown link": ("zh/page.md", "[公式](#eq-parity)", "公式", "only in en: #eq-parity"),
    "toctree": ("zh/index.md", "嵌套页面 <part/nested>", "", "toctree entries differ"),
    # The glossaries: the same entries, by their English terms, in the same order.
    "glossary entry missing": (
        "zh/page.md",
        "线程束\nwarp\n   32 个线程。\n",
        "",
        "glossary term only in en: warp",
    ),
    "glossary term translated away": (
        "zh/page.md",
        "流式多处理器\nstreaming multiprocessor\nSM\n",
        "流式多处理器\nSM\n",
        "glossary term only in en: streaming multiprocessor / SM",
    ),
    "glossary term only in zh": (
        "zh/page.md",
        "SM\n   GPU",
        "SM\nSMs\n   GPU",
        "glossary term only in zh: streaming multiprocessor / SM / SMs",
    ),
    "glossary order": (
        "zh/page.md",
        "线程束\nwarp\n   32 个线程。\n\n流式多处理器\nstreaming multiprocessor\nSM\n",
        "流式多处理器\nstreaming multiprocessor\nSM\n   GPU 的一个处理器。\n\n线程束\nwarp\n",
        "glossary entries in another order",
    ),
    "term target": (
        "zh/page.md",
        "{term}`线程束 <warp>` 互相链接",
        "{term}`线程束` 互相链接",
        "only in zh: {term}线程束",
    ),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_difference_is_reported(tree: Path, case: str) -> None:
    path, old, new, says = BREAKS[case]
    edit(tree / path, old, new)
    if path.startswith("en/"):  # keep the translation record current: test one thing at a time
        run_parity("--docs", tree, "--refresh", path)
    done = run_parity("--docs", tree)
    assert done.returncode == 1, done.stdout
    assert says in done.stdout, done.stdout
    page = Path(path).name
    assert f"PARITY: {page}: " in done.stdout
    assert "STALE" not in done.stdout


def test_code_cell_check_agrees_with_the_execution_cache(tree: Path, notebook_hash) -> None:
    """Whatever parity calls a code-cell difference, jupyter-cache would execute twice for."""
    assert notebook_hash(tree / "en/page.md") == notebook_hash(tree / "zh/page.md")
    cases = ("cell source", "cell trailing blank line", "cell tags", "translated cell option")
    for case in (*cases, "extra cell"):
        path, old, new, _ = BREAKS[case]
        target = tree / path
        original = target.read_text(encoding="utf-8")
        edit(target, old, new)
        assert notebook_hash(tree / "en/page.md") != notebook_hash(tree / "zh/page.md"), case
        target.write_text(original, encoding="utf-8")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_page_in_one_language_only_is_reported(tree: Path, lang: str) -> None:
    other = "zh" if lang == "en" else "en"
    (tree / other / "part" / "nested.md").unlink()
    done = run_parity("--docs", tree)
    assert done.returncode == 1
    expected = f"PARITY: {lang}/part/nested.md: only in one language (no {other}/part/nested.md)"
    assert expected in done.stdout, done.stdout


def test_prose_and_literal_blocks_may_differ(tree: Path, notebook_hash) -> None:
    edit(tree / "en/page.md", "gpus: 1\n", "gpus: 1\nsummary: Teaches one thing.\n")
    edit(tree / "zh/page.md", "gpus: 1\n", "gpus: 1\nsummary: 教一件事。\n")
    edit(tree / "zh/page.md", "字面块中的内容", "字面块里的文字")
    edit(tree / "zh/page.md", "(不是标签)=", "(另一个不是标签的东西)=")
    edit(tree / "zh/page.md", 'print("不是单元格")', "1 + 1")
    # myst-nb drops a code cell's argument, and a blank line after a YAML options block's cell:
    # the notebook and its execution stay the same.
    edit(tree / "zh/page.md", "```{code-cell} ipython3\nx", "```{code-cell} python\nx")
    edit(tree / "zh/page.md", 'print("hidden")\n```', 'print("hidden")\n\n```')
    assert notebook_hash(tree / "en/page.md") == notebook_hash(tree / "zh/page.md")
    run_parity("--docs", tree, "--refresh", "zh/page.md")
    done = run_parity("--docs", tree)
    assert done.returncode == 0, done.stdout


# -- Stale translations ------------------------------------------------------------------------
def test_changed_english_page_makes_its_translation_stale(tree: Path) -> None:
    edit(tree / "en/page.md", "# A page", "# A better page")
    done = run_parity("--docs", tree)
    assert done.returncode == 1
    assert "STALE" in done.stdout
    assert "  zh/page.md (records " in done.stdout
    assert "\n    nox -s parity -- --refresh zh/page.md\n" in done.stdout
    assert "index.md" not in done.stdout and "PARITY:" not in done.stdout

    before = (tree / "zh/page.md").read_text(encoding="utf-8")
    refreshed = run_parity("--docs", tree, "--refresh", "zh/page.md")
    assert refreshed.returncode == 0, refreshed.stdout
    after = (tree / "zh/page.md").read_text(encoding="utf-8")
    new_hash = parity.page_hash(tree / "en/page.md")
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == 1 and changed[0][1] == f"translation_of: {new_hash}"


def test_missing_record_is_stale_and_refresh_adds_front_matter(tree: Path) -> None:
    page = tree / "zh/part/nested.md"
    body = "(sec-parity-nested)=\n# 嵌套页面\n\n返回{ref}`sec-parity-page`。\n"
    page.write_text(body, encoding="utf-8")
    done = run_parity("--docs", tree)
    assert done.returncode == 1
    assert "zh/part/nested.md (records no translation_of" in done.stdout
    refreshed = run_parity("--docs", tree, "--refresh", "part/nested")
    assert refreshed.returncode == 0, refreshed.stdout
    expected = f"---\ntranslation_of: {parity.page_hash(tree / 'en/part/nested.md')}\n---\n\n"
    assert page.read_text(encoding="utf-8") == expected + body


@pytest.mark.parametrize(
    "argument", ["zh/page.md", "en/page.md", "docs/zh/page.md", "/abs/docs/en/page.md", "page"]
)
def test_refresh_accepts_the_usual_ways_to_name_a_page(argument: str) -> None:
    assert parity.page_name(argument) == "page.md"
    assert parity.page_name(argument.replace("page", "part/nested")) == "part/nested.md"


def test_refresh_of_a_missing_page_fails(tree: Path) -> None:
    done = run_parity("--docs", tree, "--refresh", "zh/nothing.md")
    assert done.returncode != 0
    assert "nothing.md does not exist" in done.stderr


def test_translation_of_keeps_every_other_line() -> None:
    text = "---\nfile_format: mystnb\ngpus: 2  # wants two\n---\n\n# Title\n"
    once = parity.with_translation_of(text, "0123456789abcdef")
    assert once == (
        "---\nfile_format: mystnb\ngpus: 2  # wants two\ntranslation_of: 0123456789abcdef\n---\n"
        "\n# Title\n"
    )
    twice = parity.with_translation_of(once, "fedcba9876543210")
    assert twice == once.replace("0123456789abcdef", "fedcba9876543210")
    # All digits would read as a number in YAML: it is quoted, and read back as the same text.
    digits = parity.with_translation_of(text, "1234567890123456")
    assert 'translation_of: "1234567890123456"' in digits


def test_all_digit_hash_is_read_back_as_text(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(parity.with_translation_of("# T\n", "0000000000000012"), encoding="utf-8")
    assert parity.read_page(page).recorded == "0000000000000012"


# -- The real site ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def notebook_hash(tmp_path_factory: pytest.TempPathFactory):
    """``notebook_hash(path)``: the key under which jupyter-cache stores a page's execution."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    cache = get_cache(tmp_path_factory.mktemp("jupyter-cache"))

    def key(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        return cache.create_hashed_notebook(read_myst_markdown_notebook(text, MdParserConfig()))[1]

    return key


def test_both_languages_of_every_real_page_share_one_execution(notebook_hash) -> None:
    """translation_of (and any other front matter) must not split the execution cache."""
    docs = ROOT / "docs"
    executed = 0
    for name in sorted(parity.pages_of(docs, "en") & parity.pages_of(docs, "zh")):
        if "kernelspec" not in parity.read_page(docs / "en" / name).front_matter:
            continue
        executed += 1
        assert notebook_hash(docs / "en" / name) == notebook_hash(docs / "zh" / name), name
    assert executed >= 4


def test_nox_has_a_parity_session() -> None:
    # nox is in the test group, so this runs wherever the tests do (CI included).
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-l", "-f", str(ROOT / "noxfile.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert any(line.split()[1:2] == ["parity"] for line in done.stdout.splitlines()), done.stdout
