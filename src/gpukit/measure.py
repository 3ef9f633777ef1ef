"""Measuring the hardware from PyTorch: copy bandwidth, launch latency, matmul throughput.

The hardware section of the site, and the benchmarks, ask three questions of a device:

* how fast can bytes move? :func:`copy_bandwidth` and :func:`copy_bandwidths` copy a buffer
  between host and GPU (from pageable or pinned memory) or within one memory, in GB/s;
* what does one tiny operation cost? :func:`launch_latency` repeats an operation on a single
  number, so the time is almost all overhead (a kernel launch on a GPU, dispatch on a CPU);
* how fast can it compute? :func:`matmul_throughput` multiplies square matrices, in TFLOP/s on
  a GPU (GFLOP/s on a CPU), next to the datasheet peak from :data:`PEAK_TFLOPS` where known.

Every result is a :class:`Measurement` that names the device it ran on. All of them are timed
by :func:`time_op`: GPU times are CUDA event times taken by :class:`gpukit.timing.Timer`, so
queued work is always included; CPU times use the wall clock; and the rate comes from the
median of several rounds, so that another program briefly taking the CPU does not distort it.
On a CPU-only machine every function still runs and says what it measured instead (a host
memory copy, per-operation dispatch overhead, GFLOP/s without a peak).
"""

from __future__ import annotations

import os
import platform
import re
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from gpukit._checks import check_choice, check_int
from gpukit.devices import existing_device, try_gpu
from gpukit.timing import Timer, format_seconds

__all__ = [
    "PEAK_TFLOPS",
    "Measurement",
    "copy_bandwidth",
    "copy_bandwidths",
    "describe_device",
    "launch_latency",
    "matmul_dtypes",
    "matmul_throughput",
    "peak_tflops",
    "time_op",
]

#: Dense peak throughput in TFLOP/s by GPU model and number format, from the vendor's
#: datasheets (NVIDIA H200, H100, A100 and V100 datasheets; Ada Lovelace architecture
#: whitepaper for the RTX 4090). "Dense" means without 2:4 structured sparsity: for Hopper and
#: Ampere the datasheets' headline tensor-core numbers assume sparsity and are twice these.
#: ``tf32``, ``bf16`` and ``fp16`` are tensor-core rates; a missing entry means the GPU has no
#: tensor-core path for that format. All figures assume the GPU runs at its boost clock.
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "H200 SXM": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
    "H100 SXM": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
    "H100 PCIe": {"fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
    "V100 SXM2": {"fp32": 15.7, "fp16": 125.0},
    "V100 PCIe": {"fp32": 14.0, "fp16": 112.0},
    "RTX 4090": {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
}

# How the names that torch.cuda.get_device_name() returns map onto PEAK_TFLOPS, first match
# first. Variants not listed (H200 NVL, H100 NVL, RTX 4090 D, ...) have other peaks: no match.
# Neither does a MIG slice (a fraction of the GPU) or a laptop GPU (lower clocks and power).
_PART_OF_A_GPU = r"\b(MIG|Laptop)\b"
_MODEL_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bH200\b(?!.*\bNVL\b)", "H200 SXM"),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe"),
    (r"\bH100\b(?!.*\b(NVL|PCIe)\b)", "H100 SXM"),
    (r"\bA100\b", "A100"),
    (r"\bV100-?SXM2\b", "V100 SXM2"),
    (r"\bV100-?PCIE\b", "V100 PCIe"),
    (r"\bRTX 4090\b(?! D\b)", "RTX 4090"),
)

# Matmul number formats: the tensor dtype, and how cuBLAS may treat float32 inputs.
_DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
_DIRECTIONS = ("host_to_device", "device_to_host", "within_device")


