import os

import pytest

# Set on the GPU runner (.github/workflows/gpu-site.yml), as for `nox -s docs -- --require-gpus`.
from gpukit_site.kernel_env import DEFAULT_TEST_GPUS
from gpukit_site.kernel_env import REQUIRE_GPUS_VAR as REQUIRE_GPUS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"gpus(n): needs n CUDA GPUs; skipped on a machine with fewer, failed there when "
        f"{REQUIRE_GPUS}=1 (the GPU runner, the only place where these tests can run)",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("gpus")
    if marker is None:
        return
    wanted = marker.args[0] if marker.args else DEFAULT_TEST_GPUS
    import torch  # here, not at the top: the browser tests' environment has no torch

    found = torch.cuda.device_count()
    if found >= wanted:
        return
    reason = f"needs {wanted} CUDA GPU(s), this machine has {found}"
    if os.environ.get(REQUIRE_GPUS, "") not in ("", "0"):
        # A GPU run that skipped its GPU tests would pass while testing nothing of the GPU.
        pytest.fail(f"{reason}, and {REQUIRE_GPUS} is set: this run must test the GPU code")
    pytest.skip(reason)
