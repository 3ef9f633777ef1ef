"""Every executed page offers its notebook, with outputs, and a link that opens it in Colab."""

from __future__ import annotations

import json
import re

import pytest
from browsing import ALL_PAGES, SITE

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


@pytest.mark.parametrize("name", EXECUTED)
def test_executed_page_offers_its_notebook_and_colab(desktop_tab, site, name: str) -> None:
    page = desktop_tab
    lang, page_name = name.split("/", 1)
    page.goto(site.url(name), wait_until="domcontentloaded")
    download, colab = page.locator("a.notebook-download"), page.locator("a.notebook-colab")
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
    first_code = notebook["cells"][0]
    assert "gpukit" in "".join(first_code["source"]) and repo in "".join(first_code["source"])


@pytest.mark.parametrize("name", NOT_EXECUTED)
def test_page_without_code_offers_no_notebook(desktop_tab, site, name: str) -> None:
    desktop_tab.goto(site.url(name), wait_until="domcontentloaded")
    assert desktop_tab.locator(".notebook-links").count() == 0
    assert desktop_tab.locator("a.notebook-download, a.notebook-colab").count() == 0
