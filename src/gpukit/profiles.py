"""Execution profiles: how much work the pages do on this machine.

One switch, the ``GPUKIT_PROFILE`` environment variable (set by ``nox -s docs -- --profile``),
changes the whole site, and the profile is part of the execution-cache key. A page states both
settings of a size where it uses it, ``d2l.pick(quick=800, full=4_000)``.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch

from gpukit._checks import check_choice, check_int
from gpukit._env import FASHION_MNIST_SIZES
from gpukit._env import PROFILE_VAR as ENV_VAR
from gpukit.results import SCHEDULES, describe_run

__all__ = ["PROFILES", "Profile", "Workload", "current_profile", "pick"]

T = TypeVar("T")


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
        resize: the side of the images in pixels, the ``resize`` argument of
            :func:`gpukit.data.load_data_fashion_mnist` (``None``: Fashion-MNIST's 28).

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
    resize: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.schedule, "schedule", SCHEDULES)
        if self.resize is not None:
            check_int(self.resize, "resize", 1, "or None")

    def describe(self, translate: Callable[[str], str] = str) -> str:
        """One line with the amount of data and the settings, for page outputs.

        ``translate`` maps each English phrase to the reader's language (the site's About page
        passes its gettext).
        """
        settings = describe_run(
            n_train=self.n_train or FASHION_MNIST_SIZES["train"],
            n_test=self.n_test or FASHION_MNIST_SIZES["test"],
            batch_size=self.batch_size,
            lr=self.lr,
            schedule=self.schedule,
            epochs=self.epochs,
            resize=self.resize,
            translate=translate,
        )
        if not self.name:
            return settings
        return translate("{name}: {settings}").format(name=self.name, settings=settings)


@dataclass(frozen=True)
class Profile:
    """The workload of one execution profile.

    Attributes:
        name: ``"quick"`` or ``"full"``.
        lenet: the LeNet runs of "multi-GPU training from scratch" (see :class:`Workload`).
        resnet: the ResNet-18 runs of the concise multi-GPU and DDP pages, for one device.

    The pages' other sizes are in their own code, with :func:`pick`.
    """

    name: str
    lenet: Workload
    resnet: Workload


#: The two profiles by name, ``quick`` (laptops, CI) and ``full`` (GPU runners).
PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick",
        # A few seconds per training run on 2 CPU cores, and still past chance: LeNet needs
        # small batches to leave its plateau, ResNet-18's batch norm needs optimizer steps (so
        # batch 4, warm-up and cosine decay) and its time is set by its steps (so 14x14 images).
        # The measurements behind each size: MAINTAINERS.md, "The quick profile's sizes".
        lenet=Workload(3_000, 1_000, epochs=4, batch_size=16, lr=0.25, name="LeNet"),
        resnet=Workload(
            384,
            256,
            epochs=2,
            batch_size=4,
            lr=0.0125,
            name="ResNet-18",
            schedule="warmup-cosine",
            resize=14,
        ),
    ),
    # D2L's settings. LeNet keeps batch 256 and lr 0.2 on two GPUs; for ResNet-18 D2L doubles
    # both on two GPUs (512, 0.2), so a page multiplies resnet.batch_size and resnet.lr by the
    # number of devices. With a constant rate D2L's two-GPU ResNet-18 ends at a test accuracy
    # of 0.67-0.73 against 0.91 on one GPU; a warm-up and a decay to zero (the same for every
    # run) are there so that the two-GPU run keeps the accuracy of the one-GPU run.
    "full": Profile(
        "full",
        lenet=Workload(None, None, epochs=10, batch_size=256, lr=0.2, name="LeNet"),
        resnet=Workload(
            None,
            None,
            epochs=10,
            batch_size=256,
            lr=0.1,
            name="ResNet-18",
            schedule="warmup-cosine",
        ),
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


def pick(*, quick: T, full: T, profile: str | None = None) -> T:
    """Return the value for ``profile`` (``"quick"`` or ``"full"``; ``None``: the current one).

    A page states both settings of a workload where it uses them, so a reader sees what the
    quick build (laptops, CI) and the full build (GPU runners) run::

        n = d2l.pick(quick=800, full=4_000)  # side of the matrices (D2L: 4,000)

    The profile is part of the execution cache's key, and the page's code is too.

    Example:
        >>> pick(quick=800, full=4_000) == (800 if current_profile().name == "quick" else 4_000)
        True
        >>> pick(quick=800, full=4_000, profile="full")  # what the GPU runners run
        4000
    """
    if type(quick) is not type(full):
        raise TypeError(
            f"quick and full must be of one type, got {type(quick).__name__} "
            f"and {type(full).__name__}"
        )
    if profile is None:
        profile = current_profile().name
    check_choice(profile, "profile", PROFILES)
    return quick if profile == "quick" else full
