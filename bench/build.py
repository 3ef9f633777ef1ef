"""Build cost: build the site step by step on a temporary copy of the tree, and time each step.

The working tree is never touched: ``docs/``, ``conf/``, ``src/`` and ``pyproject.toml`` are
copied into a temporary folder, the copy's ``gpukit`` is imported first (``PYTHONPATH``), and
every step runs ``sphinx-build`` with the arguments of ``nox -s docs`` against the copy, with
its own output folder and an execution cache that starts empty. The copy hashes like the
tree (``conf/_ext/execution_cache.py`` hashes relative paths and bytes), so its pages execute
exactly as they would in ``docs/_build``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.report import median, page_weights

COPIED = ("docs", "conf", "src", "pyproject.toml")
IGNORED = shutil.ignore_patterns(
    "_build", "jupyter_execute", ".ipynb_checkpoints", "__pycache__", "*.egg-info"
)
LANGUAGES = ("en", "zh")  # the order of nox -s docs: English first fills the shared cache

# myst-nb logs one such line for every notebook it executes (not for one taken from the cache);
# the indented copies in the "Last Messages" of a crash report are not counted again.
EXECUTING = re.compile(r"^(?!\s).*Executing notebook using", re.MULTILINE)
# Sphinx names each document it reads ("reading sources... [ 50%] about"), in colour where
# FORCE_COLOR is set (as on some CI runners): then the lines are not even separated by a line
# break, so each colour code becomes a space first.
READING = re.compile(r"reading sources\.\.\.\s+\[\s*\d+%\]\s+(\S+)")
COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROSE_EDIT = "\nThis sentence was added by `nox -s bench`: an edit of the prose only.\n"
CODE_EDIT = "# edited by nox -s bench: a change to the code, not to what it does"


@dataclass
class LangRun:
    """One sphinx-build of one language."""

    lang: str
    seconds: float
    executed: int
    reread: list[str] = field(default_factory=list)
    error: str | None = None  # why the build failed, from its log


def count_executed(log: str) -> int:
    """How many notebooks a build log says were executed (not taken from the cache)."""
    return len(EXECUTING.findall(log))


def documents_read(log: str) -> list[str]:
    """The documents a build log says were read (parsed), in order, without repeats."""
    return list(dict.fromkeys(READING.findall(COLOUR.sub(" ", log))))


# Lines of a failed build's log that say what went wrong (ipykernel's "[IPKernelApp] WARNING |"
# line is not a Sphinx warning).
FAILURE = re.compile(r"WARNING: |\w(?:Error|Exception): |^Exception occurred")


def failure_summary(log: str, most: int = 3) -> str:
    """The first few distinct error lines of a failed build's log, on one line."""
    found = [line.strip()[:200] for line in log.splitlines() if FAILURE.search(line)]
    found.sort(key=lambda line: "WARNING: " not in line)  # Sphinx's own messages first
    return " / ".join(list(dict.fromkeys(found))[:most]) or (
        "sphinx-build failed (no error line in its log)"
    )


def copy_tree(root: Path, dest: Path) -> Path:
    """Copy what a build reads (docs/, conf/, src/, pyproject.toml) from ``root`` to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=IGNORED, symlinks=True)
        else:
            shutil.copy2(source, dest / name)
    return dest


def sphinx_command(tree: Path, lang: str, out: Path, cache: Path) -> list[str]:
    """The command of noxfile's ``sphinx_build(session, lang, "html")``, pointed at ``tree``."""
    return [
        sys.executable, "-m", "sphinx",
        "-b", "html",
        "-t", lang,
        "-c", str(tree / "conf"),
        "-d", str(out / "doctrees" / "html" / lang),
        "-W", "--keep-going", "-n",
        str(tree / "docs" / lang),
        str(out / "html" / lang),
        "-D", f"nb_execution_cache_path={cache}",
    ]  # fmt: skip


def edit_prose(page: Path) -> None:
    """Add a paragraph at the end of ``page``: nothing that a notebook hashes changes."""
    text = page.read_text(encoding="utf-8")
    page.write_text(text.rstrip("\n") + "\n" + PROSE_EDIT, encoding="utf-8")


def edit_first_code_cell(page: Path) -> None:
    """Append a comment line to the first ``{code-cell}`` of ``page``: its notebook changes."""
    lines = page.read_text(encoding="utf-8").split("\n")
    opening = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
    for i, line in enumerate(lines):
        match = opening.match(line)
        if not match:
            continue
        fence = match.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j].rstrip() == fence:
                lines.insert(j, CODE_EDIT)
                page.write_text("\n".join(lines), encoding="utf-8")
                return
        break
    raise ValueError(f"{page} has no complete {{code-cell}}")


