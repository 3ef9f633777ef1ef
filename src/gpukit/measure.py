"""Measuring the hardware from PyTorch: copy bandwidth, launch latency, matmul throughput.

Each answer is a :class:`Measurement` naming the device; on a CPU-only machine each still runs
and says what it measured instead. ``device`` is a CPU or CUDA device; ``None`` means
:func:`gpukit.devices.try_gpu` (GPU 0, else the CPU).
"""

from __future__ import annotations

import contextlib
import re
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from gpukit._checks import check_choice, check_int, check_type
from gpukit.devices import device_or_gpu, existing_device
from gpukit.memory import format_bytes
from gpukit.timing import Timer, format_seconds

__all__ = [
    "PEAK_TFLOPS",
    "Measurement",
    "copy_bandwidth",
    "float32_matmul",
    "launch_latency",
    "matmul_dtypes",
    "matmul_throughput",
    "peak_tflops",
    "time_op",
]

#: Dense peak TFLOP/s by GPU model and number format, at boost clock, from NVIDIA's datasheets
#: (the Ada Lovelace whitepaper for the RTX 4090). "Dense": without the 2:4 sparsity that the
#: headline tensor-core numbers of Ampere and later assume (twice these). ``tf32``, ``bf16``
#: and ``fp16`` are tensor-core rates; a missing entry: no tensor-core path for that format.
#: Blackwell: the HGX B200 and HGX B300 datasheets give eight GPUs 36 PFLOP/s of FP16/BF16 and
#: 18 PFLOP/s of TF32 with sparsity and 600 TFLOP/s of FP32, the GB200 NVL72 datasheet one GPU
#: 5 and 2.5 PFLOP/s with sparsity and 80 TFLOP/s (it runs at up to 1,200 W; NVIDIA, 2024-2025).
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "GB200": {"fp32": 80.0, "tf32": 1250.0, "bf16": 2500.0, "fp16": 2500.0},
    "B300": {"fp32": 75.0, "tf32": 1125.0, "bf16": 2250.0, "fp16": 2250.0},
    "B200": {"fp32": 75.0, "tf32": 1125.0, "bf16": 2250.0, "fp16": 2250.0},
    "H200 SXM": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
    "H100 SXM": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
    "H100 PCIe": {"fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
    "V100 SXM2": {"fp32": 15.7, "fp16": 125.0},
    "V100 PCIe": {"fp32": 14.0, "fp16": 112.0},
    "RTX 4090": {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
}
# torch.cuda.get_device_name() -> PEAK_TFLOPS key, first match first ("NVIDIA B200",
# "NVIDIA B300 SXM6 AC", "NVIDIA GB200"; "\b" keeps B200 from matching inside GB200). Variants
# not listed (GB300, H200 NVL, H100 NVL, RTX 4090 D), MIG slices and laptop GPUs have other
# peaks: no match.
_MODEL_PATTERNS = (
    (r"\bGB200\b", "GB200"),
    (r"\bB300\b", "B300"),
    (r"\bB200\b", "B200"),
    (r"\bH200\b(?!.*\bNVL\b)", "H200 SXM"),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe"),
    (r"\bH100\b(?!.*\b(NVL|PCIe)\b)", "H100 SXM"),
    (r"\bA100\b", "A100"),
    (r"\bV100[- ]?SXM2\b", "V100 SXM2"),
    (r"\bV100[- ]?PCIe\b", "V100 PCIe"),
    (r"\bRTX 4090\b(?! D\b)", "RTX 4090"),
)
_DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
_DIRECTIONS = ("host_to_device", "device_to_host", "within_device")


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One measured figure and the device it was measured on.

    ``count`` operations took ``seconds`` in all; ``value`` (in ``unit``: ``'GB/s'`` of
    10**9 bytes, ``'TFLOP/s'``, ``'GFLOP/s'`` or ``'µs per op'``) comes from the median time
    per operation over the rounds; ``peak`` is the datasheet peak in ``unit``, where known.

    Example:
        >>> print(Measurement(device="cuda:0", what="bf16 matmul", count=20, seconds=0.03,
        ...                   value=733.0, unit="TFLOP/s", peak=989.5))
        cuda:0: bf16 matmul
          20 in 0.0300 sec -> 733.0 TFLOP/s (74% of 989.5 peak)
        >>> print(Measurement(device="cpu", what="copy, 4 KiB", count=10, seconds=3e-5,
        ...                   value=1.4, unit="GB/s"))
        cpu: copy, 4 KiB
          10 in 30.0 µs -> 1.4 GB/s
    """

    device: str
    what: str
    count: int
    seconds: float
    value: float
    unit: str
    peak: float | None = None

    def __str__(self) -> str:
        text = (
            f"{self.device}: {self.what}\n"
            f"  {self.count} in {_duration(self.seconds)} -> {self.value:.1f} {self.unit}"
        )
        if self.peak:
            text += f" ({100 * self.value / self.peak:.0f}% of {self.peak:g} peak)"
        return text


def _duration(seconds: float) -> str:
    # Below 10 ms in µs: "10 in 0.0000 sec -> 1.3 GB/s" once printed a rate beside a time of zero.
    return format_seconds(seconds) if seconds >= 0.01 else f"{seconds * 1e6:,.1f} µs"


def _label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    threads = torch.get_num_threads()
    return f"cpu ({threads} thread{'s' if threads != 1 else ''})"


def peak_tflops(name: str, dtype: str) -> float | None:
    """The dense data-sheet peak of the GPU called ``name`` for ``dtype``, in TFLOP/s.

    ``name`` is what ``torch.cuda.get_device_name()`` says (``"NVIDIA H100 80GB HBM3"``) or a
    key of :data:`PEAK_TFLOPS`; ``dtype`` is ``'fp32'``, ``'tf32'``, ``'bf16'`` or ``'fp16'``.
    Device names carry more than the model (memory, form factor), so each model is recognised
    by a pattern, and a name that contains another model's (a GB200 contains "B200") is told
    apart. ``None`` where the table has no peak: a GPU it does not list, a variant with other
    clocks and power (H200 NVL, RTX 4090 D), a MIG slice or a laptop GPU, or a format without a
    tensor-core path on that GPU (TF32 before Ampere). :func:`matmul_throughput` compares its
    measurement with this peak.

    Example:
        >>> peak_tflops("NVIDIA H100 80GB HBM3", "bf16"), peak_tflops("NVIDIA H100 PCIe", "bf16")
        (989.5, 756.5)
        >>> peak_tflops("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "bf16") is None  # a seventh of it
        True
    """
    check_type(name, "name", str, "a str such as torch.cuda.get_device_name()")
    check_choice(dtype, "dtype", _DTYPES)
    if re.search(r"\b(MIG|Laptop)\b", name, flags=re.IGNORECASE):
        return None  # a slice of the GPU, or one with lower clocks and power
    for pattern, model in _MODEL_PATTERNS:
        if re.search(pattern, name, flags=re.IGNORECASE):
            return PEAK_TFLOPS[model].get(dtype)
    return None


def _time(
    op: Callable[[], object], dev: torch.device | None, *, repeats: int, warmup: int
) -> tuple[float, float]:
    cuda = dev is not None and dev.type == "cuda"
    with torch.cuda.device(dev) if cuda else contextlib.nullcontext():
        for _ in range(warmup):
            op()
        rounds = min(5, repeats)
        timer = Timer(dev if cuda else None)
        per_call = []
        for r in range(rounds):
            size = repeats // rounds + (r < repeats % rounds)
            timer.start()
            for _ in range(size):
                op()
            per_call.append(timer.stop() / size)
    return timer.sum(), statistics.median(per_call)


def time_op(
    op: Callable[[], object],
    device: str | torch.device | None = None,
    *,
    repeats: int = 10,
    warmup: int = 1,
) -> tuple[float, float]:
    """Time ``op()``; return the total seconds of the timed calls and the seconds per call.

    ``op`` runs ``warmup`` untimed times, then ``repeats`` times in up to five rounds timed by a
    :class:`~gpukit.timing.Timer` on ``device`` (as the current device, if a GPU). The time
    per call is the median over the rounds: a round slowed by another program does not move it.

    Example:
        >>> total, per_call = time_op(torch.ones(1000).sum, repeats=20)
        >>> 0 < per_call <= total
        True
    """
    if not callable(op):
        raise TypeError(f"op must be a callable without arguments, got {type(op).__name__}")
    check_int(repeats, "repeats")
    check_int(warmup, "warmup", 0)
    dev = None if device is None else existing_device(device)
    return _time(op, dev, repeats=repeats, warmup=warmup)


def copy_bandwidth(
    nbytes: int,
    device: str | torch.device | None = None,
    *,
    direction: str = "host_to_device",
    pinned: bool = False,
    repeats: int = 10,
) -> Measurement:
    """Copy a buffer of ``nbytes`` bytes ``repeats`` times (after one warm-up); return GB/s.

    ``direction`` is ``'host_to_device'`` (main memory to GPU memory over the bus),
    ``'device_to_host'`` or ``'within_device'``: GPU memory to GPU memory, or on the CPU, which
    has no host<->device link and accepts only this direction, main memory to main memory. Such
    a copy reads *and* writes every byte, so the memory moves twice the bytes reported.
    ``pinned`` puts the host buffer in pinned (page-locked) memory, which the GPU reads and
    writes directly, without a staging copy.

    Example:
        >>> print(copy_bandwidth(2**20, "cpu", direction="within_device").what)
        host memory copy, 1.0 MiB (CPU only: no host<->device link)
    """
    check_int(nbytes, "nbytes")
    check_int(repeats, "repeats")
    dev = device_or_gpu(device)
    check_choice(direction, "direction", _DIRECTIONS)
    check_type(pinned, "pinned", bool, "a bool")
    if dev.type == "cpu" and direction != "within_device":
        raise ValueError(
            f"direction {direction!r} needs a GPU: the CPU has no host<->device link; "
            "use direction='within_device' to measure a host memory copy"
        )
    if pinned and direction == "within_device":
        raise ValueError("pinned=True applies to host<->device copies, which need a GPU")
    size = format_bytes(nbytes)
    if direction == "within_device":
        src = torch.ones(nbytes, dtype=torch.uint8, device=dev)
        what = (
            f"device->device copy (GPU memory), {size}"
            if dev.type == "cuda"
            else f"host memory copy, {size} (CPU only: no host<->device link)"
        )
        dst = torch.empty_like(src)
    else:
        host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)
        gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        src, dst = (host, gpu) if direction == "host_to_device" else (gpu, host)
        arrow = "host->device" if direction == "host_to_device" else "device->host"
        what = f"{arrow} copy, {'pinned' if pinned else 'pageable'} memory, {size}"
    # non_blocking only has an effect with pinned memory; it lets the copies queue.
    seconds, per_copy = _time(
        lambda: dst.copy_(src, non_blocking=pinned), dev, repeats=repeats, warmup=1
    )
    return Measurement(
        device=_label(dev),
        what=what,
        count=repeats,
        seconds=seconds,
        value=nbytes / per_copy / 1e9,
        unit="GB/s",
    )


def launch_latency(
    device: str | torch.device | None = None,
    *,
    repeats: int = 1000,
    synchronize_each: bool = False,
) -> Measurement:
    """Time a tiny operation (adding 1 to a one-element tensor); return µs per operation.

    The arithmetic is negligible, so the time is the fixed cost of any operation: on a GPU,
    Python, PyTorch's dispatcher and the kernel launch; on the CPU, dispatch only.
    ``synchronize_each=True`` waits for the device after each operation: the round trip of
    launching a kernel and waiting for its result (a no-op on the CPU). ``repeats`` operations
    are timed, after ten untimed ones.

    Example:
        >>> print(launch_latency("cpu", repeats=100).what)
        tiny op, back to back (CPU: dispatch overhead, no kernel launch)
    """
    dev = device_or_gpu(device)
    check_int(repeats, "repeats")
    check_type(synchronize_each, "synchronize_each", bool, "a bool")
    x = torch.zeros(1, device=dev)
    sync = synchronize_each and dev.type == "cuda"

    def op() -> None:
        x.add_(1)
        if sync:
            torch.cuda.synchronize(dev)

    what = "synchronize after each" if synchronize_each else "back to back"
    if dev.type == "cuda":
        what = f"tiny kernel, {what}"
    else:
        what = f"tiny op, {what} (CPU: dispatch overhead, no kernel launch)"
    seconds, per_op = _time(op, dev, repeats=repeats, warmup=10)
    return Measurement(
        device=_label(dev),
        what=what,
        count=repeats,
        seconds=seconds,
        value=per_op * 1e6,
        unit="µs per op",
    )


def matmul_dtypes(device: str | torch.device | None = None) -> list[str]:
    """The number formats worth measuring on ``device``.

    ``['fp32']`` on the CPU; on a GPU also the tensor-core formats it has: TF32 and bfloat16
    from compute capability 8.0 (Ampere) on, float16 on Volta and Turing (7.x).

    Example:
        >>> matmul_dtypes("cpu")
        ['fp32']
    """
    dev = device_or_gpu(device)
    major = torch.cuda.get_device_capability(dev)[0] if dev.type == "cuda" else 0
    if major >= 8:
        return ["fp32", "tf32", "bf16"]
    return ["fp32", "fp16"] if major == 7 else ["fp32"]


def float32_matmul(dtype: str) -> contextlib.AbstractContextManager[None]:
    """Run the float32 matrix products of a ``with`` block as ``dtype``, then restore the
    reader's settings, even after an error.

    ``'fp32'``: exactly IEEE single precision; ``'tf32'``: on the tensor cores in TF32, which
    keeps 10 mantissa bits of float32's 23. ``'bf16'`` and ``'fp16'`` change nothing: products
    of such tensors do not depend on these settings. :func:`matmul_throughput` measures inside
    this block.

    PyTorch has two settings for it: the global ``torch.set_float32_matmul_precision`` with
    its legacy ``allow_tf32`` flag, and since 2.9 each backend's ``fp32_precision``. Setting
    ``fp32_precision`` alone leaves the legacy flag disagreeing with it, and PyTorch then
    refuses to read that flag, which cuBLAS reads for float32 matmuls and Inductor when it
    compiles (pytorch issue 166387). ``torch.set_float32_matmul_precision`` sets the legacy
    flag and the ``fp32_precision`` of cuBLAS and oneDNN together, so the block uses it. On
    leaving, the reader's settings come back exactly, the legacy one first, then each
    backend's own value (when the reader's settings already mix both APIs, only the latter).

    Example:
        >>> before = torch.get_float32_matmul_precision()
        >>> with float32_matmul("tf32"):
        ...     print(torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32)
        high True
        >>> torch.get_float32_matmul_precision() == before
        True
    """
    check_choice(dtype, "dtype", _DTYPES)
    precision = {"fp32": "highest", "tf32": "high"}.get(dtype)
    if precision is None:  # bf16 and fp16 do not depend on these settings
        return contextlib.nullcontext()
    return _float32_precision(precision)


@contextlib.contextmanager
def _float32_precision(precision: str) -> Iterator[None]:
    """The block of :func:`float32_matmul`: ``precision`` is ``'highest'`` or ``'high'``."""
    backends = (torch.backends.cuda.matmul, torch.backends.mkldnn.matmul)
    saved = [backend.fp32_precision for backend in backends]
    try:
        legacy: str | None = torch.get_float32_matmul_precision()
    except RuntimeError:  # the reader's settings already mix both APIs: restore the backends
        legacy = None
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        if legacy is not None:
            torch.set_float32_matmul_precision(legacy)
        for backend, mode in zip(backends, saved, strict=True):
            backend.fp32_precision = mode


def matmul_throughput(
    n: int,
    device: str | torch.device | None = None,
    *,
    dtype: str = "fp32",
    repeats: int = 10,
) -> Measurement:
    """Multiply two ``n`` x ``n`` matrices ``repeats`` times (after two warm-ups); return FLOP/s.

    One product takes ``2 * n**3`` floating-point operations (a multiply and an add per term),
    reported in TFLOP/s on a GPU, with the peak of :data:`PEAK_TFLOPS` where listed, and in
    GFLOP/s on the CPU. ``dtype`` is ``'fp32'`` (IEEE single precision, TF32 off), ``'tf32'``
    (float32 tensors on TF32 tensor cores; GPU only), ``'bf16'`` or ``'fp16'``.

    Example:
        >>> m = matmul_throughput(128, "cpu", repeats=2)
        >>> m.what, m.unit, m.peak
        ('fp32 matmul 128x128', 'GFLOP/s', None)
    """
    check_int(n, "n")
    check_int(repeats, "repeats")
    dev = device_or_gpu(device)
    check_choice(dtype, "dtype", _DTYPES)
    if dtype == "tf32" and dev.type != "cuda":
        raise ValueError("dtype 'tf32' (a format of NVIDIA's tensor cores) needs a CUDA device")
    # A private generator: measuring must not change the reader's random numbers.
    generator = torch.Generator(device=dev).manual_seed(0)
    a, b = (
        torch.empty(n, n, device=dev, dtype=_DTYPES[dtype]).uniform_(-1, 1, generator=generator)
        for _ in range(2)
    )
    out = torch.empty_like(a)
    with float32_matmul(dtype):
        seconds, per_product = _time(
            lambda: torch.matmul(a, b, out=out), dev, repeats=repeats, warmup=2
        )
    flops = 2 * n**3 / per_product
    what = f"{dtype} matmul {n}x{n}"
    on_gpu = dev.type == "cuda"  # GPUs in TFLOP/s, against their datasheet peak
    return Measurement(
        device=_label(dev),
        what=what,
        count=repeats,
        seconds=seconds,
        value=flops / 1e12 if on_gpu else flops / 1e9,
        unit="TFLOP/s" if on_gpu else "GFLOP/s",
        peak=peak_tflops(torch.cuda.get_device_name(dev), dtype) if on_gpu else None,
    )
