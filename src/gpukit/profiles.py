"""Execution profiles: how much work the pages do on this machine.

Every page reads its workload from :func:`current_profile` instead of deciding for itself,
so one switch (the ``GPUKIT_PROFILE`` environment variable, set by ``nox -s docs -- --profile``)
changes the whole site, and the profile is part of the execution-cache key.

``quick``
    The default without a GPU: real Fashion-MNIST, small subsets, few epochs, so that the
    whole site executes in minutes on a 2-core laptop.
``full``
    The default with a GPU: D2L's settings (all 60,000 training images, 10 epochs).

The training pages read their own :class:`Workload`: ``profile.lenet`` for the LeNet of
"multi-GPU training from scratch", ``profile.resnet`` for the ResNet-18 of the concise
multi-GPU and DistributedDataParallel pages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from gpukit._checks import check_choice
from gpukit.training import SCHEDULES

__all__ = ["PROFILES", "Profile", "Workload", "current_profile"]

ENV_VAR = "GPUKIT_PROFILE"


def _count(n: int | None, total: int) -> str:
    return f"{n or total:,}"


@dataclass(frozen=True)
class Workload:
    """The settings of one training run on one device.

    Attributes:
        n_train: training examples used (``None``: all 60,000).
        n_test: test examples used (``None``: all 10,000).
        epochs: training epochs.
        batch_size: minibatch size of a run on one device.
        lr: learning rate of a run on one device. With more devices D2L keeps LeNet's batch
            and learning rate but multiplies ResNet-18's by the number of GPUs.
        name: the network, printed by :meth:`describe`.
        schedule: the learning rate over the steps, a key of :data:`gpukit.training.SCHEDULES`:
            ``"constant"`` (D2L's) or ``"warmup-cosine"`` (:func:`gpukit.training.lr_factor`).

    Example:
        >>> print(PROFILES["full"].resnet.describe())  # doctest: +NORMALIZE_WHITESPACE
        ResNet-18: 60,000 training / 10,000 test images, batch 256,
        lr 0.1 (warm-up + cosine decay), 10 epochs
    """

    n_train: int | None
    n_test: int | None
    epochs: int
    batch_size: int
    lr: float
    name: str = ""
    schedule: str = "constant"

    def __post_init__(self) -> None:
        check_choice(self.schedule, "schedule", SCHEDULES)

    def describe(self) -> str:
        """One line with the amount of data and the settings, for page outputs."""
        prefix = f"{self.name}: " if self.name else ""
        schedule = SCHEDULES[self.schedule]
        return (
            f"{prefix}{_count(self.n_train, 60_000)} training / "
            f"{_count(self.n_test, 10_000)} test images, batch {self.batch_size}, "
            f"lr {self.lr:g}{f' ({schedule})' if schedule else ''}, "
            f"{self.epochs} epoch{'s' if self.epochs != 1 else ''}"
        )


# D2L's settings. LeNet keeps batch 256 and lr 0.2 on two GPUs; for ResNet-18 D2L doubles
# both on two GPUs (512, 0.2), so a page multiplies resnet.batch_size and resnet.lr by the
# number of devices. With a constant rate D2L's two-GPU ResNet-18 ends at a test accuracy of
# 0.67-0.73 against 0.91 on one GPU; a warm-up and a decay to zero (the same for every run)
# are there so that the two-GPU run keeps the accuracy of the one-GPU run.
_FULL_LENET = Workload(None, None, epochs=10, batch_size=256, lr=0.2, name="LeNet")
_FULL_RESNET = Workload(
    None, None, epochs=10, batch_size=256, lr=0.1, name="ResNet-18", schedule="warmup-cosine"
)


@dataclass(frozen=True)
class Profile:
    """The workload of one execution profile.

    Attributes:
        name: ``"quick"`` or ``"full"``.
        device_matmul_size: side of the large square matrices multiplied to compare devices
            (CPU vs GPU, one device vs two) on the GPUs page (``sec-use-gpu``).
        device_matmul_small_size: side of the small matrices in the same comparison.
        device_matmul_repeats: how many multiplications each of those timings runs.
        norm_log_steps: matrix products whose Frobenius norms are logged in
            the GPUs page's exercise on logging (D2L: 1,000).
        norm_log_size: side of the square matrices in that exercise (D2L: 100).
        autopar_matrix_size: side of the square matrices multiplied in
            :ref:`sec-auto-parallelism` (D2L: 4,000).
        autopar_num_matmuls: matrix products per run in :ref:`sec-auto-parallelism`
            (D2L: 50).
        async_matrix_size: side of the random square matrices generated and multiplied in
            :ref:`sec-async` (D2L: 1,000; larger on a GPU so that the GPU's work, not the
            launch overhead, dominates the synchronized timings).
        async_repeats: how many matrices each timing loop of :ref:`sec-async` generates
            and multiplies (D2L: 10).
        async_steps: tiny ``y = x + 1`` steps per loop in the synchronous vs asynchronous
            comparison of :ref:`sec-async` (D2L: 10,000).
        hw_copy_mib: MiB copied per transfer in the bandwidth measurements of
            :ref:`sec-hardware` (:func:`gpukit.measure.copy_bandwidth`).
        hw_copy_repeats: transfers timed together in each of those measurements.
        hw_launch_repeats: tiny operations timed together to measure launch latency
            (:func:`gpukit.measure.launch_latency`).
        hw_matmul_size: side of the square matrices in the throughput measurements of
            :ref:`sec-hardware` (:func:`gpukit.measure.matmul_throughput`).
        hw_matmul_repeats: matrix products timed together in each of those measurements.
        hw_stride_elements: float32 elements of the tensor read with growing strides in the
            memory-access exercise of :ref:`sec-hardware`.
        ps_grad_numel: float32 numbers in each device's gradient when the three aggregation
            strategies are compared in :ref:`sec-parameterserver` (full: 40 million, the 160 MB
            of the section's estimates).
        ps_ring_processes: processes in the ring all-reduce of :ref:`sec-parameterserver` on a
            machine with fewer GPUs (with at least that many GPUs: one process per GPU).
        ps_ring_numel: float32 numbers each process sums in that ring all-reduce.
        ps_sweep_numels: further tensor sizes (float32 numbers), besides ``ps_ring_numel``,
            timed in the exercise on ring all-reduce time vs size; each one starts a new group
            of processes.
        multigpu_allreduce_repeats: rounds of all-reducing LeNet's gradients over two
            devices timed together in the exercise on faster all-reduce variants of
            :ref:`sec-multi-gpu`.
        lenet: the LeNet runs of "multi-GPU training from scratch" (see :class:`Workload`).
        resnet: the ResNet-18 runs of the concise multi-GPU and DDP pages, for one device.
    """

    name: str
    device_matmul_size: int
    device_matmul_small_size: int
    device_matmul_repeats: int
    norm_log_steps: int
    norm_log_size: int
    autopar_matrix_size: int
    autopar_num_matmuls: int
    async_matrix_size: int
    async_repeats: int
    async_steps: int
    hw_copy_mib: int
    hw_copy_repeats: int
    hw_launch_repeats: int
    hw_matmul_size: int
    hw_matmul_repeats: int
    hw_stride_elements: int
    ps_grad_numel: int
    ps_ring_processes: int
    ps_ring_numel: int
    ps_sweep_numels: tuple[int, ...]
    multigpu_allreduce_repeats: int
    lenet: Workload = _FULL_LENET
    resnet: Workload = _FULL_RESNET

    def describe(self) -> str:
        """The profile's name and its training runs (the pages' other sizes are in their outputs).

        Example:
            >>> print(PROFILES["quick"].describe())
            profile quick: LeNet: 3,000 training / 1,000 test images, batch 16, lr 0.25, 4 epochs;
            ResNet-18: 512 training / 256 test images, batch 16, lr 0.05, 2 epochs
        """
        return f"profile {self.name}: {self.lenet.describe()};\n{self.resnet.describe()}"


#: The two profiles by name, ``quick`` (laptops, CI) and ``full`` (GPU runners).
PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick",
        device_matmul_size=1024,
        device_matmul_small_size=10,
        device_matmul_repeats=5,
        norm_log_steps=500,
        norm_log_size=100,
        autopar_matrix_size=800,
        autopar_num_matmuls=10,
        async_matrix_size=1_000,
        async_repeats=10,
        async_steps=10_000,
        hw_copy_mib=64,
        hw_copy_repeats=10,
        hw_launch_repeats=2_000,
        hw_matmul_size=1_024,
        hw_matmul_repeats=10,
        hw_stride_elements=2**24,
        ps_grad_numel=1_000_000,
        ps_ring_processes=3,
        ps_ring_numel=2_000_000,
        ps_sweep_numels=(1_000, 10_000_000),
        multigpu_allreduce_repeats=50,
        # A few seconds per training run on 2 CPU cores. LeNet's std-0.01 initialisation
        # sits on a plateau for a few hundred steps, so it takes small batches to get past it
        # (test accuracy 0.66-0.73 after these 750 steps, with one replica or two and for
        # several seeds; with fewer steps it may stay at 0.1, with lr 0.4 it may fall back).
        # ResNet-18 costs ~27 ms of one core per training image (~60 images/s on 2 quiet
        # cores); the concise page trains it three times (one device, DataParallel with twice
        # the batch, 2 DDP processes), ~115 CPU-seconds in all, ~75 s on 2 quiet cores. Two
        # epochs, so that the curves are lines. One device: 64 steps, test acc 0.63; the
        # two-device runs make 32 steps, too few for batch norm's running averages, and
        # evaluate near chance (the page shows and explains this). A constant learning rate:
        # over 64 steps a warm-up and decay cost more than they save (with "warmup-cosine" the
        # concise page's one-device run fell from 0.63 to 0.24 test accuracy, the two-device
        # runs stayed near chance).
        lenet=Workload(3_000, 1_000, epochs=4, batch_size=16, lr=0.25, name="LeNet"),
        resnet=Workload(512, 256, epochs=2, batch_size=16, lr=0.05, name="ResNet-18"),
    ),
    "full": Profile(
        "full",
        device_matmul_size=4096,
        device_matmul_small_size=10,
        device_matmul_repeats=10,
        norm_log_steps=1000,
        norm_log_size=100,
        autopar_matrix_size=4_000,
        autopar_num_matmuls=50,
        async_matrix_size=4_096,
        async_repeats=10,
        async_steps=10_000,
        hw_copy_mib=256,
        hw_copy_repeats=20,
        hw_launch_repeats=10_000,
        hw_matmul_size=8_192,
        hw_matmul_repeats=20,
        hw_stride_elements=2**27,
        ps_grad_numel=40_000_000,
        ps_ring_processes=2,
        ps_ring_numel=40_000_000,
        ps_sweep_numels=(10_000, 100_000_000),
        multigpu_allreduce_repeats=200,
        lenet=_FULL_LENET,
        resnet=_FULL_RESNET,
    ),
}


def current_profile() -> Profile:
    """Return the profile named by ``GPUKIT_PROFILE``, else ``full`` with a GPU, ``quick`` without.

    Example:
        >>> current_profile().name in PROFILES
        True
    """
    name = os.environ.get(ENV_VAR, "").strip()
    if not name:
        name = "full" if torch.cuda.is_available() else "quick"
    if name not in PROFILES:
        raise ValueError(f"{ENV_VAR} must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name]
