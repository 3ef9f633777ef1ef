"""Build tiny fixture sites with the project's own Sphinx configuration (conf/)."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpukit_site.languages import sphinx_build_args

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_SITE = FIXTURES / "site"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colours: Sphinx colours its log when CI=true
# myst-nb logs "<path>/<page>.md: Executing notebook using local CWD [mystnb]" for every page it
# executes, and nothing like it for a page taken from the execution cache.
EXECUTING = re.compile(r"([\w.-]+)\.md: Executing notebook", re.MULTILINE)
# Sphinx names each document it reads ("reading sources... [ 50%] about"); with colours on
# (FORCE_COLOR, some CI runners) the lines are not even separated by a line break.
READING = re.compile(r"reading sources\.\.\.\s+\[\s*\d+%\]\s+(\S+)")


@dataclass
class Build:
    returncode: int
    log: str
    html: Path

    def page(self, name: str) -> str:
        return (self.html / f"{name}.html").read_text(encoding="utf-8")

    def search_index(self) -> dict:
        """The search index Sphinx wrote (``searchindex.js``: JSON inside a function call)."""
        index = (self.html / "searchindex.js").read_text(encoding="utf-8")
        return json.loads(index[index.index("(") + 1 : index.rindex(")")])

    def reports_failure_of(self, page: str) -> bool:
        """Whether the log says that executing ``page`` (e.g. ``"page.md"``) failed.

        Not just whether it names the page: myst-nb names every page it executes.
        """
        return any(
            page in line and ("Executing notebook failed" in line or "ExecutionError" in line)
            for line in ANSI.sub("", self.log).splitlines()
        )


def executed_pages(log: str) -> list[str]:
    """The pages a build log says were executed (not taken from the execution cache)."""
    return EXECUTING.findall(ANSI.sub(" ", log))


def documents_read(log: str) -> list[str]:
    """The documents a build log says were read (parsed), in order, without repeats."""
    return list(dict.fromkeys(READING.findall(ANSI.sub(" ", log))))


def machine_paths() -> list[str]:
    """Substrings that would show where the build machine keeps its files."""
    paths = {
        str(Path.home()),
        sys.prefix,
        str(ROOT),
        sysconfig.get_paths()["stdlib"],
        "site-packages",
        "dist-packages",
        "/work/",
        "/root/",
        ".nox/",
        "ipykernel_",  # the kernel's file for a cell's code: /tmp/ipykernel_<pid>/<n>.py
    }
    return sorted(p for p in paths if p not in ("", "/"))


def copy_fixture_site(dest: Path, name: str = "site") -> Path:
    """A private copy of the fixture site ``tests/fixtures/<name>`` that a test may edit."""
    shutil.copytree(FIXTURES / name, dest)
    return dest


def sphinx_command(site: Path, lang: str, out: Path, *extra: str) -> list[str]:
    """The sphinx-build command line of ``nox -s docs``, with an execution cache under ``out``."""
    return [
        sys.executable,
        "-m",
        "sphinx",
        *sphinx_build_args(site, out, lang),
        "-D",
        f"nb_execution_cache_path={out / 'cache'}",
        *extra,
    ]


def sphinx_build(
    site: Path,
    lang: str,
    out: Path,
    *extra: str,
    timeout: float = 180,
    env: dict[str, str] | None = None,
) -> Build:
    """Build ``site/<lang>`` the way ``nox -s docs`` does, with an execution cache under ``out``.

    ``env`` adds variables to the environment of the build (and so of the kernel).
    """
    done = subprocess.run(
        sphinx_command(site, lang, out, *extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return Build(done.returncode, done.stdout + done.stderr, out / "html" / lang)


class _Tags:
    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def has(self, name: str) -> bool:
        return name in self.names


def load_conf(monkeypatch: pytest.MonkeyPatch, profile: str) -> dict:
    """Run conf/conf.py as Sphinx does; environment changes it makes are undone afterwards."""
    monkeypatch.setenv("GPUKIT_PROFILE", profile)
    monkeypatch.delenv("IPYTHONDIR", raising=False)
    return runpy.run_path(str(ROOT / "conf" / "conf.py"), init_globals={"tags": _Tags("en")})
