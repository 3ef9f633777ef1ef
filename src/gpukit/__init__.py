"""gpukit: the helpers shared by the pages of "GPU 计算 · Computing on GPUs".

Names follow D2L's PyTorch helpers where D2L has the same idea, so ``import gpukit as d2l``
runs D2L code for the GPU chapter.
"""

from gpukit.devices import (
    cpu,
    device_report,
    gpu,
    hardware_signature,
    num_gpus,
    try_all_gpus,
    try_gpu,
)
from gpukit.profiles import Profile, current_profile

__all__ = [
    "Profile",
    "cpu",
    "current_profile",
    "device_report",
    "gpu",
    "hardware_signature",
    "num_gpus",
    "try_all_gpus",
    "try_gpu",
]
