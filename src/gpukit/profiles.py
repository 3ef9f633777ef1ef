"""Execution profiles: how much work the pages do on this machine.

Every page reads its workload from :func:`current_profile` instead of deciding for itself,
so one switch (the ``GPUKIT_PROFILE`` environment variable, set by ``nox -s docs -- --profile``)
changes the whole site, and the profile is part of the execution-cache key.

``quick``
    The default without a GPU: real Fashion-MNIST, small subsets, few epochs, so that the
    whole site executes in minutes on a 2-core laptop.
``full``
    The default with a GPU: D2L's settings (all 60,000 training images, 10 epochs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

__all__ = ["PROFILES", "Profile", "current_profile"]

ENV_VAR = "GPUKIT_PROFILE"


@dataclass(frozen=True)
class Profile:
    """The workload of one execution profile.

    Attributes:
        name: ``"quick"`` or ``"full"``.
        n_train: training examples used (``None``: all 60,000).
        n_test: test examples used (``None``: all 10,000).
        epochs: training epochs of the multi-GPU pages.
    """

    name: str
    n_train: int | None
    n_test: int | None
    epochs: int

    def describe(self) -> str:
        """One line saying how much data this profile uses, for page outputs.

        Example:
            >>> PROFILES["full"].describe()
            'profile full: 60,000 training / 10,000 test images, 10 epochs'
        """
        train = f"{self.n_train or 60_000:,}"
        test = f"{self.n_test or 10_000:,}"
        return f"profile {self.name}: {train} training / {test} test images, {self.epochs} epochs"


PROFILES: dict[str, Profile] = {
    "quick": Profile("quick", n_train=2_000, n_test=1_000, epochs=2),
    "full": Profile("full", n_train=None, n_test=None, epochs=10),
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
