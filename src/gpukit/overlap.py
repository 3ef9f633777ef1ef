"""Overlap of communication with computing, seen in a profiler trace: a
:func:`gpukit.parallel.launch` worker (:func:`overlap_worker`) that profiles one training step
of FSDP2 with and without prefetching and of DDP with one bucket or many, the share of the
communication that ran while the rank computed (:func:`overlap_share`), and a timeline of the
step (:func:`plot_overlap`).

Under gloo the collectives run on gloo's own threads, which the profiler records as
``gloo:*`` events; the rank's main thread computes (``aten::mm`` and the other matrix
products) or waits inside a ``c10d::`` call. Under NCCL the collectives are CUDA kernels
(``nccl*``) on streams of their own, next to the compute kernels on the default stream.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from gpukit._checks import check_type
from gpukit.parallel import rank_device
from gpukit.sharding import RowTransformer

__all__ = [
    "OVERLAP_VARIANTS",
    "covered_seconds",
    "overlap_share",
    "overlap_worker",
    "plot_overlap",
]

#: The runs :func:`overlap_worker` knows: FSDP2 gathering each block when it is needed or the
#: next block ahead, and DDP reducing all gradients in one bucket at the end of the backward
#: pass or in buckets as they become ready.
OVERLAP_VARIANTS = ("fsdp", "fsdp, prefetch", "ddp, one bucket", "ddp, buckets")
# The matrix products and attention: the computing that communication can hide behind.
COMPUTE_OPS = (
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
)

Interval = tuple[float, float]


def _union(intervals: Sequence[Interval]) -> list[Interval]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def _check_intervals(intervals: object, name: str) -> None:
    if isinstance(intervals, str) or not isinstance(intervals, Sequence):
        raise TypeError(f"{name} must be a list of (start, end) pairs, got {intervals!r}")
    for pair in intervals:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"{name} must hold (start, end) pairs, got {pair!r}")
        if not pair[0] <= pair[1]:
            raise ValueError(f"{name} must hold (start, end) pairs with start <= end: {pair}")


def covered_seconds(intervals: Sequence[Interval]) -> float:
    """The time ``intervals`` cover, overlapping ones counted once.

    Example:
        >>> covered_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
        4.0
    """
    _check_intervals(intervals, "intervals")
    return sum(end - start for start, end in _union(intervals))


def overlap_share(comm: Sequence[Interval], compute: Sequence[Interval]) -> float:
    """The share of the communication's time during which computing ran too: the length of
    ``comm``'s intervals that lies inside ``compute``'s, over the length of ``comm``'s
    (overlapping intervals of one kind count once). 0 when there is no communication.

    Example:
        >>> overlap_share([(0.0, 2.0)], [(1.0, 3.0)])  # half of the sending hidden
        0.5
        >>> overlap_share([(0.0, 1.0), (2.0, 3.0)], [(0.0, 1.0), (0.5, 1.0)])
        0.5
    """
    _check_intervals(comm, "comm")
    _check_intervals(compute, "compute")
    sending = _union(comm)
    total = sum(e - s for s, e in sending)
    if total == 0:
        return 0.0
    hidden = 0.0
    for cs, ce in _union(compute):
        for s, e in sending:
            hidden += max(0.0, min(e, ce) - max(s, cs))
    return hidden / total


def _is_kernel(event: Any) -> bool:
    """Whether a profiler (kineto) event is a GPU kernel: not a copy or a fill, and not one of
    the GPU-side rows that the profiler gives each record_function label (FSDP's among them),
    which are no work of the GPU."""
    if hasattr(event, "activity_type"):  # torch 2.12 and later
        return event.activity_type() == "kernel"
    return (
        event.device_type() == torch.autograd.DeviceType.CUDA
        and not event.is_user_annotation()
        and not event.name().startswith(("Memcpy", "Memset"))
    )


def _timeline(prof: Any, device: torch.device) -> dict[str, Any]:
    """The intervals (seconds from the step's start) of a profiled step: ``compute``,
    ``comm`` and ``wait`` (the main thread inside a collective call), and on CUDA the streams
    of the compute and communication kernels."""
    events = list(prof.profiler.kineto_results.events())
    cpu = torch.autograd.DeviceType.CPU
    start = min(e.start_ns() for e in events)

    def span(e: Any) -> Interval:
        return ((e.start_ns() - start) / 1e9, (e.end_ns() - start) / 1e9)

    result: dict[str, Any] = {
        "compute": [],
        "comm": [],
        "wait": [],
        "streams": {},
        "collectives": [],
    }
    if device.type == "cuda":
        kernels = [e for e in events if _is_kernel(e)]
        for e in kernels:
            kind = "comm" if e.name().startswith("nccl") else "compute"
            result[kind].append(span(e))
            if kind == "comm":
                result["collectives"].append(e.name())
            result["streams"].setdefault(kind, set()).add(e.device_resource_id())
    else:
        host = [e for e in events if e.device_type() == cpu]
        main = {e.start_thread_id() for e in host if e.name() in COMPUTE_OPS}
        for e in host:
            if e.name() in COMPUTE_OPS:
                result["compute"].append(span(e))
            elif e.name().startswith("gloo:"):
                result["comm"].append(span(e))
                result["collectives"].append(e.name())
        result["threads"] = {
            "compute": main,
            "comm": {e.start_thread_id() for e in host if e.name().startswith("gloo:")},
        }
    for e in events:
        if e.device_type() == cpu and e.name().startswith("c10d::"):
            result["wait"].append(span(e))
    result["step_seconds"] = (max(e.end_ns() for e in events) - start) / 1e9
    return result


def overlap_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any] | None:
    """A :func:`gpukit.parallel.launch` worker: train :class:`gpukit.sharding.RowTransformer`
    in each of ``config["variants"]`` (names of :data:`OVERLAP_VARIANTS`) and profile the last
    of its steps.

    ``config`` holds ``model`` (keyword arguments of the model), ``batches`` (each rank takes
    its slice of every minibatch: ``world_size`` must divide their size), ``variants`` and
    ``bucket_cap_mb`` (DDP's bucket size for ``"ddp, buckets"``). ``"fsdp"`` shards each
    block with FSDP2 and gathers it when it is needed; ``"fsdp, prefetch"`` also starts the
    next block's all-gather (``unshard(async_op=True)``) before each block's forward pass;
    ``"ddp, one bucket"`` reduces all gradients at once after the backward pass; ``"ddp,
    buckets"`` in buckets during it.

    Returns, on rank 0, per variant: the ``compute``, ``comm`` and ``wait`` intervals of the
    profiled step (seconds from its start: matrix products; collectives on gloo's threads or
    NCCL's kernels; the main thread inside a ``c10d::`` call), ``step_seconds``, and on CUDA
    the ``streams`` of the compute and communication kernels.

    Example:
        >>> from gpukit.parallel import launch
        >>> X = torch.rand(8, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        >>> config = {"model": {"d_model": 16, "n_heads": 2, "n_blocks": 2},
        ...           "batches": [(X, torch.arange(8) % 10)] * 2,
        ...           "variants": ["ddp, buckets"], "bucket_cap_mb": 0.001}
        >>> run = launch(overlap_worker, 2, config, run_timeout_s=300)[0]["ddp, buckets"]
        >>> len(run["comm"]) > 1  # several buckets, each an all-reduce
        True
    """
    check_type(config, "config", dict, "a dict")
    missing = [k for k in ("model", "batches", "variants", "bucket_cap_mb") if k not in config]
    if missing:
        raise ValueError(
            f"config must hold model, batches, variants, bucket_cap_mb; missing: {missing}"
        )
    unknown = [v for v in config["variants"] if v not in OVERLAP_VARIANTS]
    if unknown:
        raise ValueError(f"config['variants'] must name {list(OVERLAP_VARIANTS)}, got {unknown}")
    uneven = sorted({len(X) for X, _ in config["batches"] if len(X) % world_size})
    if uneven:
        raise ValueError(
            f"world_size ({world_size}) must divide the minibatch size ({uneven[0]}): each "
            "rank takes an equal slice; accepted world sizes are its divisors"
        )
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel
    from torch.profiler import ProfilerActivity, profile

    device = rank_device()
    mesh = init_device_mesh(device.type, (world_size,))
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    runs = {}
    for variant in config["variants"]:
        net: Any = RowTransformer(**config["model"]).to(device)
        if variant.startswith("fsdp"):
            blocks = list(net.blocks.values())
            for block in blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(net, mesh=mesh, reshard_after_forward=False)
            if variant == "fsdp, prefetch":
                # [prefetch]
                for block, following in itertools.pairwise(blocks):
                    # Starts the all-gather of the next block's weights without waiting for
                    # it: gloo runs it on its own thread while this block computes, and the
                    # next block's forward pass then only waits for what is left of it.
                    # (It returns None: a value returned would replace the block's inputs.)
                    def gather_ahead(module: Any, args: Any, following: Any = following) -> None:
                        following.unshard(async_op=True)

                    block.register_forward_pre_hook(gather_ahead)
                # [/prefetch]
        else:
            one = variant == "ddp, one bucket"
            bucket = 1e6 if one else config["bucket_cap_mb"]
            ids = [device.index] if device.type == "cuda" else None
            net = DistributedDataParallel(net, device_ids=ids, bucket_cap_mb=bucket)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        last = len(config["batches"]) - 1
        for step, (X, y) in enumerate(config["batches"]):
            X = X.tensor_split(world_size)[rank].to(device)
            y = y.tensor_split(world_size)[rank].to(device)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            dist.barrier()  # the profiled step starts together on every rank
            profiled = profile(activities=activities) if step == last else nullcontext()
            with profiled as prof:
                F.cross_entropy(net(X), y).backward()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            optimizer.step()
            optimizer.zero_grad()
        runs[variant] = _timeline(prof, device)
    return runs if rank == 0 else None


def _merge_close(intervals: list[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """Sorted ``(start, end)`` intervals with those less than ``gap`` apart joined."""
    merged: list[tuple[float, float]] = []
    for start, end in intervals:
        if merged and start - merged[-1][1] < gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def plot_overlap(runs: dict[str, dict[str, Any]]) -> Any:
    """Draw the timelines of :func:`overlap_worker`'s runs, one band per run: computing above,
    the main thread's calls into the collectives in the middle, communication below. Returns a
    matplotlib figure, which :func:`gpukit.plotting.figure_to_svg` renders.

    Example:
        >>> runs = {"toy": {"compute": [(0.0, 1.0)], "comm": [(0.5, 2.0)], "wait": []}}
        >>> fig = plot_overlap(runs)
        >>> [label.get_text() for label in fig.axes[0].get_yticklabels()]
        ['toy']
    """
    from matplotlib.figure import Figure

    if not isinstance(runs, dict) or not all(
        isinstance(r, dict) and {"compute", "comm", "wait"} <= r.keys() for r in runs.values()
    ):
        raise TypeError("runs must map names to overlap_worker's results (compute, comm, wait)")
    fig = Figure(figsize=(7, 1.2 + 0.7 * len(runs)), facecolor="white")
    ax = fig.subplots()
    colors = {"compute": "tab:blue", "wait": "tab:red", "comm": "tab:orange"}
    labels = {"compute": "computing", "wait": "calls into collectives", "comm": "collectives"}
    rows = {"compute": 0.45, "wait": 0.2, "comm": -0.05}
    names = list(runs)
    # Intervals closer than half a percent of the axis (two points of the figure) look like one
    # bar: drawn as one, and without edges or clipping (the bars lie inside the axes), they
    # keep the figure's SVG small (a step has hundreds of short operations).
    span = max((e for run in runs.values() for k in rows for _, e in run[k]), default=0.0)
    for i, name in enumerate(reversed(names)):
        for kind, offset in rows.items():
            merged = _merge_close(sorted(runs[name][kind]), gap=span / 200)
            bars = [(s * 1e3, (e - s) * 1e3) for s, e in merged]
            ax.broken_barh(
                bars,
                (i + offset - 0.05, 0.2),
                color=colors[kind],
                linewidth=0,
                clip_on=False,
                label=labels[kind] if i == 0 else None,
            )
    ax.set_yticks([i + 0.3 for i in range(len(names))], list(reversed(names)))
    ax.set_ylim(-0.4, len(names) + 0.1)
    ax.set_xlabel("milliseconds from the start of the step")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, fontsize="small")
    return fig
