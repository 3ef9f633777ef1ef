"""Where the memory of training goes: computed (:func:`training_memory`) and measured
(:func:`measure_memory`), on a GPU and on a CPU alike.

Training keeps four things in memory: the parameters, their gradients, the optimizer's state
(nothing for plain SGD, one tensor per parameter for momentum, two for Adam) and the
activations that the forward pass saves for the backward pass. The first three depend on the
number of parameters alone and are computed; the activations depend on the network and the
batch, and are measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from gpukit._checks import check_choice, check_int
from gpukit.devices import existing_device

__all__ = ["OPTIMIZER_STATES", "MemoryUse", "format_bytes", "measure_memory", "training_memory"]

#: How many fp32 tensors the optimizer keeps for each parameter tensor (plain SGD none, SGD
#: with momentum its velocity, Adam its first and second moments).
OPTIMIZER_STATES = {"sgd": 0, "momentum": 1, "adam": 2}
_PRECISIONS = ("fp32", "mixed")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(nbytes: int) -> str:
    """A size in binary units, as PyTorch's memory messages write it: ``'44.7 MiB'``.

    Example:
        >>> format_bytes(512), format_bytes(46_883_272), format_bytes(3 * 2**30)
        ('512 B', '44.7 MiB', '3.0 GiB')
    """
    check_int(nbytes, "nbytes", None, "a number of bytes")
    size = float(abs(nbytes))
    unit = 0
    while size >= 1024 and unit < len(_UNITS) - 1:
        size, unit = size / 1024, unit + 1
    sign = "-" if nbytes < 0 else ""
    return f"{sign}{int(size)} B" if unit == 0 else f"{sign}{size:.1f} {_UNITS[unit]}"


def training_memory(
    params: int | nn.Module, optimizer: str = "adam", precision: str = "fp32", shards: int = 1
) -> dict[str, int]:
    """Bytes per device of the parameters, gradients and optimizer state of training.

    ``"fp32"``: 4 bytes a parameter for the weights, 4 for the gradients and 4 for each
    optimizer state (:data:`OPTIMIZER_STATES`). ``"mixed"``: weights and gradients in 16 bits
    (2 + 2 bytes), and the optimizer keeps an fp32 master copy of the weights (4, counted as
    optimizer state) besides its fp32 states. The total is the same: mixed precision saves
    activations, not state (Adam: 2 + 2 + 4 + 8 = 16 bytes a parameter). PyTorch's autocast
    keeps fp32 weights and gradients and casts on the fly: 4 + 4 + 8, again 16.
    Activations are not included.

    Args:
        params: a number of parameters, or a module whose parameters are counted.
        optimizer: ``"sgd"``, ``"momentum"`` or ``"adam"``.
        precision: ``"fp32"`` or ``"mixed"``.
        shards: devices that each keep ``1/shards`` of all three (FSDP's full sharding,
            ZeRO stage 3); 1 is plain training or data parallelism, where every device
            keeps everything.

    Example:
        >>> training_memory(1_000_000)
        {'parameters': 4000000, 'gradients': 4000000, 'optimizer state': 8000000}
        >>> sum(training_memory(1_000_000, "adam", "mixed").values()) / 1_000_000
        16.0
        >>> training_memory(nn.Linear(1000, 1000), "momentum", shards=4)["optimizer state"]
        1001000
    """
    if isinstance(params, nn.Module):
        params = sum(p.numel() for p in params.parameters())
    else:
        check_int(params, "params", 0, "a number of parameters or an nn.Module")
    check_choice(optimizer, "optimizer", OPTIMIZER_STATES)
    check_choice(precision, "precision", _PRECISIONS)
    check_int(shards, "shards", 1, "devices sharing the state")
    half = precision == "mixed"
    per_parameter = {
        "parameters": 2 if half else 4,
        "gradients": 2 if half else 4,
        "optimizer state": 4 * OPTIMIZER_STATES[optimizer] + (4 if half else 0),
    }
    return {part: -(-params * size // shards) for part, size in per_parameter.items()}


@dataclass(frozen=True)
class MemoryUse:
    """What one call allocated on a device, above what was allocated before it.

    Attributes:
        peak: bytes at the busiest moment of the call.
        held: bytes still allocated when the call returned (its result included).

    Example:
        >>> print(MemoryUse(peak=3 * 2**20, held=2**20))
        peak 3.0 MiB, held 1.0 MiB
    """

    peak: int
    held: int

    def __str__(self) -> str:
        return f"peak {format_bytes(self.peak)}, held {format_bytes(self.held)}"


def _cpu_memory_use(fn: Callable[[], Any]) -> MemoryUse:
    # PyTorch keeps no allocation counters for the CPU, but its profiler records every
    # allocation (+bytes) and free (-bytes); their running sum is the allocated memory.
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    del result  # after the profiler has stopped: the result counts as held
    events = [
        e
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    running = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        running += event.nbytes()
        peak = max(peak, running)
    return MemoryUse(peak=peak, held=running)


def measure_memory(fn: Callable[[], Any], device: str | torch.device = "cpu") -> MemoryUse:
    """Call ``fn()`` once and measure the memory its tensors take on ``device``.

    On a GPU this reads the caching allocator's counters (``reset_peak_memory_stats``,
    ``max_memory_allocated``, ``memory_allocated``): memory given to tensors, not what the
    allocator keeps cached. On a CPU, where PyTorch keeps no such counters, ``torch.profiler``
    with ``profile_memory=True`` records every allocation and free, and their running sum gives
    the same two numbers. Memory allocated before the call (parameters, optimizer state) is not
    counted, only what the call adds on top of it.

    Call ``fn`` once before measuring it: on a GPU the first call of a kind also allocates
    what then stays for the whole process, through the same allocator (the first matrix
    product of a thread allocates cuBLAS's workspace, 32 MiB on a Hopper GPU), and that
    would count as held by the call that happened to come first.

    Args:
        fn: a function without arguments, e.g. one training step.
        device: the CPU or a CUDA device.

    Example:
        >>> measure_memory(lambda: torch.ones(256, 1024))  # 1 MiB, returned: still held
        MemoryUse(peak=1048576, held=1048576)
        >>> measure_memory(lambda: torch.ones(256, 1024).sum()).held  # only the sum is left
        4
        >>> if torch.cuda.is_available():
        ...     use = measure_memory(lambda: torch.ones(256, 1024, device="cuda"), "cuda")
        ...     assert use.peak == use.held == 2**20
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function without arguments, got {type(fn).__name__}")
    dev = existing_device(device)
    if dev.type == "cpu":
        return _cpu_memory_use(fn)
    torch.cuda.synchronize(dev)
    before = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    result = fn()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev)
    held = torch.cuda.memory_allocated(dev)
    del result
    return MemoryUse(peak=peak - before, held=held - before)
