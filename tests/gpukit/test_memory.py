"""Tests of gpukit.memory: the arithmetic of training memory and the measured peak."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpukit.memory import MemoryUse, format_bytes, measure_memory, training_memory


@pytest.mark.parametrize(
    ("optimizer", "precision", "per_parameter"),
    [
        ("sgd", "fp32", 8),
        ("momentum", "fp32", 12),
        ("adam", "fp32", 16),
        ("sgd", "mixed", 8),
        ("adam", "mixed", 16),  # 2 + 2 + (4 master + 8 moments): the usual 16 bytes
    ],
)
def test_bytes_per_parameter(optimizer, precision, per_parameter):
    assert sum(training_memory(1_000, optimizer, precision).values()) == 1_000 * per_parameter


def test_mixed_precision_moves_bytes_from_weights_to_the_optimizer():
    assert training_memory(10, "adam", "mixed") == {
        "parameters": 20,
        "gradients": 20,
        "optimizer state": 120,
    }


def test_a_module_counts_its_parameters():
    net = nn.Linear(3, 2)  # 6 weights + 2 biases
    assert training_memory(net, "sgd") == training_memory(8, "sgd")


def test_shards_divide_everything_rounding_up():
    whole = training_memory(1_001, "adam")
    sharded = training_memory(1_001, "adam", shards=8)
    assert all(sharded[k] == -(-whole[k] // 8) for k in whole)


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (3 * 2**30, "3.0 GiB"),
        (-(2**20), "-1.0 MiB"),
    ],
)
def test_format_bytes(nbytes, text):
    assert format_bytes(nbytes) == text


def test_measure_memory_on_the_cpu_sees_peak_and_held():
    def fn():
        big = torch.ones(2**20)  # 4 MiB, freed before returning
        small = torch.ones(2**10)  # 4 KiB, returned
        del big
        return small

    assert measure_memory(fn) == MemoryUse(peak=4 * 2**20 + 4 * 2**10, held=4 * 2**10)


def test_measure_memory_counts_only_what_the_call_adds():
    keep = torch.ones(2**20)  # allocated before: not counted
    use = measure_memory(lambda: keep * 2)
    assert use.held == 4 * 2**20
    assert 4 * 2**20 <= use.peak < 4 * 2**20 + 1024  # and a few bytes for the scalar 2


def test_activations_grow_with_the_batch():
    net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    held = [measure_memory(lambda b=b: net(torch.ones(b, 64))).held for b in (8, 16)]
    assert held[1] > held[0] > 0


@pytest.mark.gpus(1)
def test_measure_memory_on_a_gpu():
    # The caching allocator hands out a cached free block at most 1 MiB larger than the request
    # whole, without splitting it (memory_allocated then counts all of it): start from an empty
    # cache, so that the tensor gets a block of its own size.
    torch.cuda.empty_cache()
    use = measure_memory(lambda: torch.ones(2**20, device="cuda"), "cuda")
    assert use == MemoryUse(peak=4 * 2**20, held=4 * 2**20)