@dataclass(frozen=True)
class Measurement:
    """One measured figure and the device it was measured on.

    Attributes:
        device: the device in a few words, e.g. ``'cuda:0 (NVIDIA H200)'`` or
            ``'cpu (2 threads)'``.
        what: what was measured, e.g. ``'host->device copy, pinned memory, 64 MiB'``.
        count: how many operations were timed (in up to five rounds, after a warm-up).
        seconds: the total time of those ``count`` operations.
        value: the figure derived from the *median* time per operation of the rounds, in
            ``unit``; a round slowed down by another program does not move it.
        unit: ``'GB/s'`` (10**9 bytes copied per second), ``'TFLOP/s'``, ``'GFLOP/s'`` or
            ``'µs per op'``.
        peak: the device's datasheet peak in ``unit``, or ``None`` where unknown.

    Example:
        >>> m = Measurement("cpu (2 threads)", "fp32 matmul 1024x1024", 10, 0.08, 268.4,
        ...                 "GFLOP/s")
        >>> print(m)
        cpu (2 threads): fp32 matmul 1024x1024
          10 in 0.0800 sec -> 268.4 GFLOP/s
        >>> print(Measurement("cuda:0", "bf16 matmul", 20, 0.03, 733.0, "TFLOP/s", peak=989.5))
        cuda:0: bf16 matmul
          20 in 0.0300 sec -> 733.0 TFLOP/s (74% of 989.5 peak)
    """

    device: str
    what: str
    count: int
    seconds: float
    value: float
    unit: str
    peak: float | None = None

    @property
    def fraction_of_peak(self) -> float | None:
        """``value / peak``, or ``None`` without a known peak.

        Example:
            >>> Measurement("gpu", "fp32 matmul", 1, 1.0, 33.5, "TFLOP/s", 67.0).fraction_of_peak
            0.5
        """
        return None if not self.peak else self.value / self.peak

    def __str__(self) -> str:
        text = (
            f"{self.device}: {self.what}\n"
            f"  {self.count} in {format_seconds(self.seconds)} -> {self.value:.1f} {self.unit}"
        )
        fraction = self.fraction_of_peak
        if fraction is not None:
            text += f" ({100 * fraction:.0f}% of {self.peak:g} peak)"
        return text


# -- Argument checks ------------------------------------------------------------------------
def _check_device(device: object) -> torch.device:
    """``None`` means :func:`gpukit.devices.try_gpu` (GPU 0, else the CPU)."""
    return try_gpu() if device is None else existing_device(device)


def _check_dtype(dtype: object, device: torch.device) -> str:
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a str such as 'fp32', got {type(dtype).__name__}")
    check_choice(dtype, "dtype", _DTYPES)
    if dtype == "tf32" and device.type != "cuda":
        raise ValueError(
            "dtype 'tf32' is a tensor-core format of NVIDIA GPUs: it needs a CUDA device"
        )
    return dtype


# -- Naming devices -------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    threads = torch.get_num_threads()
    return f"cpu ({threads} thread{'s' if threads != 1 else ''})"


def describe_device(device: str | torch.device | None = None) -> str:
    """Say which device the measurements run on, in one line.

    Args:
        device: a CPU or CUDA device; ``None`` (the default) means :func:`gpukit.devices.try_gpu`.

    Returns:
        For a GPU its name, memory, compute capability and number of streaming
        multiprocessors (SMs); for the CPU its model, core count and PyTorch's thread count.

    Example:
        >>> describe_device("cpu").startswith("cpu: ")
        True
        >>> if torch.cuda.is_available():
        ...     assert "compute capability" in describe_device("cuda:0")
    """
    dev = _check_device(device)
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        return (
            f"{dev}: {props.name}, {props.total_memory / 2**30:.1f} GiB, "
            f"compute capability {props.major}.{props.minor}, "
            f"{props.multi_processor_count} SMs"
        )
    cores = os.cpu_count() or 1
    return (
        f"cpu: {_cpu_model()}, {cores} core{'s' if cores != 1 else ''}, "
        f"{torch.get_num_threads()} PyTorch thread(s)"
    )


# -- Timing ---------------------------------------------------------------------------------
#: How many rounds :func:`time_op` splits its calls into (fewer when there are fewer calls).
ROUNDS = 5


