"""Argument checks shared by gpukit's modules, so that every bad count reads the same way."""

from __future__ import annotations

from collections.abc import Collection


def check_int(value: object, name: str, minimum: int | None = 1, hint: str = "") -> int:
    """Return ``value`` if it is an int ``>= minimum`` (any int when ``minimum`` is None).

    ``bool`` is refused although Python counts it as an int: ``repeats=True`` is a mistake.
    ``hint`` says what the number means; the messages name the argument and what is accepted.

    Example:
        >>> check_int(3, "repeats")
        3
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


def check_choice(value: object, name: str, choices: Collection[str]) -> str:
    """Return ``value`` if it is one of ``choices``; the message lists them all.

    Example:
        >>> check_choice("cosine", "schedule", ["constant", "warmup-cosine"])
        Traceback (most recent call last):
        ...
        ValueError: schedule must be one of ['constant', 'warmup-cosine'], got 'cosine'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value  # type: ignore[return-value]
