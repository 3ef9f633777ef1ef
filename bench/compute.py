"""Compute speed of this machine: matmul throughput, copy bandwidth, ResNet-18 training.

Every timing comes from gpukit (``gpukit.measure`` for the kernels, ``gpukit.train_ddp``
for training), so GPU work is timed with CUDA events or after synchronizing, exactly as on
the pages.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
from typing import Any

import torch

import gpukit
from gpukit.measure import Measurement, copy_bandwidths, matmul_dtypes, matmul_throughput

#: Environment variables that change how fast the CPU work runs: recorded when set.
THREADING_VARS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "GPUKIT_PROFILE")

#: Matrix sizes: on a GPU in TFLOP/s, on a CPU (fp32 only) in GFLOP/s.
GPU_MATMUL_SIZES = (2048, 4096, 8192)
CPU_MATMUL_SIZES = (256, 512, 1024)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages ([] where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine(profile: gpukit.Profile) -> dict[str, Any]:
    """What the numbers were measured on."""
    n = gpukit.num_gpus()
    return {
        "description": gpukit.describe_machine(),
        "hardware_signature": gpukit.hardware_signature(),
        "cpu": gpukit.describe_device("cpu"),
        "cpu_count": os.cpu_count() or 1,
        "gpus": [torch.cuda.get_device_name(i) for i in range(n)],
        "torch": torch.__version__.split("+")[0],
        "torch_build": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "profile": profile.name,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": {"start": load_average()},
        "environment": {name: os.environ[name] for name in THREADING_VARS if name in os.environ},
    }


def _record(m: Measurement, **fields: Any) -> dict[str, Any]:
    return {
        **fields,
        "device": m.device,
        "what": m.what,
        "count": m.count,
        "seconds": m.seconds,
        "value": m.value,
        "unit": m.unit,
        "peak": m.peak,
        "fraction_of_peak": m.fraction_of_peak,
    }


def matmuls(device: torch.device, repeats: int) -> list[dict[str, Any]]:
    """Matmul throughput of every number format the device has, at a few sizes.

    ``repeats`` products are timed at the largest size, more at smaller ones (4 times as many
    at half the size), so that no timing is too short to be read reliably.
    """
    sizes = GPU_MATMUL_SIZES if device.type == "cuda" else CPU_MATMUL_SIZES
    out = []
    for dtype in matmul_dtypes(device):
        for n in sizes:
            count = repeats * (sizes[-1] // n) ** 2
            m = matmul_throughput(n, device, dtype=dtype, repeats=count)
            out.append(_record(m, kind="matmul", dtype=dtype, n=n))
    return out


def copies(device: torch.device, mib: int, repeats: int) -> list[dict[str, Any]]:
    """Host->device and device->host from pageable and pinned memory, device->device; on a
    CPU-only machine, which has no host<->device link, a host memory copy."""
    # The order in which copy_bandwidths measures them.
    directions = [("within_device", False)]
    if device.type == "cuda":
        directions = [
            ("host_to_device", False),
            ("host_to_device", True),
            ("device_to_host", False),
            ("device_to_host", True),
            ("within_device", False),
        ]
    measured = copy_bandwidths(mib * 2**20, device, repeats=repeats)
    return [
        _record(m, kind="copy", direction=d, pinned=p, mib=mib)
        for m, (d, p) in zip(measured, directions, strict=True)
    ]


def _training_run(world_size: int, work: gpukit.Workload) -> dict[str, Any]:
    result = gpukit.train_ddp(
        world_size,
        work.epochs,
        world_size * work.lr,
        world_size * work.batch_size,
        n_train=work.n_train,
        n_test=work.n_test,
        schedule=work.schedule,
        plot=False,
        verbose=False,
    )
    backend = "nccl" if result.devices[0].startswith("cuda") else "gloo"
    return {
        "processes": world_size,
        "backend": backend,
        # gpukit.launch gives each gloo process an equal share of the cores.
        "threads": None if backend == "nccl" else max(1, (os.cpu_count() or 1) // world_size),
        "devices": result.devices,
        "note": result.note,
        # The median, not the mean: on a GPU the first epoch also pays for warming up.
        "sec_per_epoch": statistics.median(s.seconds for s in result.history),
        "epoch_seconds": [s.seconds for s in result.history],
        "test_acc": result.test_acc,
        "n_train": result.n_train,
        "n_test": result.n_test,
        "batch_size": result.batch_size,
        "lr": result.lr,
        "schedule": result.schedule,
        "epochs": result.epochs,
    }


def training(profile: gpukit.Profile, log=print) -> list[dict[str, Any]]:
    """ResNet-18 with DDP on one device, then on every GPU (at least 2), or on 2 gloo
    processes on a CPU-only machine. With one GPU there is no second run."""
    work = profile.resnet
    n_gpus = gpukit.num_gpus()
    sizes = [1] if n_gpus == 1 else [1, max(2, n_gpus)]
    runs = []
    for world_size in sizes:
        log(f"compute: ResNet-18, {world_size} process(es), {work.describe()}")
        runs.append(_training_run(world_size, work))
        log(f"  {runs[-1]['sec_per_epoch']:.2f} sec/epoch, test acc {runs[-1]['test_acc']:.3f}")
    return runs
