"""Build tests: the real Sphinx + myst-nb pipeline of conf/, on a tiny fixture site."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import nbformat
import pytest
from sphinx_site import (
    ROOT,
    copy_fixture_site,
    documents_read,
    executed_pages,
    load_conf,
    sphinx_build,
)

import gpukit
from gpukit_site import budgets
from gpukit_site.ext.execution import tree_hash
from gpukit_site.ext.machine_cases import this_machine

# Sphinx's own warnings; ipykernel's "[IPKernelApp] WARNING | ..." line is not one.
SPHINX_WARNING = re.compile(r"(^|: )WARNING: ", re.MULTILINE)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """English, then Chinese, sharing one execution cache: the order nox -s docs uses."""
    tmp = tmp_path_factory.mktemp("site")
    site = copy_fixture_site(tmp / "src")
    return {lang: sphinx_build(site, lang, tmp / "out") for lang in ("en", "zh")}


def test_both_languages_build_without_warnings(built: dict) -> None:
    for lang, build in built.items():
        assert build.returncode == 0, f"{lang} build failed:\n{build.log}"
        assert not SPHINX_WARNING.search(build.log), build.log


def test_executed_output_lands_in_the_html(built: dict) -> None:
    for build in built.values():
        assert "answer: 42" in build.page("page")


def test_second_language_executes_no_notebook(built: dict) -> None:
    assert executed_pages(built["en"].log) == ["page"], "the first language executes the page"
    assert executed_pages(built["zh"].log) == [], built["zh"].log
    assert "Using cached notebook" in built["zh"].log


def test_translation_record_stays_out_of_the_pages(built: dict) -> None:
    # Every zh fixture page records translation_of (gpukit_site.parity); the executed page above
    # shares its execution all the same, and no page shows the record.
    for page in ("index", "page", "part/nested"):
        assert "translation_of" not in built["zh"].page(page)


def stylesheets(html: str) -> list[str]:
    return re.findall(r'<link rel="stylesheet" type="text/css" href="([^"]+)"', html)


def test_a_page_loads_myst_nb_and_katex_styles_only_where_it_uses_them(built: dict) -> None:
    # index: no cell, no math; page: an executed cell and a glued value; part/nested: math.
    for build in built.values():
        pages = ("index", "page", "part/nested")
        used = {page: " ".join(stylesheets(build.page(page))) for page in pages}
        assert "furo" in used["index"], used
        assert "mystnb." in used["page"] and "mystnb." not in used["part/nested"], used
        assert "katex" in used["part/nested"] and "katex" not in used["page"], used
        assert "mystnb." not in used["index"] and "katex" not in used["index"], used


def test_chinese_build_uses_chinese_theme_strings(built: dict) -> None:
    html = built["zh"].page("page")
    assert 'lang="zh-CN"' in html
    assert "搜索" in html
    # furo ships no Chinese: conf/locales supplies its strings.
    assert "上一页" in html and "下一页" in html and "回到顶部" in html
    assert "Previous" not in html and "Back to top" not in html


@pytest.mark.parametrize(
    ("lang", "page", "href"),
    [
        ("en", "page", "../zh/page.html"),
        ("zh", "page", "../en/page.html"),
        ("en", "part/nested", "../../zh/part/nested.html"),
        ("zh", "index", "../en/index.html"),
    ],
)
def test_language_switcher_links_to_the_same_page(built: dict, lang, page, href) -> None:
    html = built[lang].page(page)
    links = re.findall(r'<a class="sidebar-languages-other" href="([^"]+)"', html)
    assert links == [href]
    # The link resolves to a page that exists in the other language's build.
    target = (built[lang].html / page).parent / href
    other = "zh" if lang == "en" else "en"
    assert target.resolve() == (built[other].html / f"{page}.html").resolve()


def test_a_changed_extension_reads_every_page_again(monkeypatch, tmp_path: Path) -> None:
    conf = load_conf(monkeypatch, "quick")
    assert conf["site_extensions_hash"] == tree_hash(ROOT, ("src/gpukit_site/ext",))
    site = copy_fixture_site(tmp_path / "src")
    out = tmp_path / "out"
    assert sphinx_build(site, "en", out).returncode == 0
    assert documents_read(sphinx_build(site, "en", out).log) == []
    # What conf.py sets when a file of src/gpukit_site/ext has changed.
    changed = sphinx_build(site, "en", out, "-D", "site_extensions_hash=edited")
    assert changed.returncode == 0, changed.log
    assert set(documents_read(changed.log)) == {"index", "page", "part/nested"}


def test_a_rebuild_keeps_the_glossary_in_the_search_index(tmp_path: Path) -> None:
    """A rebuild that writes some pages again still has the index entries of the others, a
    glossary's terms among them (gpukit_site.ext.search_entries)."""
    site = copy_fixture_site(tmp_path / "src")
    terms = "---\norphan: true\n---\n\n# Terms\n\n```{glossary}\nbubble\n   Idle time.\n```\n"
    (site / "en" / "terms.md").write_text(terms, "utf-8")
    out = tmp_path / "out"
    assert sphinx_build(site, "en", out).returncode == 0
    page = site / "en" / "page.md"
    page.write_text(page.read_text("utf-8") + "\nOne more sentence.\n", "utf-8")
    again = sphinx_build(site, "en", out)
    assert again.returncode == 0, again.log
    assert documents_read(again.log) == ["page"]  # the terms page is not written again
    assert "bubble" in again.search_index()["indexentries"]
    # A page removed takes its entries with it (kept, they name a page the index lacks).
    (site / "en" / "terms.md").unlink()
    gone = sphinx_build(site, "en", out)
    assert gone.returncode == 0, gone.log
    assert "bubble" not in gone.search_index()["indexentries"]