def time_op(
    op: Callable[[], object],
    device: str | torch.device | None = None,
    *,
    repeats: int = 10,
    warmup: int = 1,
) -> tuple[float, float]:
    """Time ``op()`` the way every measurement in this module does; return (total, per call).

    ``op`` runs ``warmup`` untimed times, then ``repeats`` timed times in up to ``ROUNDS``
    rounds. The per-call time is the median over the rounds, so one round slowed down by
    another program (common on a shared machine) does not move it.

    Args:
        op: a callable without arguments, e.g. ``x.sum`` or ``lambda: y.copy_(x)``.
        device: a CUDA device: CUDA event times on its current stream (work that ``op``
            queues there is included). ``None`` or the CPU: the wall clock, read after
            synchronizing every GPU in use (right for work on several devices).
        repeats: how many timed calls, at least 1.
        warmup: how many untimed calls first, at least 0.

    Returns:
        The total seconds of the ``repeats`` timed calls, and the median seconds per call.

    Example:
        >>> x = torch.ones(1000)
        >>> total, per_call = time_op(x.sum, repeats=20)
        >>> 0 < per_call <= total
        True
    """
    if not callable(op):
        raise TypeError(f"op must be a callable without arguments, got {type(op).__name__}")
    repeats = check_int(repeats, "repeats")
    warmup = check_int(warmup, "warmup", 0)
    dev = None if device is None else _check_device(device)
    for _ in range(warmup):
        op()
    rounds = min(ROUNDS, repeats)
    sizes = [repeats // rounds + (1 if r < repeats % rounds else 0) for r in range(rounds)]
    timer = Timer(dev if dev is not None and dev.type == "cuda" else None)
    per_call = []
    for size in sizes:
        timer.start()
        for _ in range(size):
            op()
        per_call.append(timer.stop() / size)
    return timer.sum(), statistics.median(per_call)


# -- Copy bandwidth -------------------------------------------------------------------------
def _size_text(nbytes: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes:,} bytes"


def copy_bandwidth(
    nbytes: int,
    device: str | torch.device | None = None,
    *,
    direction: str = "host_to_device",
    pinned: bool = False,
    repeats: int = 10,
) -> Measurement:
    """Copy a buffer of ``nbytes`` bytes ``repeats`` times and return the rate in GB/s.

    The rate is bytes copied per second (10**9 bytes per GB). A copy within one memory reads
    *and* writes every byte, so that memory moves twice the bytes reported.

    Args:
        nbytes: the size of the buffer, in bytes.
        device: a CPU or CUDA device; ``None`` (the default) means :func:`gpukit.devices.try_gpu`.
        direction: ``'host_to_device'`` (main memory to GPU memory over the bus),
            ``'device_to_host'``, or ``'within_device'`` (GPU memory to GPU memory; on the
            CPU, main memory to main memory). A CPU has no host<->device link, so on the CPU
            only ``'within_device'`` is accepted.
        pinned: whether the host buffer of a host<->device copy is pinned (page-locked)
            memory, which the GPU can read and write directly, without a staging copy.
        repeats: how many copies are timed, after one untimed warm-up copy.

    Raises:
        TypeError: if an argument has the wrong type.
        ValueError: if ``nbytes`` or ``repeats`` is below 1, ``direction`` is unknown, or a
            host<->device copy or ``pinned=True`` is asked of the CPU.

    Example:
        >>> m = copy_bandwidth(2**20, "cpu", direction="within_device", repeats=3)
        >>> m.what
        'host memory copy, 1 MiB (CPU only: no host<->device link)'
        >>> m.unit, m.count, m.value > 0
        ('GB/s', 3, True)
        >>> if torch.cuda.is_available():
        ...     print(copy_bandwidth(2**20, "cuda:0", pinned=True).what)
        ... else:
        ...     print("host->device copy, pinned memory, 1 MiB")
        host->device copy, pinned memory, 1 MiB
    """
    nbytes = check_int(nbytes, "nbytes")
    repeats = check_int(repeats, "repeats")
    dev = _check_device(device)
    if not isinstance(direction, str):
        raise TypeError(f"direction must be a str, got {type(direction).__name__}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {list(_DIRECTIONS)}, got {direction!r}")
    if not isinstance(pinned, bool):
        raise TypeError(f"pinned must be a bool, got {type(pinned).__name__}")
    size = _size_text(nbytes)

    if dev.type == "cpu":
        if direction != "within_device":
            raise ValueError(
                f"direction {direction!r} needs a GPU: the CPU has no host<->device link; "
                "use direction='within_device' to measure a host memory copy"
            )
        if pinned:
            raise ValueError("pinned=True needs a GPU: pinned memory speeds up copies to a GPU")
        src = torch.ones(nbytes, dtype=torch.uint8)
        dst = torch.empty_like(src)
        what = f"host memory copy, {size} (CPU only: no host<->device link)"
        seconds, per_copy = time_op(lambda: dst.copy_(src), dev, repeats=repeats, warmup=1)
    else:
        if direction == "within_device":
            if pinned:
                raise ValueError("pinned=True applies to host<->device copies only")
            src = torch.ones(nbytes, dtype=torch.uint8, device=dev)
            dst = torch.empty_like(src)
            what = f"device->device copy (GPU memory), {size}"
        else:
            host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)
            gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
            src, dst = (host, gpu) if direction == "host_to_device" else (gpu, host)
            arrow = "host->device" if direction == "host_to_device" else "device->host"
            what = f"{arrow} copy, {'pinned' if pinned else 'pageable'} memory, {size}"
        with torch.cuda.device(dev):
            # non_blocking only has an effect with pinned memory; it lets the copies queue.
            seconds, per_copy = time_op(
                lambda: dst.copy_(src, non_blocking=pinned), dev, repeats=repeats, warmup=1
            )
    return Measurement(_label(dev), what, repeats, seconds, nbytes / per_copy / 1e9, "GB/s")


