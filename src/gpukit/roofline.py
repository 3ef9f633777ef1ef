"""The roofline model: how fast an operation can run, from its arithmetic intensity.

An operation that performs ``flops`` floating-point operations and moves ``nbytes`` bytes
between memory and the processor has the *arithmetic intensity* ``flops / nbytes`` (FLOP per
byte). A device that moves ``bandwidth`` bytes/s and computes ``peak_flops`` FLOP/s runs it at
most at ``min(peak_flops, bandwidth * intensity)`` FLOP/s: the *roof*. Below the *ridge point*
``peak_flops / bandwidth`` an operation is memory-bound, above it compute-bound.

:func:`measured_roofline` builds the roof of this machine from :mod:`gpukit.measure`'s copy
bandwidth and matmul throughput; :func:`datasheet_roofline` that of a data-center GPU from
NVIDIA's data sheets; :func:`measure_point` places a timed operation under a roof;
:func:`plot_roofline` draws roofs and points; :func:`mfu` is the model FLOP utilization.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.ticker import EngFormatter, FuncFormatter

from gpukit._checks import check_choice, check_int, check_number, check_type
from gpukit.devices import device_or_gpu
from gpukit.measure import PEAK_TFLOPS, copy_bandwidth, matmul_throughput, time_op

__all__ = [
    "HBM_TBPS",
    "OpPoint",
    "Roofline",
    "arithmetic_intensity",
    "datasheet_roofline",
    "matmul_cost",
    "measure_point",
    "measured_roofline",
    "mfu",
    "plot_roofline",
]

#: GPU memory (HBM) bandwidth in TB/s (10**12 bytes/s), from NVIDIA's data sheets. H100 SXM
#: (H100 Tensor Core GPU data sheet, 2023) 3.35 TB/s, H200 SXM (H200 data sheet, 2024)
#: 4.8 TB/s, B200 (HGX B200 data sheet, 2024) 8 TB/s per GPU. Their peak FLOP/s are in
#: :data:`gpukit.measure.PEAK_TFLOPS`.
HBM_TBPS: dict[str, float] = {"H100 SXM": 3.35, "H200 SXM": 4.8, "B200": 8.0}


def arithmetic_intensity(flops: float, nbytes: float) -> float:
    """FLOP per byte moved: ``flops / nbytes``.

    Example (adding two float32 vectors of n elements: n additions, 3 * 4 * n bytes):
        >>> n = 1_000_000
        >>> round(arithmetic_intensity(n, 3 * 4 * n), 3)
        0.083
    """
    return check_number(flops, "flops", zero=True) / check_number(nbytes, "nbytes")


def matmul_cost(m: int, n: int, k: int, *, element_size: int = 4) -> tuple[int, int]:
    """FLOPs and the least bytes moved by ``(m x k) @ (k x n)``: ``(2*m*n*k, size*(mk+kn+mn))``.

    Each output element needs ``k`` multiplies and ``k`` adds; at best each input is read once
    and the output written once, ``element_size`` bytes per element (4 for fp32, 2 for bf16).

    Example:
        >>> flops, nbytes = matmul_cost(4096, 4096, 4096, element_size=2)
        >>> flops, nbytes, round(flops / nbytes)
        (137438953472, 100663296, 1365)
    """
    for value, name in ((m, "m"), (n, "n"), (k, "k"), (element_size, "element_size")):
        check_int(value, name)
    return 2 * m * n * k, element_size * (m * k + k * n + m * n)


@dataclass(frozen=True)
class Roofline:
    """A device's roof: ``bandwidth`` in bytes/s and ``peak_flops`` in FLOP/s.

    Example (an H200's bf16 roof from its data sheet):
        >>> h200 = Roofline("H200 SXM bf16", bandwidth=4.8e12, peak_flops=989.5e12)
        >>> round(h200.ridge_point)
        206
        >>> h200.bound(1 / 12), f"{h200.attainable(1 / 12) / 1e12:.1f} TFLOP/s"
        ('memory', '0.4 TFLOP/s')
        >>> h200.bound(1365)
        'compute'
    """

    name: str
    bandwidth: float
    peak_flops: float

    def __post_init__(self) -> None:
        check_type(self.name, "name", str, "a str")
        check_number(self.bandwidth, "bandwidth")
        check_number(self.peak_flops, "peak_flops")

    @property
    def ridge_point(self) -> float:
        """The intensity (FLOP/byte) at which memory and arithmetic take equally long."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        """The most FLOP/s an operation of this ``intensity`` can reach on this device."""
        return min(self.peak_flops, self.bandwidth * check_number(intensity, "intensity"))

    def bound(self, intensity: float) -> str:
        """``'memory'`` below the ridge point, ``'compute'`` from it on."""
        return "memory" if check_number(intensity, "intensity") < self.ridge_point else "compute"


def datasheet_roofline(model: str, dtype: str = "bf16") -> Roofline:
    """The roof of ``model`` (a key of :data:`HBM_TBPS`) for ``dtype`` from the data sheets.

    ``dtype`` is a format of :data:`gpukit.measure.PEAK_TFLOPS` (``'fp32'``, ``'tf32'``,
    ``'bf16'``, ``'fp16'``): dense tensor-core peaks, without 2:4 sparsity.

    Example:
        >>> b200 = datasheet_roofline("B200", "bf16")
        >>> b200.name, round(b200.ridge_point)
        ('B200 bf16', 281)
    """
    check_choice(model, "model", HBM_TBPS)
    check_choice(dtype, "dtype", PEAK_TFLOPS[model])
    return Roofline(f"{model} {dtype}", HBM_TBPS[model] * 1e12, PEAK_TFLOPS[model][dtype] * 1e12)


def measured_roofline(
    device: str | torch.device | None = None,
    *,
    copy_bytes: int = 2**26,
    matmul_sizes: Sequence[int] = (256, 512, 1024),
    dtype: str | None = None,
    repeats: int = 5,
    tries: int = 2,
) -> Roofline:
    """This machine's roof, measured: copies for the bandwidth, matmuls for the FLOP/s.

    The bandwidth is the best of ``tries`` runs of :func:`gpukit.measure.copy_bandwidth`
    within the device, counting the bytes read *and* written (twice the buffer); ``copy_bytes``
    should exceed the caches. The FLOP/s are the best of :func:`gpukit.measure.matmul_throughput`
    over ``matmul_sizes`` (each tried ``tries`` times) in ``dtype`` (``None``: ``'bf16'`` on a
    GPU, whose tensor cores set its peak, ``'fp32'`` on the CPU). A peak is the best a machine
    can do, so the best run counts: a run slowed by another program must not lower the roof.
    Both stay at or below the data-sheet peaks.

    Example:
        >>> roof = measured_roofline("cpu", copy_bytes=2**20, matmul_sizes=[64], repeats=2)
        >>> roof.name
        'cpu fp32 (measured)'
        >>> roof.ridge_point > 0
        True
    """
    dev = device_or_gpu(device)
    check_int(copy_bytes, "copy_bytes")
    if isinstance(matmul_sizes, str | int) or not isinstance(matmul_sizes, Sequence):
        raise TypeError(f"matmul_sizes must be a sequence of ints, got {matmul_sizes!r}")
    if not matmul_sizes:
        raise ValueError("matmul_sizes must hold at least one size")
    for i, n in enumerate(matmul_sizes):
        check_int(n, f"matmul_sizes[{i}]")
    check_int(repeats, "repeats")
    check_int(tries, "tries")
    if dtype is None:
        dtype = "bf16" if dev.type == "cuda" else "fp32"
    copies = [
        copy_bandwidth(copy_bytes, dev, direction="within_device", repeats=repeats)
        for _ in range(tries)
    ]
    products = [
        matmul_throughput(n, dev, dtype=dtype, repeats=repeats)
        for n in matmul_sizes
        for _ in range(tries)
    ]
    scale = {"TFLOP/s": 1e12, "GFLOP/s": 1e9}
    peak = max(m.value * scale[m.unit] for m in products)
    bandwidth = 2 * max(m.value for m in copies) * 1e9
    return Roofline(f"{dev.type} {dtype} (measured)", bandwidth, peak)


@dataclass(frozen=True)
class OpPoint:
    """One operation under a roof: ``flops`` and ``nbytes`` per call, ``seconds`` per call."""

    name: str
    flops: float
    nbytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.nbytes

    @property
    def flops_per_second(self) -> float:
        """The FLOP/s achieved."""
        return self.flops / self.seconds

    def share_of_roof(self, roof: Roofline) -> float:
        """Achieved FLOP/s as a fraction of what ``roof`` allows at this intensity."""
        return self.flops_per_second / roof.attainable(self.intensity)


def measure_point(
    name: str,
    op: Callable[[], object],
    *,
    flops: float,
    nbytes: float,
    device: str | torch.device | None = None,
    repeats: int = 10,
) -> OpPoint:
    """Time ``op()`` with :func:`gpukit.measure.time_op` (one warm-up); return its point.

    ``flops`` and ``nbytes`` are counted by the caller for one call of ``op`` (the least
    traffic: each input read once, each output written once). ``device`` is the device whose
    queue the timer waits for (``None``: the CPU's clock alone; pass the GPU for GPU work).

    Example:
        >>> x = torch.ones(100_000)
        >>> p = measure_point("x * 2", lambda: x * 2, flops=x.numel(), nbytes=8 * x.numel())
        >>> p.name, p.intensity
        ('x * 2', 0.125)
    """
    check_type(name, "name", str, "a str")
    check_number(flops, "flops", zero=True)
    check_number(nbytes, "nbytes")
    _, seconds = time_op(op, device, repeats=repeats, warmup=1)
    return OpPoint(name, float(flops), float(nbytes), seconds)


def mfu(flops: float, seconds: float, peak_flops: float) -> float:
    """Model FLOP utilization: ``flops / seconds`` (achieved) as a fraction of ``peak_flops``.

    ``flops`` is what the model needs (e.g. about ``6 * parameters * tokens`` for a training
    step of a transformer), not what the kernels happened to execute: recomputation and padding
    do not count.

    Example (a step of 400 TFLOP in 1 s on an H200's bf16 peak):
        >>> round(mfu(400e12, 1.0, 989.5e12), 2)
        0.4
    """
    return (
        check_number(flops, "flops", zero=True)
        / check_number(seconds, "seconds")
        / check_number(peak_flops, "peak_flops")
    )


def _plain_number(value: float, _position: int) -> str:
    return f"{value:g}"


def plot_roofline(
    roofs: Sequence[Roofline],
    points: Sequence[OpPoint] = (),
    *,
    marks: Mapping[str, float] | None = None,
    figsize: tuple[float, float] = (6.5, 4.0),
) -> Figure:
    """Draw ``roofs`` (log-log: FLOP/s against FLOP/byte) and measured ``points`` on them.

    Each point is labelled with its name; each roof's ridge point is marked. ``marks`` maps
    names to intensities, drawn as labelled dotted vertical lines: operations read off roofs
    they were not measured on. Labels are horizontal, and a label that would cover another
    (two operations of about the same intensity) moves up or down until it covers none.
    Returns a matplotlib figure, which :func:`gpukit.plotting.figure_to_svg` renders.

    Example:
        >>> roof = Roofline("toy", bandwidth=1e11, peak_flops=1e12)
        >>> fig = plot_roofline([roof], [OpPoint("add", 1e6, 1.2e7, 2e-4)])
        >>> fig.axes[0].get_xscale(), fig.axes[0].get_title()
        ('log', '')
    """
    roofs, points = list(roofs), list(points)
    if not roofs or not all(isinstance(r, Roofline) for r in roofs):
        raise TypeError("roofs must be a non-empty sequence of Roofline")
    if not all(isinstance(p, OpPoint) for p in points):
        raise TypeError("points must be a sequence of OpPoint")
    if marks is not None and not isinstance(marks, Mapping):
        raise TypeError(f"marks must be a mapping of names to intensities, got {marks!r}")
    marks = {name: check_number(x, f"marks[{name!r}]") for name, x in (marks or {}).items()}
    xs = [p.intensity for p in points] + list(marks.values()) + [r.ridge_point for r in roofs]
    lo = 10 ** math.floor(math.log10(min(xs)) - 0.5)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 0.5)
    fig = Figure(figsize=figsize, facecolor="white")
    ax = fig.subplots()
    for roof in roofs:
        # Two straight segments on log-log axes: the slope of the bandwidth up to the ridge
        # point, then the flat peak. Three points draw them exactly (and keep the SVG small).
        corners = [lo, roof.ridge_point, hi]
        (line,) = ax.plot(corners, [roof.attainable(x) for x in corners], label=roof.name)
        ax.plot([roof.ridge_point], [roof.peak_flops], "o", color=line.get_color(), ms=4)
    labels = []
    for name, x in sorted(marks.items(), key=lambda mark: mark[1]):
        ax.axvline(x, color="0.6", linestyle=":", linewidth=1)
        labels.append(
            (
                ax.annotate(
                    name,
                    (x, 0.02),
                    xycoords=("data", "axes fraction"),
                    xytext=(2, 0),
                    textcoords="offset points",
                    fontsize=8,
                    color="0.25",
                ),
                _ALONG_A_LINE,
            )
        )
    markers = []
    for p in sorted(points, key=lambda p: (p.intensity, p.flops_per_second)):
        markers += ax.plot([p.intensity], [p.flops_per_second], "k^", ms=5)
        labels.append(
            (
                ax.annotate(
                    p.name,
                    (p.intensity, p.flops_per_second),
                    xytext=(4, -10),
                    textcoords="offset points",
                    fontsize=8,
                ),
                _AROUND_A_POINT,
            )
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(lo, hi),
        xlabel="arithmetic intensity (FLOP/byte)",
        ylabel="attainable FLOP/s",
    )
    ax.minorticks_off()  # a tick for every unit between powers of ten: bytes, no information
    # Plain labels ("0.1", "100 TFLOP/s") rather than 10^n typeset character by character.
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s"))
    ax.grid(which="major", linewidth=0.5)
    legend = ax.legend(fontsize=8, loc="upper left")
    _dodge(fig, labels, avoid=[legend, *markers])
    return fig


# Where a label may go, as (x, y) offsets in points from what it marks, tried in order: a mark's
# label upwards along its line; a point's label to the right or left of it, then ever further
# below or above. Two operations of about the same intensity would otherwise print their names
# on top of each other ("GELU" and "GELU fused").
_ALONG_A_LINE = [(2, 11 * step) for step in range(10)]
_AROUND_A_POINT = [
    (dx, dy) for step in range(6) for dy in (-3 - 9 * step, 3 + 9 * step) for dx in (5, -5)
]


def _dodge(
    fig: Figure, labels: list[tuple[Annotation, list[tuple[int, int]]]], avoid: list[Artist]
) -> None:
    # Labels are placed in order; each takes the first offset where its box overlaps no label
    # placed before it and no artist in `avoid`. Boxes are measured by rendering the figure
    # once; offsets are in points, so they hold in the SVG too.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)  # fixes the autoscaled limits, so the boxes are final
    placed = [artist.get_window_extent(renderer) for artist in avoid]
    for label, offsets in labels:
        for dx, dy in offsets:
            label.xyann = (dx, dy)
            label.set_horizontalalignment("left" if dx >= 0 else "right")
            label.set_verticalalignment("center" if dx != 2 else "bottom")
            box = label.get_window_extent(renderer).padded(1)
            if not any(box.overlaps(other) for other in placed):
                break
        placed.append(box)
