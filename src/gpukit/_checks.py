"""Argument checks shared by gpukit's modules, so that every bad argument reads the same way.

A public function checks its arguments once with these; the functions it calls trust them.
Each message starts with the argument's name and says what is accepted::

    >>> check_int(-1, "i", 0, "a GPU index such as 0 or 1")
    Traceback (most recent call last):
    ...
    ValueError: i must be >= 0 (a GPU index such as 0 or 1), got -1
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from numbers import Real

import torch


def check_int(value: object, name: str, minimum: int | None = 1, hint: str = "") -> int:
    """``value`` if it is an int ``>= minimum`` (any int for ``None``); never a bool."""
    note = f" ({hint})" if hint else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int{note}, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}{note}, got {value}")
    return value


def check_number(value: object, name: str, *, zero: bool = False) -> float:
    """``value`` as a float if it is a finite real number > 0 (>= 0 with ``zero``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return float(value)


def check_type(value: object, name: str, types: type | tuple[type, ...], what: str) -> None:
    """Raise ``TypeError("<name> must be <what>, got <type>")`` unless ``value`` is a ``types``."""
    if not isinstance(value, types):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")


def check_choice(value: object, name: str, choices: Collection[str]) -> str:
    """``value`` if it is one of ``choices``; the message lists them all."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_tensors(values: object, name: str) -> list[torch.Tensor]:
    """``values`` as a list if it is an iterable of tensors (a list, ``net.parameters()``)."""
    if isinstance(values, torch.Tensor | str) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of tensors, got {type(values).__name__}")
    values = list(values)
    for i, value in enumerate(values):
        check_type(value, f"{name}[{i}]", torch.Tensor, "a torch.Tensor")
    return values


def check_qkv(q: object, k: object, v: object, layout: str = "(batch, heads, n, d)") -> None:
    """Queries, keys and values: 4-D tensors ``layout`` of one shape (attention's inputs)."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        check_type(tensor, name, torch.Tensor, "a torch.Tensor")
        if tensor.dim() != 4:
            raise ValueError(f"{name} must be 4-D {layout}, got shape {tuple(tensor.shape)}")
    if not q.shape == k.shape == v.shape:
        raise ValueError(
            f"q, k and v must have the same shape {layout}, got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
