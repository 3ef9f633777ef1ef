"""Tests of gpukit.planner: its formulas against the gpukit functions they come from and against
measured gloo runs, the enumeration and ranking of layouts, and bad input."""

from __future__ import annotations

import pytest
import torch

from gpukit.memory import training_memory
from gpukit.parallel import launch
from gpukit.planner import (
    ACTIVATION_BYTES,
    Cluster,
    Layout,
    ModelSpec,
    evaluate_layout,
    layout_table,
    plan_layouts,
)
from gpukit.sharding import (
    RowTransformer,
    bubble_fraction,
    fsdp_worker,
    in_sequence,
    sharded_traffic,
    tensor_parallel_worker,
)

LLAMA_7B = ModelSpec(
    6_740_000_000,
    n_layers=32,
    d_model=4096,
    n_heads=32,
    seq_len=4096,
    micro_batch=1,
    global_batch=256,
)
LLAMA_70B = ModelSpec(
    68_980_000_000,
    n_layers=80,
    d_model=8192,
    n_heads=64,
    kv_heads=8,
    seq_len=4096,
    micro_batch=1,
    global_batch=256,
)


def h100s(nodes: int) -> Cluster:
    return Cluster(8, nodes, 80e9, 450e9, 50e9, 989.5e12)


def test_state_traffic_and_bubble_come_from_the_functions_the_pages_check():
    node = h100s(1)
    n = LLAMA_7B.n_params
    sharded = evaluate_layout(LLAMA_7B, node, fsdp=8)
    state = {k: sharded.memory[k] for k in ("parameters", "gradients", "optimizer state")}
    assert state == training_memory(n, "adam", "mixed", shards=8)
    m = 256 // 8
    assert sharded.microbatches == m
    assert sharded.traffic["data"] == pytest.approx(m * sharded_traffic(n, 8, 2, 4)["fsdp"])
    assert sharded.memory["gathered weights"] == 2 * 2 * 12 * 4096**2
    replicated = evaluate_layout(LLAMA_7B, h100s(2), dp=2, fsdp=8)
    all_reduce = sharded_traffic(-(-n // 8), 2, 2, 4)["ddp all-reduce"]
    assert replicated.traffic["data"] == pytest.approx(
        256 // 16 * sharded_traffic(n, 8, 2, 4)["fsdp"] + all_reduce
    )
    piped = evaluate_layout(LLAMA_7B, node, pp=8)
    assert piped.bubble == bubble_fraction(8, 256)
    assert "data" not in piped.traffic and piped.traffic["pipeline"] == 256 * 2 * 4096 * 4096 * 2


def test_tensor_context_and_activation_arithmetic():
    node = h100s(1)
    s, d, L = 4096, 4096, 32
    tp = evaluate_layout(LLAMA_7B, node, tp=8)
    # 4 all-reduces' worth of one bf16 activation per layer and microbatch
    assert tp.traffic["tensor"] == pytest.approx(256 * L * 4 * 2 * 7 / 8 * s * d * 2)
    assert tp.memory["activations"] == L * s * d * ACTIVATION_BYTES / 8
    cp = evaluate_layout(LLAMA_7B, node, dp=2, cp=4)
    assert cp.memory["activations"] == L * (s // 4) * d * ACTIVATION_BYTES
    assert cp.traffic["context"] == pytest.approx(128 * L * 3 * 3 * 2 * (s // 4) * d * 2)
    ckpt = evaluate_layout(LLAMA_7B, node, fsdp=8, checkpointing=True)
    assert ckpt.memory["activations"] == L * s * d * 2 + s * d * ACTIVATION_BYTES
    assert ckpt.compute_seconds == pytest.approx(tp.compute_seconds * 8 / 6)


def test_groups_inside_a_node_use_nvlink_and_larger_ones_the_network():
    inside = evaluate_layout(LLAMA_70B, h100s(8), fsdp=8, tp=8)
    assert inside.seconds["tensor"] == pytest.approx(inside.traffic["tensor"] / 450e9)
    assert inside.seconds["data"] == pytest.approx(inside.traffic["data"] / 50e9)
    # the pipeline outermost: each stage on its own node
    piped = evaluate_layout(LLAMA_70B, h100s(8), tp=8, pp=8)
    assert piped.seconds["pipeline"] == pytest.approx(piped.traffic["pipeline"] / 50e9)


def test_plan_lists_fitting_layouts_fastest_first():
    plans = plan_layouts(LLAMA_7B, h100s(1))
    assert plans and all(isinstance(x, Layout) for x in plans)
    assert all(x.memory_per_gpu <= 80e9 for x in plans)
    assert all(x.dp * x.fsdp * x.tp * x.pp * x.cp == 8 for x in plans)
    keys = [(x.step_seconds, x.memory_per_gpu) for x in plans]
    assert keys == sorted(keys)
    assert plans[0].degrees == "fsdp 8"
    # tensor-parallel degrees above the key-value heads are never tried
    assert all(8 % x.tp == 0 for x in plan_layouts(LLAMA_70B, h100s(8)))
    table = layout_table(plans[:3])
    assert table.splitlines()[1].startswith("fsdp 8") and len(table.splitlines()) == 4


def test_bad_degrees_are_refused_naming_what_they_must_divide():
    node = h100s(1)
    with pytest.raises(
        ValueError, match=r"dp \* fsdp \* tp \* pp \* cp \(3\) must equal the cluster's 8 GPUs"
    ):
        evaluate_layout(LLAMA_7B, node, tp=3)
    with pytest.raises(ValueError, match=r"tp \(16\) must divide the 8 key-value heads"):
        evaluate_layout(LLAMA_70B, h100s(8), tp=16, pp=4)
    five_layers = ModelSpec(10**9, 5, 1024, 8, 2048, 1, 64)
    with pytest.raises(ValueError, match=r"pp \(2\) must divide the 5 layers"):
        evaluate_layout(five_layers, Cluster(2, 1, 80e9, 1e9, 1e9, 1e12), pp=2)
    with pytest.raises(ValueError, match=r"cp \(8\) must divide seq_len \(4100\)"):
        evaluate_layout(
            ModelSpec(10**9, 8, 1024, 8, 4100, 1, 64), Cluster(8, 1, 80e9, 1e9, 1e9, 1e12), cp=8
        )
    with pytest.raises(ValueError, match=r"dp \* fsdp \* micro_batch \(8\) must divide"):
        evaluate_layout(ModelSpec(10**9, 8, 1024, 8, 2048, 1, 12), node, fsdp=8)
    with pytest.raises(
        ValueError, match=r"pp \(8\) must be at most the microbatches per step.* = 4"
    ):
        evaluate_layout(ModelSpec(10**9, 8, 1024, 8, 2048, 1, 4), node, pp=8)
    with pytest.raises(TypeError, match="tp must be an int"):
        evaluate_layout(LLAMA_7B, node, tp=8.0)
    with pytest.raises(TypeError, match="checkpointing must be True or False"):
        evaluate_layout(LLAMA_7B, node, fsdp=8, checkpointing=1)
    with pytest.raises(TypeError, match="model must be a ModelSpec"):
        plan_layouts({"n_params": 1}, node)


def test_a_model_that_fits_nowhere_gets_an_answer_not_a_crash():
    with pytest.raises(ValueError, match=r"no layout of 8 GPUs fits in 74.5 GiB: the smallest"):
        plan_layouts(LLAMA_70B, h100s(1))
    with pytest.raises(ValueError, match="no layout splits this model over 7 GPUs"):
        plan_layouts(LLAMA_7B, Cluster(7, 1, 80e9, 1e9, 1e9, 1e12))


def test_bad_model_and_cluster_descriptions():
    with pytest.raises(ValueError, match=r"d_model .* multiple of n_heads"):
        ModelSpec(10**9, 8, 1000, 16, 2048, 1, 64)
    with pytest.raises(ValueError, match="less than the 32 layers"):
        ModelSpec(10**6, 32, 4096, 32, 2048, 1, 64)
    with pytest.raises(ValueError, match=r"micro_batch \(3\) must divide global_batch \(64\)"):
        ModelSpec(10**9, 8, 1024, 8, 2048, 3, 64)
    with pytest.raises(ValueError, match=r"kv_heads \(3\) must divide n_heads \(8\)"):
        ModelSpec(10**9, 8, 1024, 8, 2048, 1, 64, kv_heads=3)
    with pytest.raises(ValueError, match="memory must be a finite number > 0"):
        Cluster(8, 1, -1, 1e9, 1e9, 1e12)
    with pytest.raises(TypeError, match="nodes must be an int"):
        Cluster(8, 1.5, 80e9, 1e9, 1e9, 1e12)
    with pytest.raises(TypeError, match="layouts must be a list of Layout"):
        layout_table(["fsdp 8"])


def test_the_formulas_agree_with_measured_gloo_runs():
    # The page's check, at 2 ranks: FSDP's state and bytes, tensor parallelism's bytes.
    model = {"d_model": 16, "n_heads": 2, "n_blocks": 2}
    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(8, 1, 28, 28, generator=g), torch.arange(8) % 10)]
    config = {"model": model, "batches": batches, "lr": 0.01}
    variants = [{"reshard_after_forward": True, "mixed": True}]
    jobs = [
        (fsdp_worker, {**config, "variants": variants}),
        (tensor_parallel_worker, {**config, "sequence_parallel": True}),
    ]
    (fsdp,), tp = launch(in_sequence, 2, jobs, backend="gloo", run_timeout_s=600)[0]
    n_params = sum(p.numel() for p in RowTransformer(**model).parameters())
    processes = Cluster(2, 1, 1e12, 1e9, 1e9, 1e12)
    spec = ModelSpec(n_params, 2, 16, 2, seq_len=28, micro_batch=4, global_batch=8)
    sharded = evaluate_layout(spec, processes, fsdp=2)
    state = sum(sharded.memory[k] for k in ("parameters", "gradients", "optimizer state"))
    measured = fsdp["param_bytes"] + fsdp["grad_bytes"] + fsdp["optimizer_bytes"]
    assert measured == pytest.approx(state, rel=0.02)
    sent = sum(fsdp["collective_bytes"].values()) / 2
    assert sent == pytest.approx(sharded.traffic["data"], rel=0.05)
    spec_tp = ModelSpec(n_params, 2, 16, 2, seq_len=28, micro_batch=8, global_batch=8)
    split = evaluate_layout(spec_tp, processes, tp=2)
    # 8 collectives of one activation per layer, plus 2 outside the layers (head, embedding)
    elements = [e for sizes in tp["collectives"].values() for e in sizes]
    assert len(elements) == 8 * 2 + 2
    assert sum(elements[:16]) * 2 / 2 == pytest.approx(split.traffic["tensor"])
