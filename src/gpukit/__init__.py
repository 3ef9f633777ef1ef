"""gpukit: the helpers shared by the pages of "GPU 计算 · Computing on GPUs".

Names follow D2L's PyTorch helpers where D2L has the same idea, so ``import gpukit as d2l``
runs D2L code for the GPU chapter.
"""

from gpukit.data import (
    DataNotFoundError,
    IDXFormatError,
    find_fashion_mnist,
    get_fashion_mnist_labels,
    load_data_fashion_mnist,
    read_idx,
)
from gpukit.devices import (
    cpu,
    describe_devices,
    describe_machine,
    device_report,
    gpu,
    hardware_signature,
    num_gpus,
    replicas,
    try_all_gpus,
    try_gpu,
)
from gpukit.measure import (
    PEAK_TFLOPS,
    Measurement,
    copy_bandwidth,
    copy_bandwidths,
    describe_device,
    launch_latency,
    matmul_dtypes,
    matmul_throughput,
    peak_tflops,
    time_op,
)
from gpukit.metrics import Accumulator, accuracy, evaluate_accuracy_gpu
from gpukit.plotting import Animator, set_axes, set_figsize, use_svg_display
from gpukit.profiles import Profile, current_profile
from gpukit.timing import Benchmark, Timer, format_seconds

__all__ = [
    "PEAK_TFLOPS",
    "Accumulator",
    "Animator",
    "Benchmark",
    "DataNotFoundError",
    "IDXFormatError",
    "Measurement",
    "Profile",
    "Timer",
    "accuracy",
    "copy_bandwidth",
    "copy_bandwidths",
    "cpu",
    "current_profile",
    "describe_device",
    "describe_devices",
    "describe_machine",
    "device_report",
    "evaluate_accuracy_gpu",
    "find_fashion_mnist",
    "format_seconds",
    "get_fashion_mnist_labels",
    "gpu",
    "hardware_signature",
    "launch_latency",
    "load_data_fashion_mnist",
    "matmul_dtypes",
    "matmul_throughput",
    "num_gpus",
    "peak_tflops",
    "read_idx",
    "replicas",
    "set_axes",
    "set_figsize",
    "time_op",
    "try_all_gpus",
    "try_gpu",
    "use_svg_display",
]
