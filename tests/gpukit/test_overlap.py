"""Tests of gpukit.overlap: the overlap arithmetic, the worker at world sizes 2, 3 and 8 (gloo,
CPU processes), its refusals, and the timeline plot."""

from __future__ import annotations

import pytest
import torch

from gpukit.overlap import OVERLAP_VARIANTS, overlap_share, overlap_worker, plot_overlap
from gpukit.parallel import launch

BATCH = 24  # a multiple of 2, 3 and 8


def config(variants=OVERLAP_VARIANTS, batch=BATCH):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(batch, 1, 28, 28, generator=g)
    return {
        "model": {"d_model": 16, "n_heads": 2, "n_blocks": 3},
        "batches": [(X, torch.arange(batch) % 10)] * 2,
        "variants": list(variants),
        "bucket_cap_mb": 0.005,
    }


def test_overlap_share_counts_the_hidden_part_of_the_communication():
    assert overlap_share([(0.0, 2.0)], [(1.0, 3.0)]) == 0.5
    assert overlap_share([(0.0, 1.0)], [(2.0, 3.0)]) == 0.0
    assert overlap_share([], [(0.0, 1.0)]) == 0.0
    # overlapping intervals of one kind count once
    assert overlap_share([(0.0, 1.0), (0.0, 1.0)], [(0.0, 0.5), (0.25, 0.5)]) == 0.5
    with pytest.raises(ValueError, match="comm must hold"):
        overlap_share([(2.0, 1.0)], [])
    with pytest.raises(TypeError, match="compute must be a list"):
        overlap_share([], "0-1")


@pytest.mark.parametrize("world_size", [2, 3, 8])
def test_every_variant_profiles_a_step_at_world_size(world_size):
    runs = launch(overlap_worker, world_size, config(), backend="gloo", run_timeout_s=900)[0]
    assert list(runs) == list(OVERLAP_VARIANTS)
    for run in runs.values():
        assert run["compute"] and run["comm"] and run["step_seconds"] > 0
        assert run["threads"]["comm"].isdisjoint(run["threads"]["compute"])
    # DDP with one bucket all-reduces once, after the backward pass; small buckets several times
    assert runs["ddp, one bucket"]["collectives"].count("gloo:all_reduce") == 1
    assert runs["ddp, buckets"]["collectives"].count("gloo:all_reduce") > 1
    # FSDP: an all-gather per block in each direction and one for the root; gloo reduce-scatters
    # with an all-reduce, one per unit
    for name in ("fsdp", "fsdp, prefetch"):
        assert runs[name]["collectives"].count("gloo:all_gather") == 2 * 3 + 1
        assert runs[name]["collectives"].count("gloo:all_reduce") == 3 + 1


def test_the_worker_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match=r"world_size \(8\) must divide the minibatch size \(20\)"):
        overlap_worker(0, 8, config(batch=20))
    with pytest.raises(ValueError, match="must name"):
        overlap_worker(0, 2, config(variants=["zero"]))
    with pytest.raises(ValueError, match="missing"):
        overlap_worker(0, 2, {"model": {}})


def test_plot_overlap_draws_one_band_per_run():
    runs = {
        name: {"compute": [(0.0, 0.001)], "comm": [(0.0005, 0.002)], "wait": []}
        for name in ("a", "b")
    }
    fig = plot_overlap(runs)
    assert sorted(t.get_text() for t in fig.axes[0].get_yticklabels()) == ["a", "b"]
    with pytest.raises(TypeError, match="runs must map"):
        plot_overlap({"a": {"compute": []}})
