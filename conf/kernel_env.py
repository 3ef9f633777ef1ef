"""The environment of the kernels that execute the pages, in one place.

Both the site's build (conf.py, whose kernels inherit its environment) and the GPU check
(conf/gpu_check.py, which starts kernels of its own) take it from here, so a page executes
alike in both. Only the standard library is used: the GPU check reads it before installing
anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent
# gpukit.profiles.ENV_VAR, spelled out here so that reading this file needs no torch
# (tests/test_gpu_check.py checks that the two agree).
PROFILE_VAR = "GPUKIT_PROFILE"


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
