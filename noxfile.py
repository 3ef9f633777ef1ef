"""Every task of the project: ``nox`` runs the checks, ``nox -s docs`` builds the site."""

import argparse
import importlib.util
import os
import sys
from pathlib import Path

import nox

SRC = Path(__file__).parent / "src"


def site_module(name: str):
    """A standard-library-only module of the site's package (src/gpukit_site), read by its path:
    nox's own Python has not installed the project (the sessions do, into their environments)."""
    spec = importlib.util.spec_from_file_location(
        f"gpukit_site.{name}", SRC / "gpukit_site" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernel_env, languages = site_module("kernel_env"), site_module("languages")
PROFILE_VAR, REQUIRE_GPUS_VAR = kernel_env.PROFILE_VAR, kernel_env.REQUIRE_GPUS_VAR
LANGUAGES, sphinx_build_args = languages.LANGUAGES, languages.sphinx_build_args

nox.options.sessions = ["lint", "tests", "docs", "browser", "doctest"]
nox.options.reuse_venv = "yes"

DOCS = Path(__file__).parent / "docs"
BUILD = DOCS / "_build"


def install(session: nox.Session, *groups: str, gpukit: bool = True) -> None:
    """Install dependency groups of pyproject.toml, and the project (gpukit and the site's
    package, gpukit_site), editable so that pages and tools see the working tree
    (``gpukit=False``: without the project's dependencies, and so no torch)."""
    if not gpukit:  # --no-deps would apply to the groups too: a command of its own
        session.install("--no-deps", "-e", ".")
    session.install(*(["-e", "."] if gpukit else []), *(f"--group={group}" for group in groups))


def split_profile(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """Take ``--profile quick|full`` and ``--require-gpus`` out of the session arguments: the
    environment that carries them to conf.py and the kernel, and the other arguments."""
    parser = argparse.ArgumentParser(prog="nox -s docs --", add_help=False, allow_abbrev=False)
    parser.add_argument("--profile", choices=("quick", "full"))
    parser.add_argument("--require-gpus", action="store_true")
    known, rest = parser.parse_known_args(args)
    env = {PROFILE_VAR: known.profile} if known.profile else {}
    return env | ({REQUIRE_GPUS_VAR: "1"} if known.require_gpus else {}), rest


@nox.session
def docs(session: nox.Session) -> None:
    """Build both languages into docs/_build/html (extra arguments go to sphinx-build).

    ``--record``: then write this machine's recording, docs/_build/recording/recording.json."""
    install(session, "docs")
    record = "--record" in session.posargs
    env, args = split_profile([a for a in session.posargs if a != "--record"])
    for lang in LANGUAGES:
        session.run("sphinx-build", *sphinx_build_args(DOCS, BUILD, lang), *args, env=env)
    if record:
        session.run("python", "-m", "gpukit_site.recordings", "write", BUILD / "recording", env=env)
    # html/jupyter_execute (myst-nb's notebooks and figures) stays: deleting it would make every
    # later build read those pages again. The GPU workflow leaves it out of the deployed site.


@nox.session
def browser(session: nox.Session) -> None:
    """The built site in a real browser (Chromium, headless): run ``nox -s docs`` first.

    Serves docs/_build/html (or $GPUKIT_SITE) on 127.0.0.1; screenshots land in
    docs/_build/screenshots. Without torch: only the test and browser groups are installed."""
    site = Path(os.environ.get("GPUKIT_SITE", BUILD / "html"))
    if not all((site / lang / "index.html").is_file() for lang in LANGUAGES):
        session.error(f"no built site in {site}: run `nox -s docs` first")
    install(session, "test", "browser", gpukit=False)
    # ``nox -s browser -- tests/browser/test_search.py`` runs just that file.
    session.run("pytest", "-p", "no:cacheprovider", *(session.posargs or ["tests/browser"]))


@nox.session
def lighthouse(session: nox.Session) -> None:
    """Lighthouse's scores of every page of the built site against the goal
    (gpukit_site.lighthouse).

    Performance depends on load: run it on a quiet machine. ``-- en/attention`` for one page."""
    install(session, "lighthouse", gpukit=False)
    session.run("python", "-m", "gpukit_site.lighthouse", *session.posargs)


@nox.session(name="docs-live")
def docs_live(session: nox.Session) -> None:
    """Preview one language while writing: ``nox -s docs-live [-- zh]``."""
    install(session, "docs", "live")
    env, args = split_profile(session.posargs)
    lang = args.pop(0) if args and args[0] in LANGUAGES else "en"
    watch = ("-c", "conf", "--watch", "conf", "--watch", "src")
    session.run(
        "sphinx-autobuild", "-t", lang, *watch, DOCS / lang, BUILD / "live" / lang, *args, env=env
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Unit tests of gpukit and build tests on tiny fixture sites."""
    install(session, "docs", "test")
    # tests/browser needs a built site and a browser: ``nox -s browser``.
    session.run("pytest", "--ignore=tests/browser", *session.posargs)


@nox.session(name="gpu-check")
def gpu_check(session: nox.Session) -> None:
    """What works on this GPU, per page and per CUDA test, in minutes: gpukit_site.gpu_check.

    ``nox -s gpu-check`` runs the check (report in .gpu-check/report); ``nox -s gpu-check --
    prepare`` writes the folder that lets ``PYTHONPATH=src python3 -m gpukit_site.gpu_check run``
    work offline."""
    install(session, "gpu-check", "kernels")
    session.run("python", "-m", "gpukit_site.gpu_check", *(session.posargs or ["run"]))


@nox.session(venv_backend="none")
def record(session: nox.Session) -> None:
    """Import a recorded run: ``nox -s record -- PATH`` (recording.json, the GPU check's --out
    folder or the GPU workflow's artifact, .zip or unpacked) into docs/recordings/<machine>/,
    replacing that machine's previous one. Standard library only: nothing is installed."""
    if len(session.posargs) != 1:
        session.error("usage: nox -s record -- PATH")
    # Not installed in nox's own Python: found in src/.
    env = {"PYTHONPATH": str(SRC)}
    session.run(sys.executable, "-m", "gpukit_site.recordings", "import", *session.posargs, env=env)


@nox.session
def doctest(session: nox.Session) -> None:
    """Run the examples: gpukit's docstrings and the doctest blocks of both languages."""
    install(session, "docs", "test")
    session.run("pytest", "--doctest-modules", "src/gpukit", "-p", "no:cacheprovider")
    for lang in LANGUAGES:
        # The doctests live in docstrings and prose: executing the notebooks adds nothing here,
        # and unexecuted notebooks neither name their lexer nor hold the values prose glues.
        off = ("-D", "nb_execution_mode=off", "-D", "suppress_warnings=myst-nb.lexer,mystnb.glue")
        session.run("sphinx-build", *sphinx_build_args(DOCS, BUILD, lang, "doctest"), *off)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and formatting); the Chinese pages' typography and terms: gpukit_site.zh_style."""
    install(session, "lint", gpukit=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("python", "-m", "gpukit_site.zh_style")


@nox.session
def workflows(session: nox.Session) -> None:
    """Lint .github/workflows offline (actionlint, zizmor, check-jsonschema), without torch.

    The same test runs in ``nox -s tests``; this session skips installing gpukit."""
    session.install("pyyaml")
    install(session, "test", gpukit=False)
    session.run("pytest", "tests/test_workflows.py", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def parity(session: nox.Session) -> None:
    """en and zh pages match (code cells, labels, references) and no translation is stale.

    ``nox -s parity -- --refresh zh/<page>.md`` records that a translation is up to date.
    Pages are read by myst-nb, without torch: only the docs group is installed."""
    install(session, "docs", gpukit=False)
    session.run("python", "-m", "gpukit_site.parity", *session.posargs)
