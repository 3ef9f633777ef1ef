"""Argument checks shared by gpukit's modules, so that every bad argument reads the same way.

A public function checks its arguments once with these; the functions it calls trust them.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from numbers import Real


def check_int(value: object, name: str, minimum: int | None = 1, hint: str = "") -> int:
    """Return ``value`` if it is an int ``>= minimum`` (any int when ``minimum`` is None).

    ``bool`` is refused although Python counts it as an int: ``repeats=True`` is a mistake.

    Example:
        >>> check_int(-1, "i", 0, "a GPU index such as 0 or 1")
        Traceback (most recent call last):
        ...
        ValueError: i must be >= 0 (a GPU index such as 0 or 1), got -1
    """
    note = f" ({hint})" if hint else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int{note}, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}{note}, got {value}")
    return value


def check_number(value: object, name: str, *, zero: bool = False) -> float:
    """Return ``value`` as a float if it is a finite real number > 0 (>= 0 with ``zero``).

    Example:
        >>> check_number(float("nan"), "seconds", zero=True)
        Traceback (most recent call last):
        ...
        ValueError: seconds must be a finite number >= 0, got nan
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return float(value)


def check_type(value: object, name: str, types: type | tuple[type, ...], what: str) -> None:
    """Raise ``TypeError("<name> must be <what>, got <type>")`` unless ``value`` is of ``types``.

    Example:
        >>> check_type(1, "pinned", bool, "a bool")
        Traceback (most recent call last):
        ...
        TypeError: pinned must be a bool, got int
    """
    if not isinstance(value, types):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")


def check_choice(value: object, name: str, choices: Collection[str]) -> str:
    """Return ``value`` if it is one of ``choices``; the message lists them all.

    Example:
        >>> check_choice("cosine", "schedule", ["constant", "warmup-cosine"])
        Traceback (most recent call last):
        ...
        ValueError: schedule must be one of ['constant', 'warmup-cosine'], got 'cosine'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value
