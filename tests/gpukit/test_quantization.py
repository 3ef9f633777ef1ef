"""Tests of gpukit.quantization: torchao's known import messages dropped, others kept; bytes."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import torch
from torch import nn

from gpukit.quantization import quiet_torchao, weight_bytes

KNOWN = [
    ("torchao", "Failed to load /site-packages/torchao/_C_mxfp8.cpython-310.so: no CUDA"),
    ("torch.utils._pytree", "<enum 'X'> is an Enum subclass and is now natively supported by"),
]


@pytest.mark.parametrize(("logger", "message"), KNOWN)
def test_known_messages_are_dropped_inside_only(logger, message, caplog):
    with quiet_torchao():
        logging.getLogger(logger).warning(message)
    assert message not in caplog.text
    logging.getLogger(logger).warning(message)  # outside the block: shown as before
    assert message in caplog.text


def test_other_warnings_still_show(caplog):
    with quiet_torchao():
        logging.getLogger("torchao").warning("a real problem")
        logging.getLogger("torch.utils._pytree").warning("another real problem")
        logging.getLogger("other").warning("Failed to load x.so")  # not torchao's
    assert "a real problem" in caplog.text
    assert "another real problem" in caplog.text
    assert "Failed to load x.so" in caplog.text


def test_filters_are_removed_after_an_error():
    with pytest.raises(RuntimeError), quiet_torchao():
        raise RuntimeError("boom")
    assert not logging.getLogger("torchao").filters


def test_importing_torchao_prints_nothing_known():
    # In a fresh process, as a page's kernel imports it: in this one, other tests have already
    # set up torch's logging, and torchao may be imported already.
    pytest.importorskip("torchao")
    code = (
        "from gpukit.quantization import quiet_torchao\n"
        "with quiet_torchao():\n"
        "    import torchao\n"
        "    from torchao.prototype.mx_formats.mx_tensor import MXTensor\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert "Failed to load" not in result.stderr and "Enum subclass" not in result.stderr


def test_weight_bytes_counts_shared_and_quantized_tensors():
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 4, bias=False))
    assert weight_bytes(net) == (12 + 3 + 12) * 4
    tied = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5, bias=False))
    tied[1].weight = tied[0].weight
    assert weight_bytes(tied) == 20 * 4  # one tensor, counted once
    half = nn.Linear(8, 8).to(torch.bfloat16)
    assert weight_bytes(half) == (64 + 8) * 2


def test_weight_bytes_looks_inside_torchao_tensors():
    pytest.importorskip("torchao")
    with quiet_torchao():
        from torchao.quantization import Int8WeightOnlyConfig, quantize_
    net = nn.Sequential(nn.Linear(64, 32, bias=False))
    quantize_(net, Int8WeightOnlyConfig())
    # int8 numbers, one scale per row (fp32) and zero points, not 64 * 32 fp32 numbers
    assert 64 * 32 <= weight_bytes(net) < 64 * 32 * 2


def test_bad_input():
    with pytest.raises(TypeError, match=r"net must be a torch\.nn\.Module"):
        weight_bytes(torch.zeros(3))
