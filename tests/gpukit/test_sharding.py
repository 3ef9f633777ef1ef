"""Tests of gpukit.sharding: the row transformer, the arithmetic, and the sharded workers
matched to a one-process run (gloo, CPU processes)."""

from __future__ import annotations

import pytest
import torch

from gpukit.parallel import launch
from gpukit.sharding import (
    RowTransformer,
    bubble_fraction,
    fsdp_worker,
    in_sequence,
    pipeline_worker,
    reference_steps,
    sharded_traffic,
    tensor_parallel_worker,
)

MODEL = {"d_model": 16, "n_heads": 2, "n_blocks": 2}


def test_row_transformer_is_seeded_and_splits_into_named_stages():
    a = RowTransformer(**MODEL)
    b = RowTransformer(**MODEL)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    X = torch.rand(3, 1, 28, 28)
    whole = a(X)
    first = RowTransformer(**MODEL)
    last = RowTransformer(**MODEL)
    del first.blocks["1"]
    first.head = None
    del last.blocks["0"]
    last.embed = None
    torch.testing.assert_close(last(first(X)), whole)
    names = {n for n, _ in first.named_parameters()} | {n for n, _ in last.named_parameters()}
    assert names == {n for n, _ in a.named_parameters()}


def test_row_transformer_bad_arguments():
    with pytest.raises(ValueError, match="multiple of n_heads"):
        RowTransformer(d_model=10, n_heads=4)
    with pytest.raises(TypeError, match="n_blocks must be an int"):
        RowTransformer(n_blocks=2.0)


def test_arithmetic():
    assert bubble_fraction(1, 8) == 0.0
    assert bubble_fraction(2, 4) == pytest.approx(1 / 5)
    for n in (2, 3, 8):
        t = sharded_traffic(1000, n)
        assert t["fsdp"] / t["ddp all-reduce"] == pytest.approx(1.5)
        assert t["fsdp, no reshard"] == t["ddp all-reduce"]
    with pytest.raises(ValueError, match="n_microbatches must be >= 1"):
        bubble_fraction(2, 0)


def test_every_sharded_run_ends_with_the_weights_of_one_process():
    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(8, 1, 28, 28, generator=g), torch.arange(8) % 10) for _ in range(3)]
    config = {"model": MODEL, "batches": batches, "lr": 0.01}
    variants = [{"reshard_after_forward": True}, {"reshard_after_forward": False}]
    jobs = [
        (fsdp_worker, {**config, "variants": variants}),
        (tensor_parallel_worker, config),
        (pipeline_worker, {**config, "schedule": "gpipe", "n_microbatches": 4}),
        (pipeline_worker, {**config, "schedule": "1f1b", "n_microbatches": 4}),
        (tensor_parallel_worker, {**config, "sequence_parallel": True}),
    ]
    rank0, rank1 = launch(in_sequence, 2, jobs, backend="gloo", run_timeout_s=600)
    reference = RowTransformer(**MODEL)
    losses = reference_steps(reference, batches, 0.01)
    states = [run["state"] for run in rank0[0]] + [rank0[1]["state"], rank0[4]["state"]]
    states += [{**rank0[i]["state"], **rank1[i]["state"]} for i in (2, 3)]
    for state in states:
        assert state.keys() == dict(reference.named_parameters()).keys()
        for name, p in reference.named_parameters():
            torch.testing.assert_close(state[name], p.detach(), atol=1e-5, rtol=1e-4)
    for run_losses in (rank0[0][0]["losses"], rank0[1]["losses"], rank1[2]["losses"]):
        assert run_losses == pytest.approx(losses, abs=1e-5)
    # FSDP: each rank holds half of every parameter; resharding gathers each block twice, the
    # root (kept whole after forward, as torchtitan does) once.
    n_params = sum(p.numel() for p in reference.parameters())
    resharded, kept = rank0[0]
    assert resharded["param_bytes"] == pytest.approx(4 * n_params / 2, rel=0.02)
    assert resharded["optimizer_bytes"] == pytest.approx(2 * resharded["param_bytes"], rel=0.01)
    gathers = {
        name: len(run["collectives"]["all-gather"])
        for name, run in (("re", resharded), ("kept", kept))
    }
    assert gathers == {"re": 2 * MODEL["n_blocks"] + 1, "kept": MODEL["n_blocks"] + 1}
    assert resharded["unsharded_after_forward"] == 0 < kept["unsharded_after_forward"]
    # tensor parallelism: an all-reduce per row-wise layer, forward and backward
    assert len(rank0[1]["collectives"]["all-reduce"]) >= 2 * MODEL["n_blocks"]
    # sequence parallelism: reduce-scatters and all-gathers over the tokens, no all-reduce
    assert rank0[4]["collectives"].keys() == {"all-gather", "reduce-scatter"}


def test_a_2d_mesh_of_fsdp_and_tensor_parallelism_trains_like_one_process():
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand(8, 1, 28, 28, generator=g), torch.arange(8) % 10) for _ in range(2)]
    config = {"model": MODEL, "batches": batches, "lr": 0.01, "data_parallel": 2}
    run = launch(tensor_parallel_worker, 4, config, backend="gloo", run_timeout_s=600)[0]
    reference = RowTransformer(**MODEL)
    assert run["losses"] == pytest.approx(reference_steps(reference, batches, 0.01), abs=1e-5)
    for name, p in reference.named_parameters():
        torch.testing.assert_close(run["state"][name], p.detach(), atol=1e-5, rtol=1e-4)
    # both kinds of traffic in one step: within a row and across the rows
    assert {"all-reduce", "all-gather", "reduce-scatter"} <= run["collectives"].keys()
    with pytest.raises(RuntimeError, match="data_parallel"):
        launch(tensor_parallel_worker, 2, {**config, "data_parallel": 3}, run_timeout_s=300)