class Builder:
    """Runs the build steps on one copy of the tree, with one output folder and one cache."""

    def __init__(self, tree: Path, work: Path, log_dir: Path | None = None) -> None:
        self.tree = tree
        self.out = work / "out"
        self.cache = work / "cache"
        self.log_dir = log_dir or work / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.count = 0
        path = os.pathsep.join(filter(None, [str(tree / "src"), os.environ.get("PYTHONPATH")]))
        self.env = {**os.environ, "PYTHONPATH": path}

    def build(self, lang: str, label: str) -> LangRun:
        """Build ``lang`` once; a failed build has an ``error``."""
        self.count += 1
        log_path = self.log_dir / f"{self.count:02d}-{label}-{lang}.log"
        command = sphinx_command(self.tree, lang, self.out, self.cache)
        with log_path.open("w", encoding="utf-8") as log_file:  # readable while it runs
            start = time.perf_counter()
            done = subprocess.run(
                command, stdout=log_file, stderr=subprocess.STDOUT, env=self.env, check=False
            )
            seconds = time.perf_counter() - start
        log = log_path.read_text(encoding="utf-8", errors="replace")
        error = None
        if done.returncode != 0:  # paths in the temporary copy, shown relative to it
            summary = failure_summary(log.replace(f"{self.tree}{os.sep}", ""))
            error = f"{summary} (log: {log_path.name})"
        return LangRun(lang, seconds, count_executed(log), documents_read(log), error)

    def step(self, label: str, langs: tuple[str, ...] = LANGUAGES) -> dict[str, Any]:
        """Build each language once (up to the first failure): the step's wall time, notebooks
        executed, documents read, and ``error`` if a build failed."""
        runs = []
        for lang in langs:
            runs.append(self.build(lang, label))
            if runs[-1].error:
                break
        errors = [f"{r.lang}: {r.error}" for r in runs if r.error]
        return {
            "seconds": sum(r.seconds for r in runs),
            "executed": sum(r.executed for r in runs),
            "langs": {r.lang: asdict(r) for r in runs},
            **({"error": errors[0]} if errors else {}),
        }

    def execution_seconds(self, lang: str = "en") -> dict[str, float]:
        """Execution time of every page of ``lang`` in the cache, by page name."""
        from jupyter_cache import get_cache

        out = {}
        for record in get_cache(str(self.cache)).list_cache_records():
            path = Path(record.uri)
            if path.parent.name == lang:
                out[path.stem] = float(record.data.get("execution_seconds") or 0.0)
        return out

    def page(self, lang: str, name: str) -> Path:
        return self.tree / "docs" / lang / f"{name}.md"


def site_metrics(html: Path) -> dict[str, Any]:
    """Page weight of one language's built site, and its largest SVG image."""
    shared = {"_static", "_sources", "_images", "_notebooks"}
    sizes = {
        path.relative_to(html).as_posix(): path.stat().st_size
        for path in html.rglob("*.html")
        if not shared & set(path.relative_to(html).parts)
    }
    metrics = page_weights(sizes)
    svgs = sorted((html / "_images").glob("*.svg"), key=lambda p: p.stat().st_size)
    metrics["largest_svg"] = (
        {"name": svgs[-1].name, "bytes": svgs[-1].stat().st_size} if svgs else None
    )
    return metrics


def run_build_steps(
    root: Path, work: Path, *, warm_repeats: int = 1, log_dir: Path | None = None, log=print
) -> dict[str, Any]:
    """All the build steps on a copy of ``root`` made in ``work``: the record's ``build`` part.

    The steps stop at the first failed build (each step needs the ones before it); the record
    then has ``failed`` (the step) and that step's ``error``.
    """
    tree = copy_tree(root, work / "tree")
    builder = Builder(tree, work, log_dir)
    record: dict[str, Any] = {"steps": {}}
    steps = record["steps"]

    def run(key: str, title: str, langs: tuple[str, ...] = LANGUAGES) -> bool:
        log(f"build: {title}")
        steps[key] = builder.step(key, langs)
        log(f"  {steps[key]['seconds']:.1f} s, {steps[key]['executed']} notebook(s) executed")
        if "error" in steps[key]:
            log(f"  FAILED: {steps[key]['error']}")
            record["failed"] = key
            return False
        return True

    if not run("cold-en", "cold, en (executes every page)", ("en",)):
        return record
    ok = run("cold-zh", "cold, zh", ("zh",))
    record["site"] = {
        lang: site_metrics(builder.out / "html" / lang)
        for lang in LANGUAGES
        if (builder.out / "html" / lang / "index.html").is_file()
    }
    record["execution_seconds"] = builder.execution_seconds("en")
    if not ok:
        return record

    warm = []
    for i in range(warm_repeats):
        if not run("warm", f"no change, en + zh ({i + 1}/{warm_repeats})"):
            return record
        warm.append(steps.pop("warm"))
    steps["warm"] = {
        "seconds": median([w["seconds"] for w in warm]),
        "executed": max(w["executed"] for w in warm),
        "repeats": warm_repeats,
        "runs": warm,
    }

    # The edits go to the page that executes fastest: the code edit executes it again.
    candidates = {
        page: seconds
        for page, seconds in record["execution_seconds"].items()
        if builder.page("zh", page).is_file()
    }
    if not candidates:
        record["failed"] = "prose-edit"
        steps["prose-edit"] = {
            "seconds": 0.0,
            "executed": 0,
            "error": "the cold build executed no page that is in both languages",
        }
        return record
    page = record["edited_page"] = min(candidates, key=candidates.get)

    for lang in LANGUAGES:
        edit_prose(builder.page(lang, page))
    if not run("prose-edit", f"prose edit of {page}, en + zh"):
        return record
    for lang in LANGUAGES:
        edit_first_code_cell(builder.page(lang, page))
    run("code-edit", f"code edit of {page}, en + zh")
    return record
