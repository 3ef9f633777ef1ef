"""Tests of gpukit.context: the sequence layouts and their causal work, and ring attention
in gloo processes matched to one process's attention at 2, 4 and 8 ranks (3 refused)."""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from gpukit.context import (
    _fastest_call,
    causal_work,
    context_parallel_ranks,
    context_parallel_worker,
    ring_attention,
    sequence_chunks,
    sequence_layout,
)
from gpukit.parallel import launch


def test_layouts_cover_the_sequence_once_and_zigzag_balances_causal_work():
    for world_size in (1, 2, 4, 8):
        for layout in ("contiguous", "zigzag"):
            parts = sequence_layout(16 * world_size, world_size, layout)
            assert torch.equal(torch.cat(parts).sort().values, torch.arange(16 * world_size))
        assert len(set(causal_work(16 * world_size, world_size, "zigzag"))) == 1
    work = causal_work(64, 4, "contiguous")
    assert work == sorted(work) and work[-1] > 5 * work[0]
    assert sum(work) == sum(causal_work(64, 4, "zigzag")) == 64 * 65 // 2
    assert sequence_chunks(2, "zigzag") == [(0, 3), (1, 2)]
    assert [context_parallel_ranks(g) for g in (0, 1, 2, 5, 9)] == [2, 2, 2, 4, 8]


def test_bad_arguments_name_what_is_accepted():
    with pytest.raises(ValueError, match=r"accepted world sizes \[1, 2, 4, 8, 16\]"):
        sequence_layout(64, 3)
    with pytest.raises(ValueError, match="layout must be one of"):
        sequence_layout(64, 2, "striped")
    with pytest.raises(TypeError, match="world_size must be an int"):
        sequence_chunks(2.0)
    with pytest.raises(ValueError, match="gpus must be >= 0"):
        context_parallel_ranks(-1)
    q = torch.zeros(1, 1, 4, 8)
    with pytest.raises(ValueError, match="q must be 4-D"):
        ring_attention(q[0], q, q)
    with pytest.raises(RuntimeError, match="process group"):
        ring_attention(q, q, q)
    with pytest.raises(ValueError, match="config lacks"):
        context_parallel_worker(0, 2, {"batch": 1})


def ring_cases(rank: int, world_size: int) -> list[float]:
    """Both layouts, causal and not, on 2 heads of 32 tokens per rank: largest differences."""
    n = 32 * world_size
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 2, 3, n, 8, generator=g).unbind(0)
    diffs = []
    for layout in ("contiguous", "zigzag"):
        mine = sequence_layout(n, world_size, layout)[rank]
        for causal in (True, False):
            out = ring_attention(
                q[:, :, mine], k[:, :, mine], v[:, :, mine], layout=layout, causal=causal
            )
            whole = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            diffs.append((out - whole[:, :, mine]).abs().max().item())
    return diffs


def test_ring_attention_matches_one_process_at_two_and_four_ranks():
    for world_size in (2, 4):
        for diffs in launch(ring_cases, world_size, backend="gloo", run_timeout_s=600):
            assert max(diffs) < 1e-5


@pytest.mark.parametrize("world_size", [3, 8])
def test_the_worker_at_world_size(world_size):
    n = 16 * 8  # 8 ranks take two chunks of 8 tokens; 3 ranks do not divide it
    g = torch.Generator().manual_seed(1)
    qkv = torch.randn(3, 1, 2, n, 8, generator=g)
    config = {"qkv": qkv, "repeats": 1, "layouts": ["contiguous", "zigzag"]}
    if world_size == 3:
        # refused before any collective: called here, in this one process
        with pytest.raises(ValueError, match=r"accepted world sizes \[1, 2, 4, 8, 16\]"):
            context_parallel_worker(0, world_size, config)
        return
    per_rank = launch(
        context_parallel_worker, world_size, config, backend="gloo", run_timeout_s=600
    )
    whole = F.scaled_dot_product_attention(*qkv.unbind(0), is_causal=True)
    for layout in config["layouts"]:
        out = torch.empty_like(whole)
        for rank in per_rank:
            out[:, :, rank[layout]["positions"]] = rank[layout]["out"]
        torch.testing.assert_close(out, whole)
    tiles = {layout: [rank[layout]["tiles"] for rank in per_rank] for layout in config["layouts"]}
    assert tiles["contiguous"] == [4 * r + 3 for r in range(world_size)]  # 3, 7, ..., 31
    assert tiles["zigzag"] == [2 * world_size + 1] * world_size


def fastest_call_cases(rank: int, world_size: int) -> list[tuple[int, float]]:
    """``_fastest_call`` on an all-reduce in a gloo group, twice: (calls made, seconds)."""

    def case(repeats: int, sleeps: dict[int, float]) -> tuple[int, float]:
        calls = []

        def reduce() -> torch.Tensor:
            x = torch.ones(1)
            dist.all_reduce(x)
            time.sleep(sleeps.get(len(calls), 0.0))  # after the reduce: late for the next one
            calls.append(x)
            return x

        out, seconds = _fastest_call(reduce, repeats, torch.device("cpu"))
        assert out is calls[-1] and out.item() == world_size
        return len(calls), seconds

    # Rank 1 comes late to the only timed call (it sleeps after its warm-up): without a
    # barrier, rank 0 would time the wait inside the all-reduce.
    late = case(1, {0: 0.5} if rank == 1 else {})
    # The first and the last of three timed calls are slow on every rank: the least of them
    # leaves them out.
    slow = case(3, {1: 0.3, 3: 0.3})
    return [late, slow]


def test_torch_context_parallel_timing_starts_together_and_keeps_the_fastest():
    # PyTorch's context_parallel refuses causal attention on a CPU (see the page), so its
    # timing is checked on an all-reduce, with the same structure: a warm-up, then each call
    # after a barrier, the least kept.
    for (calls_late, seconds_late), (calls_slow, seconds_slow) in launch(
        fastest_call_cases, 2, backend="gloo", run_timeout_s=300
    ):
        assert (calls_late, calls_slow) == (2, 4)  # one untimed call, then the repeats
        assert seconds_late < 0.25 and seconds_slow < 0.25
