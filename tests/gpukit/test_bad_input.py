"""Every public gpukit function rejects bad input with a ValueError or TypeError naming the
argument (DESIGN: "Every public function checks its arguments").

One table holds the cases. ``test_every_public_callable_has_a_case`` checks it against
``gpukit.__all__``: a new public function or class without a case here fails the suite, unless
it is in one of the commented exemption lists below.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import gpukit

# Public names that take no arguments at all: there is no bad input to give them.
# (test_exempt_functions_take_no_arguments keeps this list honest.)
NO_ARGUMENTS = {
    "cpu",
    "current_profile",  # reads GPUKIT_PROFILE: its bad values are a case below
    "describe_machine",
    "device_report",
    "machine_info",
    "num_gpus",
    "quiet_torchao",
    "try_all_gpus",
}
# Public classes that pages do not build from their own input: exception types (raised by
# gpukit, with gpukit's message) and records that gpukit fills in itself (the profiles'
# settings, measurements, training results).
NOT_CALLED_BY_PAGES = {
    "DataNotFoundError",
    "EpochStats",
    "Extension",
    "MachineInfo",
    "Measurement",
    "Layout",
    "MemoryUse",
    "OpPoint",
    "Profile",
    "SpeculativeResult",
    "Routing",
    "ServeStats",
    "TrainResult",
    "Workload",
}


def tiny_net() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(4, 2))


def batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.zeros(2, 1, 2, 2), torch.zeros(2, dtype=torch.long))]


def noop() -> None:
    return None


ROOFS = [gpukit.Roofline("toy", bandwidth=1e9, peak_flops=1e12)]
PLAN_MODEL = gpukit.ModelSpec(10**9, 6, 1024, 8, 2048, 1, 64)  # 6 layers: 4 stages do not divide
PLAN_CLUSTER = gpukit.Cluster(8, 1, 80e9, 450e9, 50e9, 1e15)


def X4() -> torch.Tensor:  # named like the argument it is passed as
    return torch.zeros(4, 2)


# (public name, positional arguments, keyword arguments, exception, the argument it names)
# Arguments are built lazily (a lambda) where building them needs torch.
# A valid run for describe_run: each case changes one setting.
RUN = dict(n_train=600, n_test=100, batch_size=64, lr=0.1, schedule="constant", epochs=1)
CASES = [
    # data
    ("find_fashion_mnist", (42,), {}, TypeError, "root"),
    ("find_fashion_mnist", (), {"download": "yes"}, TypeError, "download"),
    ("load_data_fashion_mnist", ("256",), {}, TypeError, "batch_size"),
    ("load_data_fashion_mnist", (0,), {}, ValueError, "batch_size"),
    ("load_data_fashion_mnist", (32,), {"n_train": 0}, ValueError, "n_train"),
    ("load_data_fashion_mnist", (32,), {"n_test": 1.5}, TypeError, "n_test"),
    ("load_data_fashion_mnist", (32,), {"seed": -1}, ValueError, "seed"),
    ("load_data_fashion_mnist", (32,), {"num_workers": -1}, ValueError, "num_workers"),
    ("load_data_fashion_mnist", (32,), {"root": 3}, TypeError, "root"),
    ("pick", (), {"quick": 10, "full": "20"}, TypeError, "full"),
    ("pick", (), {"quick": 10, "full": 20, "profile": "fast"}, ValueError, "profile"),
    # devices
    ("gpu", ("0",), {}, TypeError, "i"),
    ("gpu", (-1,), {}, ValueError, "i"),
    ("try_gpu", (1.0,), {}, TypeError, "i"),
    ("try_gpu", (-1,), {}, ValueError, "i"),
    ("replicas", ("2",), {}, TypeError, "n"),
    ("replicas", (0,), {}, ValueError, "n"),
    ("describe_devices", ([],), {}, ValueError, "devices"),
    ("describe_devices", (["cpu"],), {}, TypeError, "devices"),
    ("existing_device", (0,), {}, TypeError, "device"),
    ("existing_device", ("meta",), {}, ValueError, "device"),
    ("describe_device", (3,), {}, TypeError, "device"),
    ("describe_device", ("nodevice",), {}, ValueError, "device"),
    # measure
    ("time_op", ("op",), {}, TypeError, "op"),
    ("time_op", (noop,), {"repeats": 0}, ValueError, "repeats"),
    ("time_op", (noop,), {"warmup": "1"}, TypeError, "warmup"),
    ("copy_bandwidth", ("1MB",), {}, TypeError, "nbytes"),
    ("copy_bandwidth", (0,), {}, ValueError, "nbytes"),
    ("copy_bandwidth", (1024,), {"direction": "sideways"}, ValueError, "direction"),
    ("copy_bandwidth", (1024,), {"pinned": "no"}, TypeError, "pinned"),
    ("launch_latency", (), {"repeats": "many"}, TypeError, "repeats"),
    ("launch_latency", (), {"synchronize_each": 1}, TypeError, "synchronize_each"),
    ("matmul_dtypes", (3,), {}, TypeError, "device"),
    ("peak_tflops", (0, "fp32"), {}, TypeError, "name"),
    ("peak_tflops", ("NVIDIA H100 PCIe", "fp8"), {}, ValueError, "dtype"),
    ("float32_matmul", ("tf16",), {}, ValueError, "dtype"),
    # roofline
    ("arithmetic_intensity", ("1",), {"nbytes": 4}, TypeError, "flops"),
    ("arithmetic_intensity", (1.0, 0), {}, ValueError, "nbytes"),
    ("matmul_cost", (4, 4, 0), {}, ValueError, "k"),
    ("matmul_cost", (4, 4, 4), {"element_size": 2.0}, TypeError, "element_size"),
    ("Roofline", ("gpu", 0, 1e12), {}, ValueError, "bandwidth"),
    ("Roofline", ("gpu", 1e12, "fast"), {}, TypeError, "peak_flops"),
    ("Roofline", (3, 1e12, 1e12), {}, TypeError, "name"),
    ("datasheet_roofline", ("A100",), {}, ValueError, "model"),
    ("datasheet_roofline", ("H200 SXM", "fp8"), {}, ValueError, "dtype"),
    ("measured_roofline", ("cpu",), {"copy_bytes": 0}, ValueError, "copy_bytes"),
    ("measured_roofline", ("cpu",), {"matmul_sizes": 64}, TypeError, "matmul_sizes"),
    ("measured_roofline", ("cpu",), {"matmul_sizes": [64, 0]}, ValueError, "matmul_sizes[1]"),
    ("measured_roofline", ("cpu",), {"tries": 0}, ValueError, "tries"),
    ("measure_point", ("x", noop), {"flops": -1.0, "nbytes": 8}, ValueError, "flops"),
    ("measure_point", ("x", "op"), {"flops": 1.0, "nbytes": 8}, TypeError, "op"),
    ("measure_point", (1, noop), {"flops": 1.0, "nbytes": 8}, TypeError, "name"),
    ("mfu", (1e12, 0.0, 1e15), {}, ValueError, "seconds"),
    ("mfu", (1e12, 1.0, None), {}, TypeError, "peak_flops"),
    ("plot_roofline", ([],), {}, TypeError, "roofs"),
    ("plot_roofline", (["H200"],), {}, TypeError, "roofs"),
    ("plot_roofline", (ROOFS,), {"marks": [0.1]}, TypeError, "marks"),
    ("plot_roofline", (ROOFS,), {"marks": {"add": -1.0}}, ValueError, "marks['add']"),
    ("figure_to_svg", ("figure",), {}, TypeError, "fig"),
    ("matmul_throughput", ("64",), {}, TypeError, "n"),
    ("matmul_throughput", (0,), {}, ValueError, "n"),
    ("matmul_throughput", (64,), {"dtype": "fp7"}, ValueError, "dtype"),
    # memory
    ("format_bytes", (1.5,), {}, TypeError, "nbytes"),
    ("training_memory", ("big",), {}, TypeError, "params"),
    ("training_memory", (-1,), {}, ValueError, "params"),
    ("training_memory", (10, "lion"), {}, ValueError, "optimizer"),
    ("training_memory", (10, "adam", "fp8"), {}, ValueError, "precision"),
    ("training_memory", (10,), {"shards": 0}, ValueError, "shards"),
    ("measure_memory", ("step",), {}, TypeError, "fn"),
    ("measure_memory", (noop, "nodevice"), {}, ValueError, "device"),
    # metrics
    ("Accumulator", ("3",), {}, TypeError, "n"),
    ("Accumulator", (0,), {}, ValueError, "n"),
    ("accuracy", ([1, 2], lambda: torch.zeros(2)), {}, TypeError, "y_hat"),
    ("accuracy", (lambda: torch.zeros(2, 3), lambda: torch.zeros(2, 2)), {}, ValueError, "y"),
    ("evaluate_accuracy_gpu", ("net", batches), {}, TypeError, "net"),
    ("evaluate_accuracy_gpu", (tiny_net, 3), {}, TypeError, "data_iter"),
    ("evaluate_accuracy_gpu", (tiny_net, []), {}, ValueError, "data_iter"),
    # plotting
    ("Animator", (), {"xscale": "cubic"}, ValueError, "xscale"),
    ("Animator", (), {"nrows": 0}, ValueError, "nrows"),
    ("Animator", (), {"figsize": (3,)}, TypeError, "figsize"),
    ("Animator", (), {"legend": "train"}, TypeError, "legend"),
    # timing
    ("Timer", (3,), {}, TypeError, "device"),
    ("Timer", ("nodevice",), {}, ValueError, "device"),
    ("Benchmark", (3,), {}, TypeError, "description"),
    ("Benchmark", ("x",), {"device": "nodevice"}, ValueError, "device"),
    ("format_seconds", ("1",), {}, TypeError, "seconds"),
    ("format_seconds", (-1,), {}, ValueError, "seconds"),
    ("format_seconds", (float("nan"),), {}, ValueError, "seconds"),
    # models
    ("Residual", ("3", 6), {}, TypeError, "input_channels"),
    ("Residual", (3, 0), {}, ValueError, "num_channels"),
    ("Residual", (3, 6), {"use_1x1conv": 1}, TypeError, "use_1x1conv"),
    ("Residual", (3, 6), {"strides": 0}, ValueError, "strides"),
    ("resnet18", ("10",), {}, TypeError, "num_classes"),
    ("resnet18", (10,), {"in_channels": 0}, ValueError, "in_channels"),
    ("lenet", (0,), {}, ValueError, "num_classes"),
    ("lenet", (10.0,), {}, TypeError, "num_classes"),
    ("lenet_params", ("0.01",), {}, TypeError, "scale"),
    ("lenet_params", (-0.01,), {}, ValueError, "scale"),
    ("lenet_params", (), {"seed": "0"}, TypeError, "seed"),
    ("lenet_forward", ("X", []), {}, TypeError, "X"),
    ("lenet_forward", (lambda: torch.zeros(2, 1, 28, 28), []), {}, ValueError, "params"),
    ("init_weights", ("net",), {}, TypeError, "net"),
    ("init_weights", (tiny_net, "zeros"), {}, ValueError, "method"),
    ("init_weights", (tiny_net,), {"seed": 1.5}, TypeError, "seed"),
    # parallel
    ("split_batch", ("X", lambda: torch.zeros(4), ["cpu"]), {}, TypeError, "X"),
    ("split_batch", (X4, lambda: torch.zeros(3), ["cpu"]), {}, ValueError, "y"),
    ("split_batch", (X4, lambda: torch.zeros(4), []), {}, ValueError, "devices"),
    ("split_batch", (X4, lambda: torch.zeros(4), "cpu"), {}, TypeError, "devices"),
    ("get_params", ("params", "cpu"), {}, TypeError, "params"),
    ("get_params", ([1.0], "cpu"), {}, TypeError, "params"),
    ("get_params", (lambda: [torch.zeros(1)], 2.5), {}, TypeError, "device"),
    ("get_params", (lambda: [torch.zeros(1)], "nowhere"), {}, ValueError, "device"),
    ("allreduce", ("data",), {}, TypeError, "data"),
    ("allreduce", ([],), {}, ValueError, "data"),
    ("choose_backend", ("2",), {}, TypeError, "world_size"),
    ("choose_backend", (0,), {}, ValueError, "world_size"),
    ("threads_per_rank", ("2",), {}, TypeError, "world_size"),
    ("threads_per_rank", (0,), {}, ValueError, "world_size"),
    ("launch", ("worker", 2), {}, TypeError, "worker"),
    ("launch", (noop, 0), {}, ValueError, "world_size"),
    ("launch", (noop, 1), {"backend": "mpi"}, ValueError, "backend"),
    ("launch", (noop, 1), {"timeout_s": 0}, ValueError, "timeout_s"),
    ("time_collective", ("fn", 1), {}, TypeError, "fn"),
    ("time_collective", (noop, 0), {}, ValueError, "repeats"),
    ("ring_allreduce", ([1.0],), {}, TypeError, "tensor"),
    ("ring_allreduce_demo", (0, 1), {"numel": 0}, ValueError, "numel"),
    ("ring_allreduce_sweep", (0, 1, 1000), {}, TypeError, "sizes"),
    # training
    ("sgd", ([lambda: torch.zeros(1)], 0, 1), {}, ValueError, "lr"),
    ("sgd", ([], 0.1, "8"), {}, TypeError, "batch_size"),
    ("sgd", (3, 0.1, 8), {}, TypeError, "params"),
    ("sgd", ([1.0], 0.1, 8), {}, TypeError, "params"),
    ("train_ch6", ("net", batches, batches, 1, 0.1), {}, TypeError, "net"),
    ("train_ch6", (tiny_net, 3, batches, 1, 0.1), {}, TypeError, "train_iter"),
    (
        "train_ch6",
        (tiny_net, lambda: iter(batches()), batches, 1, 0.1),
        {},
        TypeError,
        "train_iter",
    ),
    ("train_ch6", (tiny_net, batches, batches, 0, 0.1), {}, ValueError, "num_epochs"),
    ("train_ch6", (tiny_net, batches, batches, 1, -0.1), {}, ValueError, "lr"),
    ("train_ch6", (tiny_net, batches, batches, 1, 0.1), {"init": "zeros"}, ValueError, "init"),
    ("train_ch6", (tiny_net, batches, batches, 1, 0.1), {"device": 3}, TypeError, "device"),
    (
        "train_ch6",
        (tiny_net, batches, batches, 1, 0.1),
        {"schedule": "cosine"},
        ValueError,
        "schedule",
    ),
    ("train_ddp", (2, 1, 0.1, 32), {"schedule": None}, ValueError, "schedule"),
    ("lr_factor", ("linear", 0, 10, 2), {}, ValueError, "schedule"),
    ("describe_run", (), RUN | {"n_train": 0}, ValueError, "n_train"),
    ("describe_run", (), RUN | {"batch_size": "8"}, TypeError, "batch_size"),
    ("describe_run", (), RUN | {"lr": -0.1}, ValueError, "lr"),
    ("describe_run", (), RUN | {"schedule": "linear"}, ValueError, "schedule"),
    ("describe_run", (), RUN | {"epochs": 1.0}, TypeError, "epochs"),
    ("describe_run", (), RUN | {"resize": 0}, ValueError, "resize"),
    ("lr_factor", ("warmup-cosine", -1, 10, 2), {}, ValueError, "step"),
    ("lr_factor", ("warmup-cosine", 0, 0, 2), {}, ValueError, "steps_per_epoch"),
    ("lr_factor", ("warmup-cosine", 0, 10, 2.0), {}, TypeError, "num_epochs"),
    ("train_data_parallel", (tiny_net, batches, 3, 1, 0.1), {}, TypeError, "test_iter"),
    ("train_data_parallel", (tiny_net, batches, batches, "1", 0.1), {}, TypeError, "num_epochs"),
    (
        "train_data_parallel",
        (tiny_net, batches, batches, 1, 0.1),
        {"devices": []},
        ValueError,
        "devices",
    ),
    ("train_ddp", ("2", 1, 0.1, 32), {}, TypeError, "world_size"),
    ("train_ddp", (2, 1, 0.1, 33), {}, ValueError, "batch_size"),
    ("train_ddp", (2, 1, 0.1, 32), {"n_train": 1}, ValueError, "n_train"),
    ("train_ddp", (2, 1, 0.1, 32), {"root": 3}, TypeError, "root"),
    ("train_ddp", (2, 1, 0.1, 32), {"resize": 0}, ValueError, "resize"),
    ("train_ddp", (2, 1, 0.1, 32), {"net": "resnet"}, TypeError, "net"),
    ("train_ddp", (2, 1, 0.1, 32), {"run_timeout_s": 0}, ValueError, "run_timeout_s"),
    # fast
    ("auto_precision", (3,), {}, TypeError, "device"),
    ("DeviceBatches", ([], 2, "cpu"), {}, ValueError, "batches"),
    ("DeviceBatches", (batches, 2.0, "cpu"), {}, TypeError, "batch_size"),
    ("prepare_model", ("lenet", "cpu"), {}, TypeError, "net"),
    ("prepare_model", (tiny_net, "cpu"), {"compile": None}, TypeError, "compile"),
    ("read_batches", (3,), {}, TypeError, "batches"),
    ("read_batches", (batches,), {"limit": 0}, ValueError, "limit"),
    (
        "train_step",
        (tiny_net, torch.zeros(2, 4), torch.zeros(2)),
        {"optimizer": None, "scaler": None, "autocast": None},
        TypeError,
        "optimizer",
    ),
    (
        "train_fast",
        (tiny_net, batches, batches, 1, 0.1),
        {"batch_size": 0},
        ValueError,
        "batch_size",
    ),
    ("train_fast", (tiny_net, batches, batches, 1, 0.1), {"momentum": 1}, ValueError, "momentum"),
    (
        "train_fast",
        (tiny_net, batches, batches, 1, 0.1),
        {"on_device": "yes"},
        TypeError,
        "on_device",
    ),
    (
        "train_fast",
        (tiny_net, batches, batches, 1, 0.1),
        {"precision": "fp8"},
        ValueError,
        "precision",
    ),
    ("train_fast", (tiny_net, batches, batches, 1, 0.1), {"compile": 1}, TypeError, "compile"),
    ("train_fast", (tiny_net, batches, batches, 1, 0.1), {"device": 3}, TypeError, "device"),
    # attention
    (
        "attention",
        ([[1.0]], lambda: torch.ones(1, 1), lambda: torch.ones(1, 1)),
        {},
        TypeError,
        "queries",
    ),
    (
        "attention",
        (lambda: torch.ones(2, 3), lambda: torch.ones(2, 4), lambda: torch.ones(2, 4)),
        {},
        ValueError,
        "queries",
    ),
    (
        "attention",
        (lambda: torch.ones(2, 3), lambda: torch.ones(2, 3), lambda: torch.ones(2, 3)),
        {"mask": lambda: torch.ones(2, 2)},
        TypeError,
        "mask",
    ),
    # flash
    (
        "flash_attention",
        ([[1.0]], lambda: torch.ones(1, 1, 4, 16), lambda: torch.ones(1, 1, 4, 16)),
        {},
        TypeError,
        "q",
    ),
    (
        "flash_attention",
        (
            lambda: torch.ones(1, 1, 4, 16),
            lambda: torch.ones(1, 1, 5, 16),
            lambda: torch.ones(1, 1, 4, 16),
        ),
        {},
        ValueError,
        "q",
    ),
    (
        "flash_attention",
        (lambda: torch.ones(1, 1, 4, 16),) * 3,
        {"block_n": 24},
        ValueError,
        "block_n",
    ),
    ("kv_cache_bytes", (0, 1, 1), {}, ValueError, "num_layers"),
    ("kv_cache_bytes", (1, 1, 1), {"dtype": "bf16"}, TypeError, "dtype"),
    # gpt
    ("GPT", ("256",), {}, TypeError, "vocab_size"),
    ("GPT", (), {"num_hiddens": 30, "num_heads": 4}, ValueError, "num_hiddens"),
    ("generate", ("net", lambda: torch.zeros(1, 2, dtype=torch.long), 3), {}, TypeError, "net"),
    (
        "generate",
        (
            lambda: gpukit.GPT(num_hiddens=8, num_heads=2, num_blks=1, max_len=8),
            lambda: torch.zeros(1, 4, dtype=torch.long),
            5,
        ),
        {},
        ValueError,
        "prompt",
    ),
    (
        "generate",
        (
            lambda: gpukit.GPT(num_hiddens=8, num_heads=2, num_blks=1, max_len=8),
            lambda: torch.zeros(1, 2, dtype=torch.long),
            2,
        ),
        {"temperature": -1.0},
        ValueError,
        "temperature",
    ),
    ("decode_bytes", (b"hi",), {}, TypeError, "tokens"),
    ("load_python_source", (0,), {}, ValueError, "max_bytes"),
    ("text_batch", (lambda: torch.arange(10), 2, 10), {}, ValueError, "data"),
    ("text_batch", (lambda: torch.arange(10), "2", 3), {}, TypeError, "batch_size"),
    ("gpt_flops_per_token", (tiny_net, 16), {}, TypeError, "net"),
    # quantization
    ("weight_bytes", ("net",), {}, TypeError, "net"),
    # speculative
    (
        "accept_draft",
        (lambda: torch.ones(2, 3), lambda: torch.ones(1, 3), [0]),
        {},
        TypeError,
        "draft_tokens",
    ),
    (
        "accept_draft",
        (lambda: torch.ones(1, 3), lambda: torch.ones(1, 3), lambda: torch.tensor([0])),
        {},
        ValueError,
        "draft_tokens",
    ),
    (
        "extend_cache",
        ("net", lambda: torch.zeros(1, 2, dtype=torch.long), []),
        {},
        TypeError,
        "net",
    ),
    (
        "extend_cache",
        (
            lambda: gpukit.GPT(num_hiddens=8, num_heads=2, num_blks=1, max_len=8),
            lambda: torch.zeros(1, 9, dtype=torch.long),
            [],
        ),
        {},
        ValueError,
        "tokens",
    ),
    (
        "speculative_generate",
        (
            lambda: gpukit.GPT(num_hiddens=8, num_heads=2, num_blks=1, max_len=8),
            lambda: gpukit.GPT(num_hiddens=8, num_heads=2, num_blks=1, max_len=8),
            lambda: torch.zeros(1, 2, dtype=torch.long),
            2,
        ),
        {"draft_len": 0},
        ValueError,
        "draft_len",
    ),
    # sharding (the workers check their config in each rank, before joining a group)
    ("RowTransformer", (), {"d_model": 0}, ValueError, "d_model"),
    ("RowTransformer", (), {"d_model": 30, "n_heads": 4}, ValueError, "d_model"),
    ("bubble_fraction", (0, 4), {}, ValueError, "n_stages"),
    ("bubble_fraction", (2, "4"), {}, TypeError, "n_microbatches"),
    ("fashion_batches", (0, 4), {}, ValueError, "n_steps"),
    ("fsdp_worker", (0, 1, "config"), {}, TypeError, "config"),
    ("fsdp_worker", (0, 1, {"model": {}}), {}, ValueError, "config"),
    ("tensor_parallel_worker", (0, 1, []), {}, TypeError, "config"),
    ("pipeline_worker", (0, 1, {"model": {}, "lr": 0.1}), {}, ValueError, "config"),
    ("in_sequence", (0, 1, "jobs"), {}, TypeError, "jobs"),
    ("in_sequence", (0, 1, [("worker", {})]), {}, TypeError, "jobs"),
    ("reference_steps", ("net", [], 0.1), {}, TypeError, "net"),
    ("sharded_traffic", (0, 2), {}, ValueError, "n_params"),
    ("sharded_traffic", (10, 0), {}, ValueError, "world_size"),
    ("sharded_traffic", (10, 2), {"param_bytes": 0}, ValueError, "param_bytes"),
    ("tensor_parallel_ranks", (4, -1), {}, ValueError, "gpus"),
    ("tensor_parallel_ranks", (4, 2), {"cpu_ranks": 3}, ValueError, "cpu_ranks"),
    ("apply_fsdp", ("net", None), {}, TypeError, "net"),
    ("apply_tensor_parallel", ("net", None), {}, TypeError, "net"),
    # planner
    ("ModelSpec", (10**9, 8, 1024, 8, 2048, 1, 64.0), {}, TypeError, "global_batch"),
    ("ModelSpec", (10**9, 8, 1000, 16, 2048, 1, 64), {}, ValueError, "d_model"),
    ("ModelSpec", (10**9, 8, 1024, 8, 2048, 3, 64), {}, ValueError, "micro_batch"),
    ("ModelSpec", (10**9, 8, 1024, 8, 2048, 1, 64), {"kv_heads": 3}, ValueError, "kv_heads"),
    ("Cluster", (8, 1, 0, 1e9, 1e9, 1e12), {}, ValueError, "memory"),
    ("Cluster", ("8", 1, 8e10, 1e9, 1e9, 1e12), {}, TypeError, "gpus_per_node"),
    ("evaluate_layout", ("model", PLAN_CLUSTER), {}, TypeError, "model"),
    ("evaluate_layout", (PLAN_MODEL, PLAN_CLUSTER), {"tp": 3}, ValueError, "dp"),
    ("evaluate_layout", (PLAN_MODEL, PLAN_CLUSTER), {"tp": 0}, ValueError, "tp"),
    ("evaluate_layout", (PLAN_MODEL, PLAN_CLUSTER), {"pp": 4, "tp": 2}, ValueError, "pp"),
    ("plan_layouts", (PLAN_MODEL, "cluster"), {}, TypeError, "cluster"),
    ("layout_table", ("fsdp 8",), {}, TypeError, "layouts"),
    # context
    ("causal_work", (8, 3), {}, ValueError, "world_size"),
    ("context_parallel_ranks", (-1,), {}, ValueError, "gpus"),
    ("context_parallel_worker", (0, 1, "config"), {}, TypeError, "config"),
    ("context_parallel_worker", (0, 1, {"repeats": 1}), {}, ValueError, "config"),
    (
        "ring_attention",
        (torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2, 2)),
        {},
        ValueError,
        "q",
    ),
    ("ring_attention_demo", (0, 1, 0), {}, ValueError, "n_tokens"),
    ("sequence_chunks", (2, "striped"), {}, ValueError, "layout"),
    ("sequence_layout", (8, 3), {}, ValueError, "world_size"),
    # experts
    ("MoE", (), {"top_k": 9}, ValueError, "top_k"),
    ("MoE", (), {"capacity_factor": 0}, ValueError, "capacity_factor"),
    ("RowMoE", (), {"d_model": 0}, ValueError, "d_model"),
    ("balance_loss", (torch.zeros(4), torch.zeros(4, dtype=torch.long)), {}, ValueError, "probs"),
    ("expert_capacity", (10, 2, 1, 0.0), {}, ValueError, "capacity_factor"),
    ("expert_parallel_worker", (0, 1, "config"), {}, TypeError, "config"),
    ("keep_within_capacity", (torch.zeros(3), 2, 1), {}, ValueError, "experts"),
    ("moe_training_run", ([],), {}, TypeError, "batches"),
    ("moe_training_run", (batches,), {"aux_weight": -1.0}, ValueError, "aux_weight"),
    # overlap
    ("covered_seconds", ((0.0, 1.0),), {}, TypeError, "intervals"),
    ("overlap_share", ([(1.0, 0.0)], []), {}, ValueError, "comm"),
    ("overlap_share", ([], "0-1"), {}, TypeError, "compute"),
    ("overlap_worker", (0, 2, []), {}, TypeError, "config"),
    ("overlap_worker", (0, 2, {"model": {}}), {}, ValueError, "config"),
    ("plot_overlap", ({"a": {}},), {}, TypeError, "runs"),
    # multinode
    ("load_checkpoint", ("net", "folder"), {}, TypeError, "net"),
    ("run_agents", ([],), {}, ValueError, "commands"),
    ("run_agents", ("torchrun",), {}, TypeError, "commands"),
    ("run_agents", ([["true"]],), {"timeout_s": 0}, ValueError, "timeout_s"),
    # extensions
    ("extension_build_dir", ("not a name", "int f();"), {}, ValueError, "name"),
    ("extension_build_dir", ("ext", 3), {}, TypeError, "cpp_sources"),
    ("load_extension", ("ext", "int f();"), {"flags": [1]}, TypeError, "flags"),
    (
        "load_extension",
        ("ext", "int f();"),
        {"is_python_module": "yes"},
        TypeError,
        "is_python_module",
    ),
    # pretrained, serving, paging
    ("trained_gpt", ("huge",), {}, ValueError, "size"),
    ("trained_gpt", ("draft",), {"recipe": {"steps": 1}}, ValueError, "recipe lacks"),
    ("gpt_recipe", ("huge",), {}, ValueError, "size"),
    ("gpt_recipe", (), {"profile": "gpu"}, ValueError, "profile"),
    ("decode_cost", (tiny_net, 1, 8), {}, TypeError, "net"),
    ("decode_cost", (lambda: gpukit.GPT(max_len=8), 0, 8), {}, ValueError, "batch_size"),
    ("StaticCacheDecoder", (lambda: gpukit.GPT(max_len=8), 1, 9), {}, ValueError, "max_len"),
    ("count_ops", ("fn",), {}, TypeError, "fn"),
    ("capture_cuda_graph", (noop, lambda: torch.ones(2)), {}, ValueError, "inputs[0]"),
    ("BlockTable", (0, 4), {}, ValueError, "num_blocks"),
    ("PagedKVCache", (lambda: gpukit.GPT(max_len=8), 100, 8), {}, ValueError, "block_size"),
    ("Request", (lambda: torch.zeros(2, 2), 4), {}, ValueError, "prompt"),
    ("serve", ("cache", [], 2), {}, TypeError, "cache"),
]


def _build(value: object) -> object:
    if isinstance(value, list):
        return [_build(v) for v in value]
    if callable(value) and getattr(value, "__name__", "") in (
        "<lambda>",
        "tiny_net",
        "batches",
        "X4",
    ):
        return value()
    return value


# Cases that gpukit does not pass yet: known gaps, each to be fixed in gpukit and then removed
# from here (strict: a case that starts passing fails until its entry is deleted).
TODO: dict[str, str] = {}


def _params(cases: list[tuple]) -> list:
    seen: dict[str, int] = {}
    params = []
    for case in cases:
        name, _, _, exc, argument = case
        base = f"{name}-{argument}-{exc.__name__}"
        seen[base] = seen.get(base, 0) + 1
        case_id = base if seen[base] == 1 else f"{base}-{seen[base]}"
        marks = [pytest.mark.xfail(strict=True, reason=TODO[case_id])] if case_id in TODO else []
        params.append(pytest.param(*case, id=case_id, marks=marks))
    return params


@pytest.mark.parametrize(("name", "args", "kwargs", "exc", "argument"), _params(CASES))
def test_bad_input_raises_and_names_the_argument(
    name: str, args: tuple, kwargs: dict, exc: type[Exception], argument: str, tmp_path: Path
) -> None:
    function = getattr(gpukit, name)
    args = tuple(_build(a) for a in args)
    kwargs = {k: _build(v) for k, v in kwargs.items()}
    with pytest.raises(exc) as info:
        function(*args, **kwargs)
    # gpukit's message starts with the argument's name (as a word: "n", not "num_epochs"), so
    # that an error text of torch's quoted after it cannot stand in for it.
    assert re.match(rf"(?:\w+ and )?{re.escape(argument)}(?![\w(])", str(info.value)), (
        f"{name}: {info.value!r} does not name {argument!r}"
    )


def test_bad_profile_name_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUKIT_PROFILE", "fast")
    with pytest.raises(ValueError, match="GPUKIT_PROFILE must be one of"):
        gpukit.current_profile()


def test_accumulator_add_names_the_bad_value() -> None:
    metric = gpukit.Accumulator(2)
    with pytest.raises(ValueError, match="exactly n=2 values"):
        metric.add(1)
    with pytest.raises(TypeError, match="value 1 must be a number"):
        metric.add(1, "2")


# -- The table covers gpukit.__all__ -----------------------------------------------------------
def public_callables() -> set[str]:
    return {name for name in gpukit.__all__ if callable(getattr(gpukit, name))}


def test_every_public_callable_has_a_case() -> None:
    covered = {case[0] for case in CASES}
    missing = public_callables() - covered - NO_ARGUMENTS - NOT_CALLED_BY_PAGES
    assert not missing, (
        f"public gpukit names without a bad-input case in {Path(__file__).name}: "
        f"{sorted(missing)} (add cases to CASES)"
    )


def test_table_and_exemptions_name_only_public_callables() -> None:
    listed = {case[0] for case in CASES} | NO_ARGUMENTS | NOT_CALLED_BY_PAGES
    assert listed <= public_callables(), sorted(listed - public_callables())
    assert not ({case[0] for case in CASES} & (NO_ARGUMENTS | NOT_CALLED_BY_PAGES))


def test_exempt_functions_take_no_arguments() -> None:
    for name in NO_ARGUMENTS:
        assert not inspect.signature(getattr(gpukit, name)).parameters, name


def test_exempt_classes_are_exceptions_or_records() -> None:
    import dataclasses

    for name in NOT_CALLED_BY_PAGES:
        cls = getattr(gpukit, name)
        assert issubclass(cls, Exception) or dataclasses.is_dataclass(cls), name


def test_unknown_schedule_in_a_profile_is_named() -> None:
    accepted = r"schedule must be one of \['constant', 'warmup-cosine'\]"
    with pytest.raises(ValueError, match=accepted):
        gpukit.Workload(None, None, epochs=1, batch_size=8, lr=0.1, schedule="cosine")


def test_bad_image_size_in_a_profile_is_named() -> None:
    with pytest.raises(ValueError, match="resize must be >= 1"):
        gpukit.Workload(None, None, epochs=1, batch_size=8, lr=0.1, resize=0)
