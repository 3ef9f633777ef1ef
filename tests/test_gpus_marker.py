"""The ``gpus(n)`` marker (tests/conftest.py): GPU tests skip on a laptop, fail on the GPU runner.

CUDA-only tests can run nowhere but on the GPU runner, which sets ``GPUKIT_REQUIRE_GPUS=1``;
there a missing GPU must fail the run instead of letting it pass with those tests skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
NEEDS_MANY_GPUS = """
import pytest

@pytest.mark.gpus(10_000)
def test_needs_more_gpus_than_any_machine_has():
    pass
"""


def run_pytest(folder: Path, require_gpus: str | None) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text(CONFTEST.read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "test_many_gpus.py").write_text(NEEDS_MANY_GPUS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "GPUKIT_REQUIRE_GPUS"}
    # The copy imports gpukit_site.kernel_env, where the variable and the default are named, from
    # src/ (as the GPU check's bare Python does).
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CONFTEST.parents[1] / "src"), env.get("PYTHONPATH", "")]
    )
    if require_gpus is not None:
        env["GPUKIT_REQUIRE_GPUS"] = require_gpus
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("require_gpus", [None, "0"])
def test_a_gpu_test_skips_on_a_machine_with_too_few_gpus(tmp_path, require_gpus):
    done = run_pytest(tmp_path, require_gpus)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "needs 10000 CUDA GPU(s), this machine has" in done.stdout


def test_a_gpu_test_fails_where_gpus_are_required(tmp_path):
    done = run_pytest(tmp_path, "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout
    assert "GPUKIT_REQUIRE_GPUS is set: this run must test the GPU code" in done.stdout