def test_gpu_guard_stops_a_build_on_a_machine_with_too_few_gpus(tmp_path: Path) -> None:
    # Under a folder named _build on purpose: the guard must still see the pages there.
    site = copy_fixture_site(tmp_path / "_build" / "src")
    wanted = gpukit.num_gpus() + 1
    for lang in ("en", "zh"):
        page = site / lang / "page.md"
        page.write_text(
            page.read_text(encoding="utf-8").replace("---\n", f"---\ngpus: {wanted}\n", 1),
            encoding="utf-8",
        )
    guarded = sphinx_build(site, "en", tmp_path / "out", env={"GPUKIT_REQUIRE_GPUS": "1"})
    assert guarded.returncode != 0
    assert f"page.md: wants {wanted} GPU(s)" in guarded.log
    assert "Executing notebook" not in guarded.log  # it stops before executing anything
    unguarded = sphinx_build(site, "en", tmp_path / "out2", env={"GPUKIT_REQUIRE_GPUS": "0"})
    assert unguarded.returncode == 0, unguarded.log
    # Without the guard the page says that it ran on fewer GPUs than it is written for.
    written_for = "one GPU" if wanted == 1 else f"{wanted} GPUs"
    assert f"This page is written for {written_for};" in unguarded.page("page")
    assert "GPU(s)" not in unguarded.page("page")  # a reader's sentence says 1 GPU or 2 GPUs
    chinese = sphinx_build(site, "zh", tmp_path / "out2", env={"GPUKIT_REQUIRE_GPUS": "0"})
    assert f"本节按 {wanted} 块 GPU 编写" in chinese.page("page"), chinese.log


def test_failing_cell_fails_the_build_and_names_the_page(tmp_path: Path) -> None:
    site = copy_fixture_site(tmp_path / "src")
    page = site / "en" / "page.md"
    page.write_text(
        page.read_text(encoding="utf-8").replace('print("answer:", 6 * 7)', "1 / 0"),
        encoding="utf-8",
    )
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode != 0
    # The message names the page, shows the failing cell and the error.
    assert build.reports_failure_of("page.md")
    assert "1 / 0" in build.log
    assert "ZeroDivisionError" in build.log


