"""The API reference pages document every public object of gpukit, in both languages."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import gpukit
from gpukit_site.languages import LANGUAGES

DOCS = Path(__file__).resolve().parents[1] / "docs"
MODULES = sorted(
    m.name for m in pkgutil.iter_modules(gpukit.__path__) if not m.name.startswith("_")
)


def documented(lang: str) -> list[str]:
    """The modules that the pages of docs/<lang>/api.md's toctree give a section
    (``{gpukit-module}``), in order."""
    index = (DOCS / lang / "api.md").read_text(encoding="utf-8")
    toctree = re.search(r"^```\{toctree\}\n(.*?)^```$", index, re.M | re.S)[1]
    pages = [line for line in toctree.splitlines() if line and not line.startswith(":")]
    text = "".join((DOCS / lang / f"{page}.md").read_text(encoding="utf-8") for page in pages)
    return re.findall(r"^```\{gpukit-module\} gpukit\.(\w+)$", text, re.M)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_module_has_a_section_on_the_api_pages(lang: str) -> None:
    # Each section lists its module's __all__ (gpukit_site.ext.api_reference): no name is written
    # on the page by hand.
    sections = documented(lang)
    assert sorted(sections) == MODULES, f"docs/{lang}/api/"
    assert len(sections) == len(set(sections)), f"a module has two sections in docs/{lang}/api/"


def test_package_exports_everything_its_modules_make_public() -> None:
    # All but the modules that import Triton, which `import gpukit` must not import
    assert set(gpukit.IMPORTED_BY_NAME) <= set(MODULES)
    for name in sorted(set(MODULES) - set(gpukit.IMPORTED_BY_NAME)):
        module = importlib.import_module(f"gpukit.{name}")
        missing = [n for n in module.__all__ if n not in gpukit.__all__]
        assert not missing, f"gpukit.{name} names missing from gpukit.__all__: {missing}"
