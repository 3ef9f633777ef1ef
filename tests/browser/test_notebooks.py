"""Every executed page offers its notebook, which reads like the page in a real client and runs.

The notebooks are rendered as Jupyter renders them (nbconvert's HTML, JupyterLab's styles) and
opened in Chromium; one of them is executed with nbclient in a fresh virtual environment, as a
reader who downloaded it would run it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browsing import ALL_PAGES, ROOT, SITE
from nbconvert import HTMLExporter

LABELS = {
    "en": ("Download notebook (.ipynb)", "Open in Colab"),
    "zh": ("下载 notebook（.ipynb）", "在 Colab 中打开"),
}
EXECUTED = [
    name for name in ALL_PAGES if 'class="cell_input' in (SITE / f"{name}.html").read_text("utf-8")
]
NOT_EXECUTED = [name for name in ALL_PAGES if name not in EXECUTED]
# A heading's own text: without its section number and its permalink.
TITLE_JS = """
h => {
  const copy = h.cloneNode(true);
  copy.querySelectorAll('.section-number, .headerlink').forEach(e => e.remove());
  return copy.textContent.trim();
}
"""
# MyST that Jupyter would show as it is: targets, roles, directives and their options.
RAW_MYST = (
    "(sec-",
    "(fig-",
    ")=",
    "{numref}",
    "{ref}",
    "{doc}",
    "{figure}",
    "{glue",
    ":::",
    "```{",
    ":name:",
    ":alt:",
    "{note}",
    "{admonition}",
)
# The text of the Markdown cells; with `code` left out, any "{name}" left is a role.
MARKDOWN_JS = """
withCode => [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown')].map(cell => {
  const copy = cell.cloneNode(true);
  if (!withCode) copy.querySelectorAll('code, pre').forEach(e => e.remove());
  return copy.innerText;
}).join('\\n')
"""


def notebook_of(name: str) -> nbformat.NotebookNode:
    lang, page = name.split("/", 1)
    return nbformat.read(SITE / lang / "_notebooks" / f"{page}.ipynb", as_version=4)


@pytest.mark.parametrize("name", EXECUTED)
def test_executed_page_offers_its_notebook_and_colab(desktop_tab, site, name: str) -> None:
    page = desktop_tab
    lang, page_name = name.split("/", 1)
    page.goto(site.url(name), wait_until="domcontentloaded")
    download = page.locator("a.notebook-download")
    colab = page.locator("a.notebook-colab")
    assert (download.inner_text(), colab.inner_text()) == LABELS[lang]
    assert download.is_visible() and colab.is_visible()

    # Colab opens the copy the GPU workflow publishes on the `notebooks` branch of the
    # repository that "Edit this page" names: one repository URL for the whole site.
    edit = page.locator('a[rel="edit"]').get_attribute("href")
    repo = re.match(r"https://github\.com/([^/]+/[^/]+)/", edit).group(1)
    assert colab.get_attribute("href") == (
        f"https://colab.research.google.com/github/{repo}/blob/notebooks/{lang}/{page_name}.ipynb"
    )

    # The download is this page's notebook, in this language, with the outputs shown here.
    assert download.get_attribute("download") is not None
    response = page.request.get(page.url.rsplit("/", 1)[0] + "/" + download.get_attribute("href"))
    assert response.ok, response.url
    notebook = json.loads(response.body())
    assert notebook["nbformat"] == 4
    title = page.locator("article h1").first.evaluate(TITLE_JS)
    markdown = "".join(
        "".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"
    )
    assert f"# {title}" in markdown.splitlines(), f"the notebook is not the {lang} page {title!r}"
    with_outputs = [c for c in notebook["cells"] if c["cell_type"] == "code" and c["outputs"]]
    assert len(with_outputs) >= page.locator("div.cell_output").count() > 0
    # The first cell installs gpukit from this repository at the commit the site was built from.
    install = "".join(notebook["cells"][0]["source"])
    assert re.search(rf"gpukit @ git\+https://github\.com/{repo}@[0-9a-f]{{40}}'", install)


@pytest.mark.parametrize("name", EXECUTED)
def test_notebook_renders_like_the_page(desktop, site, tmp_path: Path, name: str) -> None:
    page = desktop
    page.goto(site.url(name), wait_until="domcontentloaded")
    figures = page.locator("article figure").count()
    cells = page.locator("div.cell").count()

    notebook = notebook_of(name)
    # Cells the page collapses (solutions) are collapsed in JupyterLab too.
    for cell in notebook.cells:
        collapsed = bool({"hide-cell", "hide-input"} & set(cell.metadata.get("tags", [])))
        assert cell.metadata.get("jupyter", {}).get("source_hidden", False) == collapsed, name
    # Cross-references link to the same place on the hosted site, in this language.
    lang = name.split("/")[0]
    source = "".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    # (Other sites on github.io, such as a cited author's, are not cross-references.)
    links = re.findall(r"\]\((https://[\w-]+\.github\.io/[\w-]+/[a-z]{2}/[^)\s]+)\)", source)
    assert links, f"{name}: no cross-reference"
    for link in links:
        target = re.fullmatch(rf"https://[^/]+/[^/]+/{lang}/([\w/-]+\.html)#([\w-]+)", link)
        assert target, link
        assert f'id="{target[2]}"' in (SITE / lang / target[1]).read_text("utf-8"), link
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    rendered = tmp_path / "notebook.html"
    rendered.write_text(html, encoding="utf-8")
    # Offline: nbconvert's page asks a CDN for require.js and MathJax; nothing else leaves.
    page.route(re.compile(r"^https?://"), lambda route: route.abort())
    page.goto(rendered.as_uri(), wait_until="load")

    text = page.evaluate(MARKDOWN_JS, True)
    assert text.strip(), f"{name}: no Markdown rendered"
    assert [raw for raw in RAW_MYST if raw in text] == [], name
    prose = re.sub(r"\$\$.*?\$\$|\$.*?\$", "", page.evaluate(MARKDOWN_JS, False), flags=re.DOTALL)
    assert re.findall(r"\{[\w:.-]+\}", prose) == [], name  # math (left for MathJax) aside
    images = page.evaluate("[...document.images].map(i => [i.alt, i.complete && i.naturalWidth])")
    assert all(width for _, width in images), images  # every image loads (some pages have none)
    assert page.locator(".jp-MarkdownCell img").count() == figures, name
    # The page's cells, the install cell, and the cells the page leaves out (e.g. glue).
    removed = [c for c in notebook["cells"] if "remove-cell" in c["metadata"].get("tags", [])]
    assert page.locator(".jp-CodeCell").count() == cells + 1 + len(removed), name


@pytest.mark.parametrize("name", NOT_EXECUTED)
def test_page_without_code_offers_no_notebook(desktop_tab, site, name: str) -> None:
    desktop_tab.goto(site.url(name), wait_until="domcontentloaded")
    assert desktop_tab.locator(".notebook-links").count() == 0
    assert desktop_tab.locator("a.notebook-download, a.notebook-colab").count() == 0


# Run in the reader's environment: executes the notebook, then asks which gpukit it imported.
RUN = """
import sys, nbclient, nbformat
notebook = nbformat.read(sys.argv[1], as_version=4)
last = "import gpukit, sys; print(sys.prefix, gpukit.__file__)"
notebook.cells.append(nbformat.v4.new_code_cell(last))
nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
nbformat.write(notebook, sys.argv[2])
"""


def test_downloaded_notebook_runs_in_a_fresh_environment(tmp_path: Path) -> None:
    """The cheapest page, executed offline where gpukit comes from the working tree only.

    The fresh environment borrows PyTorch, Jupyter's kernel, nbclient, pip and setuptools from
    the docs session (a .pth file names its site-packages, whose own gpukit, an editable
    install, stays invisible there) and installs gpukit from the working tree with pip, as the
    notebook's install cell would install it from the pinned commit.
    """
    docs_python = Path(os.environ.get("GPUKIT_DOCS_PYTHON", ROOT / ".nox/docs/bin/python"))
    if not docs_python.is_file():
        pytest.fail(f"no {docs_python}: run `nox -s docs` first (or set GPUKIT_DOCS_PYTHON)")
    site_packages = "import pathlib, torch; print(pathlib.Path(torch.__file__).parents[1])"
    borrowed = subprocess.run(
        [docs_python, "-c", site_packages],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "borrowed.pth").write_text(borrowed + "\n", encoding="utf-8")
    # A copy of the package's files: building it writes build/ next to them.
    package = tmp_path / "gpukit"
    shutil.copytree(ROOT / "src", package / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, package)
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--ignore-installed",
            package,
        ],
        check=True,
        cwd=tmp_path,
    )

    executed = tmp_path / "executed.ipynb"
    env = {**os.environ, "GPUKIT_PROFILE": "quick", "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [python, "-c", RUN, SITE / "en" / "_notebooks" / "use-gpu.ipynb", executed],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cells = nbformat.read(executed, as_version=4).cells
    assert cells[0]["outputs"] == []  # gpukit was there: the install cell installed nothing
    prefix, module = cells[-1]["outputs"][0]["text"].split()
    assert Path(prefix) == venv and Path(module).is_relative_to(purelib), (prefix, module)
