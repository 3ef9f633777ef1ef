"""The examples in the docstrings of the site's own code (src/gpukit_site) run and hold.

``nox -s doctest`` runs gpukit's; these are run here, with the tests of the site's machinery.
"""

import doctest
import importlib

import pytest

MODULES_WITH_EXAMPLES = [
    "gpukit_site.ext.front_matter",
    "gpukit_site.ext.image_alt",
    "gpukit_site.ext.learning_path",
    "gpukit_site.recordings",
]


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_examples_of(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples left: drop it from the list"
    assert result.failed == 0


def test_budgets_fail_on_a_page_over_its_budget(tmp_path, capsys) -> None:
    """Times as myst-nb records them: with each notebook in jupyter-cache."""
    budgets = importlib.import_module("gpukit_site.budgets")
    nbformat = pytest.importorskip("nbformat")
    get_cache = pytest.importorskip("jupyter_cache").get_cache

    def cache(times: dict[str, float]) -> str:
        folder = tmp_path / f"cache-{len(list(tmp_path.iterdir()))}"
        for page, seconds in times.items():
            notebook = tmp_path / f"{page}.ipynb"
            cell = nbformat.v4.new_code_cell(f"print({page!r})", execution_count=1)
            nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)
            get_cache(folder).cache_notebook_file(
                notebook, uri=f"/docs/en/{page}.md", data={"execution_seconds": seconds}
            )
        return str(folder)

    assert budgets.main([cache({"use-gpu": 59.9, "multiple-gpus-concise": 89.0})]) == 0
    assert budgets.main([cache({"use-gpu": 60.5, "multiple-gpus-concise": 89.0})]) == 1
    assert "1 page(s) over budget: use-gpu" in capsys.readouterr().out
