"""Tests of gpukit.context: the sequence layouts and their causal work, and ring attention
in gloo processes matched to one process's attention at 2, 4 and 8 ranks (3 refused)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpukit.context import (
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
