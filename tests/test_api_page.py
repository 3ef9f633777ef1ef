"""The API reference pages document every public object of gpukit, in both languages."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from languages import LANGUAGES

import gpukit

DOCS = Path(__file__).resolve().parents[1] / "docs"
MODULES = sorted(
    m.name for m in pkgutil.iter_modules(gpukit.__path__) if not m.name.startswith("_")
)


def documented(lang: str) -> dict[str, list[str]]:
    """Module -> names listed in its autosummary table on docs/<lang>/api.md."""
    text = (DOCS / lang / "api.md").read_text(encoding="utf-8")
    found = {}
    for block in re.findall(r"```\{eval-rst\}\n(.*?)```", text, re.S):
        module = re.search(r"\.\. automodule:: gpukit\.(\w+)", block).group(1)
        table = block.split(".. autosummary::")[1].split(".. automodule::")[0]
        found[module] = re.findall(r"^   (\w+)$", table, re.M)
    return found


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_module_and_public_name_is_on_the_api_page(lang: str) -> None:
    pages = documented(lang)
    assert sorted(pages) == MODULES
    for name in MODULES:
        module = importlib.import_module(f"gpukit.{name}")
        assert pages[name] == list(module.__all__), f"gpukit.{name} on docs/{lang}/api.md"


def test_package_exports_everything_its_modules_make_public() -> None:
    for name in MODULES:
        module = importlib.import_module(f"gpukit.{name}")
        missing = [n for n in module.__all__ if n not in gpukit.__all__]
        assert not missing, f"gpukit.{name} names missing from gpukit.__all__: {missing}"
