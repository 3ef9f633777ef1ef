"""Stop a build that must run on GPUs before it executes anything, if the GPUs are not there.

Pages declare in their front matter how many GPUs their full run wants (``gpus: 2``). A build
started with ``GPUKIT_REQUIRE_GPUS=1`` (``nox -s docs -- --require-gpus``) compares that with
the machine and fails within seconds, naming the pages: a GPU build is never silently a CPU one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

import gpukit

ENV_VAR = "GPUKIT_REQUIRE_GPUS"


def front_matter(path: Path) -> dict[str, Any]:
    """The YAML front matter of a MyST page (empty when it has none)."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    if end == -1:
        return {}
    return yaml.safe_load(text[4:end]) or {}


def gpus_wanted(srcdir: Path) -> dict[str, int]:
    """Pages (relative paths) and the GPUs their full run wants, for pages that want any."""
    wanted = {}
    for path in sorted(srcdir.rglob("*.md")):
        # Relative: a checkout that happens to sit under a folder named _build is still read.
        if "_build" in path.relative_to(srcdir).parts:
            continue
        gpus = front_matter(path).get("gpus", 0)
        if not isinstance(gpus, int) or gpus < 0:
            raise ConfigError(f"{path}: front matter 'gpus' must be an integer >= 0, got {gpus!r}")
        if gpus:
            wanted[path.relative_to(srcdir).as_posix()] = gpus
    return wanted


def check_gpus(app: Sphinx, config: Config) -> None:
    if os.environ.get(ENV_VAR, "") in ("", "0"):
        return
    found = gpukit.num_gpus()
    short = {page: n for page, n in gpus_wanted(Path(app.srcdir)).items() if n > found}
    if short:
        pages = "\n".join(f"  {page}: wants {n} GPU(s)" for page, n in short.items())
        # SystemExit, not a SphinxError: Sphinx would bury the message under a crash report
        # that asks the reader to file a Sphinx bug.
        raise SystemExit(
            f"GPU guard: this build requires GPUs ({ENV_VAR} is set), but the machine has {found} "
            f"({gpukit.describe_machine()}); these pages want more:\n{pages}\n"
            "Build on a machine with enough GPUs, or drop --require-gpus for a build whose "
            "pages say they ran on fewer devices."
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", check_gpus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
