"""Quantization helpers: importing torchao quietly, and counting a quantized model's bytes.

torchao (the quantization page's library) logs two kinds of messages on import that say
nothing about the reader's code: on a machine without CUDA it fails to load its GPU kernels
("Failed to load .../_C_mxfp8...so"), and with torch 2.13 it registers enums in a way torch
now deprecates ("... is an Enum subclass and is now natively supported by torch.compile").
:func:`quiet_torchao` drops exactly those records while its block runs, and lets every other
warning through. :func:`weight_bytes` counts what a model's weights occupy, looking inside
torchao's quantized tensors (their integer data and scales) instead of at the dtype they
pretend to have.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

import torch
from torch import nn

from gpukit._checks import check_type

__all__ = ["quiet_torchao", "weight_bytes"]

# The loggers that print them, and the messages (regular expressions) known to be harmless.
_KNOWN = {
    "torchao": re.compile(r"Failed to load .*\.so"),
    "torch.utils._pytree": re.compile(r"is an Enum subclass and is now natively supported"),
}


class _DropKnown(logging.Filter):
    def __init__(self, pattern: re.Pattern) -> None:
        super().__init__()
        self.pattern = pattern

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.search(record.getMessage())


@contextlib.contextmanager
def quiet_torchao() -> Iterator[None]:
    """Within the block, drop torchao's known import messages; anything else still shows.

    Example:
        >>> import logging
        >>> log = logging.getLogger("torchao")
        >>> messages = ["Failed to load /x/_C_mxfp8.so: no CUDA", "a real warning"]
        >>> with quiet_torchao():  # which of the two records would the logger pass on?
        ...     kept = [bool(log.filter(logging.makeLogRecord({"msg": m}))) for m in messages]
        >>> kept
        [False, True]
    """
    filters = []
    for name, pattern in _KNOWN.items():
        log_filter = _DropKnown(pattern)
        logging.getLogger(name).addFilter(log_filter)
        filters.append((name, log_filter))
    try:
        yield
    finally:
        for name, log_filter in filters:
            logging.getLogger(name).removeFilter(log_filter)


def _tensor_bytes(t: torch.Tensor) -> int:
    if hasattr(t, "__tensor_flatten__"):  # a tensor subclass (torchao's): count its parts
        names, _ = t.__tensor_flatten__()
        return sum(_tensor_bytes(getattr(t, name)) for name in names)
    return t.numel() * t.element_size()


def weight_bytes(net: nn.Module) -> int:
    """Bytes of ``net``'s parameters and buffers, each shared tensor once.

    A quantized weight (a tensor subclass such as torchao's ``Int8Tensor``) is counted by the
    tensors it holds: its integer data and its scales.

    Example:
        >>> weight_bytes(nn.Linear(4, 3))  # 12 weights and 3 biases, 4 bytes each
        60
    """
    check_type(net, "net", nn.Module, "a torch.nn.Module")
    seen = {}
    for t in [*net.parameters(), *net.buffers()]:
        seen[id(t)] = t
    return sum(_tensor_bytes(t) for t in seen.values())
