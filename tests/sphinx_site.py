"""Build tiny fixture sites with the project's own Sphinx configuration (conf/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_SITE = Path(__file__).parent / "fixtures" / "site"


@dataclass
class Build:
    returncode: int
    log: str
    html: Path

    def page(self, name: str) -> str:
        return (self.html / f"{name}.html").read_text(encoding="utf-8")


def copy_fixture_site(dest: Path) -> Path:
    """A private copy of the fixture site that a test may edit."""
    shutil.copytree(FIXTURE_SITE, dest)
    return dest


def sphinx_build(site: Path, lang: str, out: Path, *extra: str, timeout: float = 180) -> Build:
    """Build ``site/<lang>`` the way ``nox -s docs`` does, with an execution cache under ``out``."""
    html = out / "html" / lang
    done = subprocess.run(
        [
            sys.executable, "-m", "sphinx",
            "-b", "html", "-t", lang, "-c", str(ROOT / "conf"),
            "-d", str(out / "doctrees" / lang),
            "-W", "--keep-going", "-n",
            "-D", f"nb_execution_cache_path={out / 'cache'}",
            str(site / lang), str(html), *extra,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )  # fmt: skip
    return Build(done.returncode, done.stdout + done.stderr, html)