def copy_bandwidths(
    nbytes: int, device: str | torch.device | None = None, *, repeats: int = 10
) -> list[Measurement]:
    """Measure every copy that makes sense on ``device`` (see :func:`copy_bandwidth`).

    On a GPU: host->device and device->host, each from pageable and from pinned memory, then
    device->device. On the CPU, which has no host<->device link: one host memory copy.

    Example:
        >>> [m.what for m in copy_bandwidths(2**16, "cpu", repeats=2)]
        ['host memory copy, 64 KiB (CPU only: no host<->device link)']
        >>> if torch.cuda.is_available():
        ...     assert len(copy_bandwidths(2**16, "cuda:0", repeats=2)) == 5
    """
    dev = _check_device(device)
    if dev.type == "cpu":
        return [copy_bandwidth(nbytes, dev, direction="within_device", repeats=repeats)]
    results = [
        copy_bandwidth(nbytes, dev, direction=direction, pinned=pinned, repeats=repeats)
        for direction in ("host_to_device", "device_to_host")
        for pinned in (False, True)
    ]
    results.append(copy_bandwidth(nbytes, dev, direction="within_device", repeats=repeats))
    return results


# -- Launch latency -------------------------------------------------------------------------
def launch_latency(
    device: str | torch.device | None = None,
    *,
    repeats: int = 1000,
    synchronize_each: bool = False,
) -> Measurement:
    """Time a tiny operation (adding 1 to a one-element tensor) and return µs per operation.

    The arithmetic is negligible, so the time is the fixed cost of any operation: on a GPU,
    Python, PyTorch's dispatcher and the CUDA kernel launch; on the CPU, PyTorch's per-operation
    dispatch overhead (there is no kernel launch).

    Args:
        device: a CPU or CUDA device; ``None`` (the default) means :func:`gpukit.devices.try_gpu`.
        repeats: how many operations are timed, after ten untimed ones.
        synchronize_each: ``False``: queue the operations back to back, which measures the
            launch overhead. ``True``: wait for the device after each one, which measures the
            round trip of launching a kernel and waiting for its result (a no-op on the CPU).

    Example:
        >>> m = launch_latency("cpu", repeats=100)
        >>> m.what
        'tiny op, back to back (CPU: dispatch overhead, no kernel launch)'
        >>> m.unit, m.value > 0
        ('µs per op', True)
    """
    dev = _check_device(device)
    repeats = check_int(repeats, "repeats")
    if not isinstance(synchronize_each, bool):
        raise TypeError(f"synchronize_each must be a bool, got {type(synchronize_each).__name__}")
    x = torch.zeros(1, device=dev)

    def op() -> None:
        x.add_(1)
        if synchronize_each and dev.type == "cuda":
            torch.cuda.synchronize(dev)

    if dev.type == "cuda":
        what = "tiny kernel, " + ("synchronize after each" if synchronize_each else "back to back")
        with torch.cuda.device(dev):
            seconds, per_op = time_op(op, dev, repeats=repeats, warmup=10)
    else:
        what = (
            "tiny op, synchronize after each (CPU: a no-op; dispatch overhead)"
            if synchronize_each
            else "tiny op, back to back (CPU: dispatch overhead, no kernel launch)"
        )
        seconds, per_op = time_op(op, dev, repeats=repeats, warmup=10)
    return Measurement(_label(dev), what, repeats, seconds, per_op * 1e6, "µs per op")


