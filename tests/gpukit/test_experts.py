"""Tests of gpukit.experts: routing, capacity and the balance loss; the MoE layer against a
token-by-token reference; expert parallelism in gloo processes matched to one process at 2 and
8 ranks (3 refused)."""

from __future__ import annotations

import pytest
import torch

from gpukit.experts import (
    MoE,
    balance_loss,
    expert_capacity,
    expert_parallel_worker,
    keep_within_capacity,
    moe_training_run,
)
from gpukit.parallel import launch

MODEL = {"d_model": 8, "d_hidden": 16, "n_experts": 8, "top_k": 2, "capacity_factor": 1.0}


def test_capacity_keeps_the_first_assignments_of_each_expert():
    assert expert_capacity(100, 8, 2, 1.0) == 25
    keep = keep_within_capacity(torch.tensor([2, 2, 1, 2, 1, 2]), 3, 2)
    assert keep.tolist() == [True, True, True, False, True, False]
    assert keep_within_capacity(torch.tensor([0, 0]), 1, 0).tolist() == [False, False]


def test_balance_loss_is_one_when_even_and_larger_when_not():
    even = torch.full((8, 4), 0.25)
    assert balance_loss(even, torch.arange(8) % 4).item() == pytest.approx(1.0)
    skewed = torch.tensor([[0.7, 0.1, 0.1, 0.1]] * 8)
    assert balance_loss(skewed, torch.zeros(8, dtype=torch.long)).item() == pytest.approx(2.8)


def test_moe_matches_a_token_by_token_reference_and_counts_its_drops():
    moe = MoE(**MODEL)
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y = moe(x)
    r = moe.routing
    expected = torch.zeros_like(x)
    for t in range(len(x)):
        for s in range(2):
            if r.keep[t, s]:
                e = r.experts[t, s]
                hidden = torch.nn.functional.gelu(x[t] @ moe.w1[e].T)
                expected[t] += r.weights[t, s] * (hidden @ moe.w2[e].T).detach()
    torch.testing.assert_close(y, expected)
    capacity = expert_capacity(40, 8, 2, 1.0)
    assert int((~r.keep).sum()) == int((r.counts - capacity).clamp(min=0).sum())
    assert torch.allclose(r.weights.sum(dim=1), torch.ones(40))


def test_bad_arguments_name_what_is_accepted():
    with pytest.raises(ValueError, match=r"top_k \(9\) must be <= n_experts \(8\)"):
        MoE(**{**MODEL, "top_k": 9})
    with pytest.raises(ValueError, match="capacity_factor must be a finite number > 0"):
        expert_capacity(10, 2, 1, 0.0)
    with pytest.raises(ValueError, match="experts must be a 1-D integer tensor"):
        keep_within_capacity(torch.zeros(3), 2, 1)
    with pytest.raises(ValueError, match=r"x must be \(tokens, 8\)"):
        MoE(**MODEL)(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="config lacks 'x'"):
        expert_parallel_worker(0, 2, {"model": MODEL})


def test_training_with_the_balance_loss_restores_the_threads():
    threads = torch.get_num_threads()
    batches = [(torch.rand(8, 1, 28, 28), torch.arange(8)) for _ in range(2)]
    run = moe_training_run(batches, aux_weight=0.1, d_model=8, d_hidden=8, n_experts=4)
    assert torch.get_num_threads() == threads
    assert len(run["loss"]) == 2 and all(0 <= d <= 1 for d in run["dropped"])


@pytest.mark.parametrize("world_size", [2, 3, 8])
def test_expert_parallelism_matches_one_process_at_world_size(world_size):
    # 8 experts and 64 tokens: 2 and 8 ranks divide both, 3 divides neither
    moe = MoE(**MODEL)
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
    config = {"model": MODEL, "x": x}
    if world_size == 3:
        # refused before any collective: called here, in this one process
        with pytest.raises(ValueError, match=r"accepted world sizes \[1, 2, 4, 8\]"):
            expert_parallel_worker(0, world_size, config)
        return
    with torch.no_grad():
        expected = moe(x)
    per_rank = launch(expert_parallel_worker, world_size, config, backend="gloo", run_timeout_s=600)
    torch.testing.assert_close(torch.cat([rank["y"] for rank in per_rank]), expected)
    # capacity factor 1: some assignments are dropped, as many as in one process
    dropped = int((~moe.routing.keep).sum())
    assert dropped > 0 and sum(rank["dropped"] for rank in per_rank) == dropped
    received = [n for rank in per_rank for n in rank["received"]]
    assert received == moe.routing.counts.tolist()
    assert sum(sum(rank["sent"]) for rank in per_rank) == 64 * 2
