"""The environment of the kernels that execute the pages, in one place.

Both the site's build (conf.py, whose kernels inherit its environment) and the GPU check
(gpukit_site.gpu_check, which starts kernels of its own) take it from here, so a page executes
alike in both. Only the standard library is used: the GPU check reads it before installing
anything. The names of the project's environment variables come from gpukit's ``_env``, read
by its path without importing gpukit (and so torch): nox, the tests' conftest and the GPU check
take them from here.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

# The repository's conf/ (the kernels' IPython profile), and gpukit beside this package in src/.
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
_spec = importlib.util.spec_from_file_location(
    "_gpukit_env", Path(__file__).resolve().parents[1] / "gpukit/_env.py"
)
_gpukit_env = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gpukit_env)
PROFILE_VAR: str = _gpukit_env.PROFILE_VAR
DATA_VAR: str = _gpukit_env.DATA_VAR
REQUIRE_GPUS_VAR: str = _gpukit_env.REQUIRE_GPUS_VAR
DEFAULT_TEST_GPUS: int = _gpukit_env.DEFAULT_TEST_GPUS
FASHION_MNIST_FILES: dict[str, tuple[str, str]] = _gpukit_env.FASHION_MNIST_FILES
FASHION_MNIST_SIZES: dict[str, int] = _gpukit_env.FASHION_MNIST_SIZES


def kernel_environment(profile: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables to set for a kernel that executes pages with ``profile`` (quick, full).

    ``environ`` is the environment they will be added to: a setting the user made there is kept
    where the build allows one (OMP_WAIT_POLICY).
    """
    return {
        # The kernel reads the execution profile from here (gpukit.current_profile).
        PROFILE_VAR: profile,
        # Its IPython profile shows an error as its type and message, a warning as its category
        # and message: no long traceback and no build-machine path reaches a page.
        "IPYTHONDIR": str(CONF_DIR / "ipython"),
        # torch.profiler (Kineto) logs "profiler_start" lines with a date and pids to stderr,
        # which a page would show as an output that changes with every build; level 6 keeps
        # its errors only.
        "KINETO_LOG_LEVEL": "6",
        # Idle OpenMP threads sleep instead of spinning: spinning threads made small training
        # steps 5-20x slower on a busy 2-core machine (measured).
        "OMP_WAIT_POLICY": environ.get("OMP_WAIT_POLICY", "PASSIVE"),
    }