# -- Matrix-multiply throughput -------------------------------------------------------------
def peak_tflops(name: str, dtype: str = "fp32") -> float | None:
    """Return the dense datasheet peak in TFLOP/s of the GPU called ``name``, or ``None``.

    Args:
        name: a GPU name as :func:`torch.cuda.get_device_name` returns it, or a key of
            :data:`PEAK_TFLOPS`.
        dtype: ``'fp32'``, ``'tf32'``, ``'bf16'`` or ``'fp16'``.

    Returns:
        The peak, or ``None`` for a GPU (or CPU) not in :data:`PEAK_TFLOPS`, or a format the
        GPU has no tensor cores for.

    Example:
        >>> peak_tflops("NVIDIA H100 80GB HBM3", "bf16")
        989.5
        >>> peak_tflops("NVIDIA A100-SXM4-80GB", "tf32")
        156.0
        >>> peak_tflops("Tesla V100-SXM2-16GB", "tf32") is None  # no TF32 before Ampere
        True
        >>> peak_tflops("NVIDIA H200 NVL") is None  # a variant with other peaks: not listed
        True
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (a GPU name), got {type(name).__name__}")
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a str such as 'fp32', got {type(dtype).__name__}")
    check_choice(dtype, "dtype", _DTYPES)
    model = name if name in PEAK_TFLOPS else None
    if re.search(_PART_OF_A_GPU, name, flags=re.IGNORECASE):
        return None
    for pattern, candidate in _MODEL_PATTERNS:
        if model is None and re.search(pattern, name, flags=re.IGNORECASE):
            model = candidate
    return None if model is None else PEAK_TFLOPS[model].get(dtype)


def matmul_dtypes(device: str | torch.device | None = None) -> list[str]:
    """The number formats worth measuring on ``device``.

    ``['fp32']`` on the CPU; on a GPU also the tensor-core formats it has: TF32 and bfloat16
    from compute capability 8.0 (Ampere) on, float16 on Volta and Turing (7.x).

    Example:
        >>> matmul_dtypes("cpu")
        ['fp32']
    """
    dev = _check_device(device)
    if dev.type == "cpu":
        return ["fp32"]
    major, _ = torch.cuda.get_device_capability(dev)
    if major >= 8:
        return ["fp32", "tf32", "bf16"]
    if major == 7:
        return ["fp32", "fp16"]
    return ["fp32"]


@contextmanager
def _float32_matmul(dtype: str) -> Iterator[None]:
    """Make float32 matmuls use exactly IEEE fp32 (``'fp32'``) or TF32 (``'tf32'``), then restore.

    Only the current fp32_precision API is used: PyTorch refuses to read the legacy
    ``allow_tf32`` flag once both APIs have been mixed.
    """
    if dtype == "fp32":
        # oneDNN (CPU) may also use reduced precision for float32 when asked to.
        modes = [(torch.backends.cuda.matmul, "ieee"), (torch.backends.mkldnn.matmul, "ieee")]
    elif dtype == "tf32":
        modes = [(torch.backends.cuda.matmul, "tf32")]
    else:
        modes = []
    saved = [(backend, backend.fp32_precision) for backend, _ in modes]
    try:
        for backend, mode in modes:
            backend.fp32_precision = mode
        yield
    finally:
        for backend, mode in reversed(saved):
            backend.fp32_precision = mode


def matmul_throughput(
    n: int,
    device: str | torch.device | None = None,
    *,
    dtype: str = "fp32",
    repeats: int = 10,
) -> Measurement:
    """Multiply two ``n`` x ``n`` matrices ``repeats`` times; return TFLOP/s (GPU) or GFLOP/s (CPU).

    One product takes ``2 * n**3`` floating-point operations (a multiply and an add per term).
    On a GPU listed in :data:`PEAK_TFLOPS` the result carries the datasheet peak too.

    Args:
        n: the matrix size.
        device: a CPU or CUDA device; ``None`` (the default) means :func:`gpukit.devices.try_gpu`.
        dtype: ``'fp32'`` (IEEE single precision, TF32 switched off), ``'tf32'`` (float32
            tensors multiplied on TF32 tensor cores; GPU only), ``'bf16'`` or ``'fp16'``.
        repeats: how many products are timed, after two untimed ones.

    Example:
        >>> m = matmul_throughput(128, "cpu", repeats=2)
        >>> m.what, m.unit, m.peak
        ('fp32 matmul 128x128', 'GFLOP/s', None)
    """
    n = check_int(n, "n")
    repeats = check_int(repeats, "repeats")
    dev = _check_device(device)
    dtype = _check_dtype(dtype, dev)
    # A private generator: measuring must not change the reader's random numbers.
    generator = torch.Generator(device=dev).manual_seed(0)
    a, b = (
        torch.empty(n, n, device=dev, dtype=_DTYPES[dtype]).uniform_(-1, 1, generator=generator)
        for _ in range(2)
    )
    out = torch.empty_like(a)
    with _float32_matmul(dtype):
        if dev.type == "cuda":
            with torch.cuda.device(dev):
                seconds, per_product = time_op(
                    lambda: torch.matmul(a, b, out=out), dev, repeats=repeats, warmup=2
                )
        else:
            seconds, per_product = time_op(
                lambda: torch.matmul(a, b, out=out), dev, repeats=repeats, warmup=2
            )
    flops = 2 * n**3 / per_product
    what = f"{dtype} matmul {n}x{n}"
    if dev.type == "cpu":
        return Measurement(_label(dev), what, repeats, seconds, flops / 1e9, "GFLOP/s")
    peak = peak_tflops(torch.cuda.get_device_name(dev), dtype)
    return Measurement(_label(dev), what, repeats, seconds, flops / 1e12, "TFLOP/s", peak)