def test_copy_button_is_on_code_but_not_on_outputs(built: dict) -> None:
    from bs4 import BeautifulSoup

    build = built["en"]
    script = (build.html / "_static" / "copybutton.js").read_text(encoding="utf-8")
    selector = re.search(r"const COPYBUTTON_SELECTOR = '([^']+)'", script).group(1)
    soup = BeautifulSoup(build.page("page"), "html.parser")
    chosen = soup.select(selector)
    assert [pre.get_text() for pre in chosen] == ['print("answer:", 6 * 7)\n']
    assert "answer: 42" in soup.select_one("div.cell_output pre").get_text()
    # Prompts of pasted console sessions are stripped when copying.
    assert r"'>>> |\\.\\.\\. |\\$ ', true" in script


def test_chinese_search_index_has_chinese_words(built: dict) -> None:
    terms = built["zh"].search_index()["terms"]
    # jieba splits the sentence into words; without it no Chinese term is indexed at all.
    assert {"结果", "页面"} <= set(terms)


def test_each_language_offers_its_own_notebook_with_outputs(built: dict) -> None:
    # gpukit_site.ext.notebooks: myst-nb's jupyter_execute/ is shared by both languages and holds
    # no outputs; every language's build writes its own notebook, outputs merged from the cache.
    titles = {"en": "# A page", "zh": "# 一个页面"}
    for lang, build in built.items():
        notebook = json.loads((build.html / "_notebooks" / "page.ipynb").read_text("utf-8"))
        cells = notebook["cells"]
        markdown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        assert titles[lang] in markdown.splitlines()
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
        assert "answer: 42" in json.dumps(outputs)
        html = build.page("page")
        assert 'href="_notebooks/page.ipynb" download' in html
        assert f"/blob/notebooks/{lang}/page.ipynb" in html
        assert "notebook-links" not in build.page("index")  # nothing executed there


def test_chinese_lines_join_without_a_space(built: dict) -> None:
    html = built["zh"].page("page")
    # A break between two Chinese characters vanishes; one next to a Latin word stays.
    assert "这一段在源文件里分成了几行" in html
    assert "PyTorch\n计算" in html
    # A break between Chinese characters that follows a kept one vanishes too (Text nodes are
    # strings: looked up by equality, the kept break was found in its place).
    assert "下面是内核算出的结果" in html


def test_pages_showing_this_build_are_read_again_by_every_build(tmp_path: Path) -> None:
    """``{build-info}`` shows facts from outside its page (the machine, the date): the page is
    read on every build (Sphinx's ``note_reread``), and no longer once it drops them."""
    site = copy_fixture_site(tmp_path / "src")
    about = site / "en" / "about.md"
    about.write_text("# About\n\n```{build-info}\n```\n", "utf-8")
    index = site / "en" / "index.md"
    index.write_text(index.read_text("utf-8").replace("page\n", "page\nabout\n"), "utf-8")
    out = tmp_path / "out"
    assert sphinx_build(site, "en", out).returncode == 0
    again = sphinx_build(site, "en", out)
    assert again.returncode == 0, again.log
    assert documents_read(again.log) == ["about"]
    # The build facts name the workloads the pages really ran.
    text = " ".join(re.sub(r"<[^>]+>", " ", again.page("about")).split())
    profile = gpukit.current_profile()
    for workload in (profile.lenet, profile.resnet):
        assert workload.describe() in text

    about.write_text("# About\n\nNothing from outside this page.\n", "utf-8")
    assert documents_read(sphinx_build(site, "en", out).log) == ["about"]  # changed
    assert documents_read(sphinx_build(site, "en", out).log) == []


