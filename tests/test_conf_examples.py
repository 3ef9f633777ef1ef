"""The examples in the docstrings of the build's own code (conf/ and conf/_ext) run and hold.

``nox -s doctest`` runs gpukit's; these modules are imported from conf/, where pytest's
``--doctest-modules`` would not find their neighbours (``languages``, ``front_matter``).
"""

import doctest
import importlib

import pytest

MODULES_WITH_EXAMPLES = ["budgets", "front_matter", "image_alt", "learning_path", "provenance"]


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_examples_of(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples left: drop it from the list"
    assert result.failed == 0


def test_budgets_fail_on_a_page_over_its_budget(tmp_path, capsys) -> None:
    budgets = importlib.import_module("budgets")

    def about(times: dict[str, float]) -> str:
        cells = "<td>2026-12-02 16:34</td><td>cache</td><td>{}</td><td>done</td>"
        rows = [f"<tr><td><p>{page}</p></td>{cells.format(s)}</tr>" for page, s in times.items()]
        return "<table><tbody>" + "".join(rows) + "</tbody></table>"

    page = tmp_path / "about.html"
    page.write_text(about({"use-gpu": 59.9, "multiple-gpus-concise": 89.0}), encoding="utf-8")
    assert budgets.main([str(page)]) == 0
    page.write_text(about({"use-gpu": 60.5, "multiple-gpus-concise": 89.0}), encoding="utf-8")
    assert budgets.main([str(page)]) == 1
    assert "1 page(s) over budget: use-gpu" in capsys.readouterr().out