def test_the_chinese_build_says_the_machine_and_workloads_in_chinese(tmp_path: Path) -> None:
    """The provenance line and About's table (gpukit_site.ext.provenance, conf/locales): gpukit's
    English phrases said again in Chinese, with full-width punctuation; English as gpukit says."""
    site = copy_fixture_site(tmp_path / "src")
    for lang in ("en", "zh"):
        (site / lang / "about.md").write_text("# About\n\n```{build-info}\n```\n", "utf-8")
        index = site / lang / "index.md"
        index.write_text(index.read_text("utf-8").replace("page\n", "page\nabout\n", 1), "utf-8")
    builds = {lang: sphinx_build(site, lang, tmp_path / "out") for lang in ("en", "zh")}
    for build in builds.values():
        assert build.returncode == 0, build.log

    def text(lang: str, page: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", builds[lang].page(page)).split())

    def provenance(lang: str) -> str:
        return re.search(r'<p class="provenance">([^<]*)</p>', builds[lang].page("page"))[1]

    machine = gpukit.describe_machine()
    profile = gpukit.current_profile()
    assert machine in provenance("en") and machine in text("en", "about")
    line = provenance("zh")
    # No half-width parenthesis opens a phrase (a CPU model may hold some: "Intel(R) Xeon(R)").
    assert line.startswith("本节的输出来自：") and " (" not in line and "kernels" not in line, line
    about = text("zh", "about")
    for english in (machine, "kernels", "training /", "test images", "epochs"):
        assert english not in about, about
    if gpukit.num_gpus() == 0:
        cpu = re.compile(r"仅 CPU，\d+ 核（[^（）]+，\w+ 核函数[^（）]*）")
        assert cpu.search(line) and cpu.search(about), (line, about)
    else:
        assert re.search(r"\d+ 块 .+（CUDA [\d.]+）", about), about
    name = {"quick": "快速配置（quick）", "full": "完整配置（full）"}[profile.name]
    assert f"{name}：LeNet：" in about and "张训练图像" in about and "；ResNet-18：" in about


def test_the_build_writes_the_sites_root_page(built: dict) -> None:
    root = (built["en"].html.parent / "index.html").read_text("utf-8")
    assert 'href="en/' in root and 'href="zh/' in root, root


def test_this_machines_case_is_text_and_the_others_are_collapsed(tmp_path: Path) -> None:
    from gpukit_site.ext.machine_cases import CASES

    site = copy_fixture_site(tmp_path / "src")
    body = "".join(f":::{{case}} {case}\nText for {case}.\n:::\n" for case in CASES)
    page = site / "en" / "cases.md"
    page.write_text(f"# Cases\n\n::::{{machine-cases}}\n{body}::::\n", "utf-8")
    index = site / "en" / "index.md"
    index.write_text(index.read_text("utf-8").replace("page\n", "page\ncases\n"), "utf-8")
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode == 0, build.log
    html = build.page("cases")
    opened, collapsed = html.split('<details class="details machine-cases-others">')
    assert f"Text for {this_machine()}." in opened
    for case in CASES:
        if case != this_machine():
            assert f"Text for {case}." in collapsed and f"Text for {case}." not in opened

    page.write_text(
        "# Cases\n\n::::{machine-cases}\n:::{case} cpu\nA\n:::\n:::{case} gpu gpus\nB\n:::\n::::\n",
        "utf-8",
    )
    shared = sphinx_build(site, "en", tmp_path / "out").page("cases")
    opened, collapsed = shared.split('<details class="details machine-cases-others">')
    assert ("<p>A</p>" in opened) == (this_machine() == "cpu") != ("<p>A</p>" in collapsed)
    page.write_text("# Cases\n\n::::{machine-cases}\n:::{case} cpu\nA\n:::\n::::\n", "utf-8")
    assert (
        "machine-cases holds only {case} blocks" in sphinx_build(site, "en", tmp_path / "out").log
    )


@pytest.mark.parametrize("case", ["cpu", "gpu gpus"])
def test_a_case_holding_a_glued_value_fails_the_build(tmp_path: Path, case: str) -> None:
    """A case is shown on every build, its own machine's or not: a value glued from this build
    inside it would describe the wrong machine on the others (the own case fails too, since
    the same page built on another kind of machine would show it collapsed)."""
    site = copy_fixture_site(tmp_path / "src")
    glued = "```{code-cell} ipython3\nfrom myst_nb import glue\nglue('n', 3, display=False)\n```\n"
    cases = {"cpu": "A", "gpu gpus": "B"} | {case: "took {glue:text}`n` s"}
    body = "".join(f":::{{case}} {kinds}\n{text}\n:::\n" for kinds, text in cases.items())
    page = site / "en" / "page.md"
    page.write_text(
        page.read_text("utf-8") + f"\n{glued}\n::::{{machine-cases}}\n{body}::::\n", "utf-8"
    )
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode != 0
    assert f"the {{case}} {case} holds a glued value" in build.log, build.log


def test_an_api_section_lists_its_modules_public_names(tmp_path: Path) -> None:
    """``{gpukit-module}`` (gpukit_site.ext.api_reference): the summary table holds every name of
    the module's ``__all__`` and nothing else, each linked to its documentation below."""
    site = copy_fixture_site(tmp_path / "src")
    api = "# API\n\n## Timing\n\n```{gpukit-module} gpukit.timing\n```\n"
    (site / "en" / "api.md").write_text(api, "utf-8")
    index = site / "en" / "index.md"
    index.write_text(index.read_text("utf-8").replace("page\n", "page\napi\n", 1), "utf-8")
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode == 0, build.log
    assert not SPHINX_WARNING.search(build.log), build.log
    table = build.page("api").split('<table class="autosummary')[1].split("</table>")[0]
    listed = re.findall(r'href="#gpukit\.timing\.(\w+)"', table)
    assert listed == gpukit.timing.__all__


def _flash_api_site(tmp_path: Path) -> Path:
    """The fixture site with an API page of gpukit.flash and gpukit.flash_kernel."""
    site = copy_fixture_site(tmp_path / "src")
    modules = ("flash", "flash_kernel")
    sections = [f"## {m}\n\n```{{gpukit-module}} gpukit.{m}\n```\n" for m in modules]
    (site / "en" / "api.md").write_text("# API\n\n" + "\n".join(sections), "utf-8")
    index = site / "en" / "index.md"
    index.write_text(index.read_text("utf-8").replace("page\n", "page\napi\n", 1), "utf-8")
    return site


@pytest.mark.parametrize("interpret", ["0", "1"])
def test_an_api_section_documents_triton_kernels_with_their_signatures(
    tmp_path: Path, interpret: str
) -> None:
    """A ``@triton.jit`` kernel is a ``JITFunction`` object (an ``InterpretedFunction``, with no
    docstring of its own, where the build inherits TRITON_INTERPRET=1), which autodoc alone
    leaves out of a module's documentation: ``gpukit.flash_kernel``'s section documents each
    kernel as the function it wraps (gpukit_site.ext.api_reference.TritonKernelDocumenter), every
    link resolved (those to gpukit.flash in its section)."""
    pytest.importorskip("triton")
    env = {"TRITON_INTERPRET": interpret}
    build = sphinx_build(_flash_api_site(tmp_path), "en", tmp_path / "out", env=env)
    assert build.returncode == 0, build.log
    assert not SPHINX_WARNING.search(build.log), build.log
    html = build.page("api")
    for kernel in ("attend_blocks", "flash_forward_kernel"):
        assert f'id="gpukit.flash_kernel.{kernel}"' in html
    after = html.split('id="gpukit.flash_kernel.attend_blocks">')[1]
    signature = re.sub(r"<[^>]+>|\s+", "", after)
    assert signature.startswith("gpukit.flash_kernel.attend_blocks(q,acc,m_i,l_i,"), signature[:80]


def test_the_triton_examples_pass_under_sphinx_doctest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nox -s doctest`` runs the API pages' examples in Sphinx's own process, where autodoc
    has imported gpukit.flash_kernel, and with it Triton, while reading: without a GPU, the
    interpreter must have been chosen before (conf.py's choose_triton_interpreter), not by the
    environment the build inherits (tests/gpukit/conftest.py sets it in this one)."""
    pytest.importorskip("triton")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    off = ("-D", "nb_execution_mode=off", "-D", "suppress_warnings=myst-nb.lexer,mystnb.glue")
    build = sphinx_build(_flash_api_site(tmp_path), "en", tmp_path / "out", "-b", "doctest", *off)
    assert build.returncode == 0, build.log
    assert re.search(r"\b0 failures in tests", build.log), build.log


def test_execution_table_and_learning_path_speak_the_pages_language(tmp_path: Path) -> None:
    """The About page's execution table (gpukit_site.ext.provenance) and the index's learning path
    (gpukit_site.ext.learning_path) in each language, with a status every font can show."""
    site = _site_with_learning_path(tmp_path / "src")
    for lang in ("en", "zh"):
        (site / lang / "about.md").write_text("# About\n\n```{nb-exec-table}\n```\n", "utf-8")
    builds = {lang: sphinx_build(site, lang, tmp_path / "out") for lang in ("en", "zh")}

    def text(lang: str, page: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", builds[lang].page(page)).split())

    for build in builds.values():
        assert build.returncode == 0, build.log
        assert not SPHINX_WARNING.search(build.log), build.log
        assert "✅" not in build.page("about") and "❌" not in build.page("about")
    assert "Run Time (s)" in text("en", "about") and " done" in text("en", "about")
    for chinese in ("页面", "修改时间", "方式", "运行时间（秒）", "状态", "完成"):
        assert chinese in text("zh", "about"), text("zh", "about")
    assert "Run Time" not in text("zh", "about") and "Document" not in text("zh", "about")
    # gpukit_site.budgets reads the time the table shows from the execution cache myst-nb kept.
    times = budgets.execution_times(tmp_path / "out" / "cache")
    assert list(times) == ["page"] and 0 < times["page"] < budgets.PAGE_SECONDS
    shown = f" {round(times['page'], 2)} "  # as myst-nb's table rounds it
    assert shown in text("en", "about") or shown in text("zh", "about"), times
    # The page's title links to it; summary, reading time and GPUs come from the page itself,
    # in the index's language.
    assert "A page Teaches one thing. 5 min none" in text("en", "index")
    assert "阅读时间" in text("zh", "index")
    assert "一个页面 教一件事。 5 分钟 无" in text("zh", "index")
    # A page that wants no GPU (no 'gpus:', so 0, as many-machines says) is listed as wanting
    # none and carries no fewer-GPUs notice, on any machine.
    for build in builds.values():
        assert "provenance-notice" not in build.page("page")
    assert "Part one" in text("en", "index")
    # ... and puts the page in the book, numbered, in the sidebar of every page.
    assert '<span class="section-number">1. </span>A page' in builds["en"].page("page")
    assert "The book" in text("en", "about")
    # The summary is also the page's description for search engines, in its language.
    assert '<meta name="description" content="Teaches one thing." />' in builds["en"].page("page")
    assert '<meta name="description" content="教一件事。" />' in builds["zh"].page("page")


def _site_with_learning_path(dest: Path) -> Path:
    """The fixture site with a learning path of one part, whose page says what it teaches."""
    site = copy_fixture_site(dest)
    summaries = {"en": "Teaches `one` thing.", "zh": "教一件事。"}
    for lang, summary in summaries.items():
        page = site / lang / "page.md"
        text = page.read_text("utf-8")
        page.write_text(text.replace("---\n", f"---\nsummary: {summary}\n", 1), "utf-8")
        index = site / lang / "index.md"
        # The learning path writes the book's numbered toctree: page leaves the fixture's own.
        text = index.read_text("utf-8").replace("page\n", "about\n", 1)
        path = ":::{learning-path} The book\n# Part one\npage\n:::\n\n"
        index.write_text(text.replace("```{toctree}", path + "```{toctree}", 1), "utf-8")
    return site


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (("page\n:::", "page: Teaches one thing.\n:::"), "goes in its own front matter"),
        (("summary: Teaches `one` thing.\n", ""), "page has no 'summary' in its front matter"),
        (("page\n:::", "pgae\n:::"), "no page 'pgae'"),
    ],
    ids=["summary in the index", "no summary", "misspelt page"],
)
def test_a_learning_path_without_a_pages_summary_fails(tmp_path: Path, change, error) -> None:
    site = _site_with_learning_path(tmp_path / "src")
    (site / "en" / "about.md").write_text("# About\n", "utf-8")
    old, new = change
    for path in (site / "en" / "index.md", site / "en" / "page.md"):
        path.write_text(path.read_text("utf-8").replace(old, new), "utf-8")
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode != 0
    assert error in build.log, build.log


NOTEBOOK_PAGE = """
(sec-more)=
## 更多

如 {numref}`fig-square` 所示，
见{ref}`sec-fixture-page`与 {doc}`part/nested`。精度为 {glue:text}`acc:.2f`，代码 `{ref}` 照旧。
一个{term}`线程束 <warp>`有 32 个线程。

```{figure} ../img/square.svg
:name: fig-square
:alt: 一个方块

一个方块的
示意图。
```

:::{note}
参见{numref}`fig-square`。
:::

```{admonition} 自己的标题
正文
```

:::{details} 深入一步
细节。
:::

::::{machine-cases}
:::{case} cpu
只有 CPU 时。
:::
:::{case} gpu
一块 GPU 时。
:::
:::{case} gpus
多块 GPU 时。
:::
::::

```{code-cell} ipython3
:tags: [remove-cell]
from myst_nb import glue
glue("acc", 0.4567, display=False)
```
"""


def test_notebook_markdown_is_plain_jupyter_markdown(tmp_path: Path) -> None:
    # gpukit_site.ext.notebooks, on what the real pages do not all use yet (admonitions, glue).
    site = copy_fixture_site(tmp_path / "src")
    (site / "img").mkdir()
    (site / "img" / "square.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" '
        'height="10"/></svg>\n',
        "utf-8",
    )
    page = site / "zh" / "page.md"
    page.write_text(page.read_text("utf-8") + NOTEBOOK_PAGE, "utf-8")
    build = sphinx_build(site, "zh", tmp_path / "out")
    assert build.returncode == 0, build.log
    notebook = nbformat.read(build.html / "_notebooks" / "page.ipynb", as_version=4)
    cells = [c for c in notebook.cells if c.cell_type == "markdown"]
    markdown = "\n\n".join(c.source for c in cells)
    url = "https://gpukit-docs.github.io/gpu-computing/zh/"
    figure = f"[图 1]({url}page.html#fig-square)"
    assert "(sec-" not in markdown and ":::" not in markdown and "{figure}" not in markdown
    assert f"如 {figure} 所示，见[一个页面]({url}page.html#sec-fixture-page)与 " in markdown
    assert f"[嵌套页面]({url}part/nested.html)。精度为 0.46，代码 `{{ref}}` 照旧。" in markdown
    assert f"一个[线程束]({url}index.html#term-warp)有 32 个线程。" in markdown  # a glossary term
    assert "![一个方块](attachment:square.svg)\n\n*图 1* 一个方块的示意图。" in markdown
    assert f"> **备注**\n>\n> 参见{figure}。" in markdown
    assert "> **自己的标题**\n>\n> 正文" in markdown
    assert "<details><summary>深入一步</summary>\n\n细节。\n\n</details>" in markdown
    mine = {"cpu": "只有 CPU 时。", "gpu": "一块 GPU 时。", "gpus": "多块 GPU 时。"}
    here = mine.pop(this_machine())
    others = "\n\n".join(mine.values())
    assert f"{here}\n\n<details><summary>在其他机器上</summary>\n\n{others}" in markdown
    (attached,) = [c.attachments for c in cells if "attachments" in c]
    assert base64.b64decode(attached["square.svg"]["image/svg+xml"]).startswith(b"<svg")


def test_notebook_shows_the_code_of_a_literalinclude(tmp_path: Path) -> None:
    """A page that shows gpukit's code with ``literalinclude`` (one source for page and package)
    shows the same lines in its notebook."""
    site = copy_fixture_site(tmp_path / "src")
    (site / "code.py").write_text('def f():\n    """Doc."""\n    x = 1\n    return x\n', "utf-8")
    page = site / "en" / "page.md"
    include = "```{literalinclude} ../code.py\n:language: python\n:pyobject: f\n"
    include += ":start-at: x = 1\n:dedent: 4\n```\n"
    page.write_text(page.read_text("utf-8") + "\n" + include, "utf-8")
    build = sphinx_build(site, "en", tmp_path / "out")
    assert build.returncode == 0, build.log
    assert not SPHINX_WARNING.search(build.log), build.log
    notebook = nbformat.read(build.html / "_notebooks" / "page.ipynb", as_version=4)
    markdown = "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "```python\nx = 1\nreturn x\n```" in markdown, markdown
    assert "Doc." not in markdown and "Doc." not in build.page("page")
