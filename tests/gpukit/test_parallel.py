"""Tests of gpukit.parallel: the from-scratch helpers and the processes of launch()."""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.models import lenet_forward, lenet_params
from gpukit.parallel import (
    allreduce,
    choose_backend,
    get_params,
    launch,
    rank_device,
    ring_allreduce,
    ring_allreduce_demo,
    ring_allreduce_sweep,
    split_batch,
    time_collective,
)
from gpukit.training import sgd

CPU = torch.device("cpu")

# ---------------------------------------------------------------- split_batch


@settings(max_examples=60, deadline=None)
@given(
    n_devices=st.integers(1, 8),
    extra=st.integers(0, 40),
    features=st.lists(st.integers(1, 3), max_size=2),
)
def test_split_batch_properties(n_devices, extra, features):
    n = n_devices + extra
    X = torch.arange(n * max(1, len(features) and int(torch.tensor(features).prod())))
    X = X.reshape(n, *features).float() if features else X[:n].float()
    y = torch.arange(n)
    X_parts, y_parts = split_batch(X, y, [CPU] * n_devices)
    assert len(X_parts) == len(y_parts) == n_devices
    torch.testing.assert_close(torch.cat(X_parts), X)
    torch.testing.assert_close(torch.cat(y_parts), y)
    sizes = [len(p) for p in y_parts]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
    assert [len(p) for p in X_parts] == sizes
    assert all(p.device == CPU for p in X_parts + y_parts)


def test_split_batch_gives_every_device_a_part_where_scatter_would_not():
    # torch.chunk (behind nn.parallel.scatter) cuts 6 examples for 4 devices into 3 parts.
    assert len(torch.arange(6).chunk(4)) == 3
    X_parts, _ = split_batch(torch.zeros(6, 2), torch.zeros(6), ["cpu"] * 4)
    assert [len(p) for p in X_parts] == [2, 2, 1, 1]


@pytest.mark.gpus(1)
def test_split_batch_moves_parts_to_their_devices():
    devices = [torch.device("cuda", 0), CPU]
    X_parts, y_parts = split_batch(torch.ones(5, 2), torch.ones(5), devices)
    assert [p.device for p in X_parts] == [p.device for p in y_parts] == devices


@pytest.mark.parametrize(
    ("X", "y", "devices", "error", "match"),
    [
        (torch.zeros(4, 2), torch.zeros(3), ["cpu"], ValueError, "as many examples"),
        (torch.zeros(2, 2), torch.zeros(2), ["cpu"] * 3, ValueError, "fewer than the 3"),
        (torch.zeros(2), torch.zeros(2), [], ValueError, "must not be empty"),
        (torch.zeros(2), torch.zeros(2), "cpu", TypeError, "devices must be a list"),
        (torch.zeros(2), torch.zeros(2), torch.device("cpu"), TypeError, "devices must be"),
        (torch.zeros(2), torch.zeros(2), ["gpu:7"], ValueError, "must name a device"),
        ([1, 2], torch.zeros(2), ["cpu"], TypeError, "X must be"),
        (torch.zeros(2), [1, 2], ["cpu"], TypeError, "y must be"),
        (torch.tensor(1.0), torch.zeros(1), ["cpu"], ValueError, "at least one dimension"),
    ],
)
def test_split_batch_bad_arguments(X, y, devices, error, match):
    with pytest.raises(error, match=match):
        split_batch(X, y, devices)


# ---------------------------------------------------------------- allreduce


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 8),
    shape=st.lists(st.integers(1, 4), max_size=3),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64]),
    seed=st.integers(0, 2**16),
)
def test_allreduce_writes_the_sum_into_every_tensor(n, shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    data = [torch.randint(-50, 50, shape, generator=g).to(dtype) for _ in range(n)]
    expected = torch.stack(data).sum(dim=0)
    objects = [id(t) for t in data]
    pointers = [t.data_ptr() for t in data]
    allreduce(data)
    assert [id(t) for t in data] == objects and [t.data_ptr() for t in data] == pointers
    for t in data:
        assert t.dtype == dtype and torch.equal(t, expected)


def test_allreduce_one_tensor_and_gradients():
    (t,) = data = [torch.tensor([1.0, 2.0])]
    allreduce(data)
    assert t.tolist() == [1.0, 2.0]
    w = [torch.ones(2, requires_grad=True) for _ in range(3)]
    for i, p in enumerate(w):
        (p * (i + 1)).sum().backward()
    allreduce([p.grad for p in w])
    assert all(p.grad.tolist() == [6.0, 6.0] for p in w)


@pytest.mark.gpus(1)
def test_allreduce_across_devices():
    data = [torch.ones(3, device="cuda:0"), torch.full((3,), 2.0)]
    allreduce(data)
    assert data[0].device.type == "cuda" and data[1].device == CPU
    assert data[0].tolist() == data[1].tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        ([], ValueError, "at least one"),
        ([torch.zeros(2), torch.zeros(3)], ValueError, "one shape and dtype"),
        ([torch.zeros(2), torch.zeros(2, dtype=torch.int64)], ValueError, "one shape and dtype"),
        ([torch.zeros(2), [0.0, 0.0]], TypeError, r"data\[1\] must be"),
        (torch.zeros(2, 2), TypeError, "list of tensors"),
    ],
)
def test_allreduce_bad_arguments(data, error, match):
    with pytest.raises(error, match=match):
        allreduce(data)


# ---------------------------------------------------------------- get_params and a whole step


def test_get_params_copies_even_on_the_same_device():
    params = lenet_params(seed=0)
    a = get_params(params, "cpu")
    b = get_params(params, CPU)
    for p, q, r in zip(params, a, b, strict=True):
        assert q is not p and q.data_ptr() != r.data_ptr() and torch.equal(q, p)
        assert q.requires_grad and q.is_leaf and not p.requires_grad


@pytest.mark.parametrize(
    ("params", "device", "error"),
    [
        (torch.zeros(2), "cpu", TypeError),
        ([torch.zeros(2), 3], "cpu", TypeError),
        ([torch.zeros(2)], "nowhere", ValueError),
        ([torch.zeros(2)], 2.5, TypeError),
    ],
)
def test_get_params_bad_arguments(params, device, error):
    with pytest.raises(error, match=r"^(params|device)\b"):
        get_params(params, device)


def _train_step(params, devices, X, y, lr):
    """D2L's train_batch: split, forward and backward per device, all-reduce, SGD."""
    device_params = [get_params(params, d) for d in devices]
    X_parts, y_parts = split_batch(X, y, devices)
    for W, X_part, y_part in zip(device_params, X_parts, y_parts, strict=True):
        F.cross_entropy(lenet_forward(X_part, W), y_part, reduction="sum").backward()
    with torch.no_grad():
        for i in range(len(params)):
            allreduce([W[i].grad for W in device_params])
    for W in device_params:
        sgd(W, lr, X.shape[0])
    return device_params


@pytest.mark.parametrize("n_devices", [2, 3])
def test_replicas_take_the_same_step_as_one_device(n_devices):
    params = lenet_params(0.1, seed=0)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 1, 28, 28, generator=g)
    y = torch.arange(12) % 10
    (single,) = _train_step(params, [CPU], X, y, 0.5)
    replicas = _train_step(params, [CPU] * n_devices, X, y, 0.5)
    for W in replicas:
        for p, q in zip(W, single, strict=True):
            torch.testing.assert_close(p, q)
    # and every replica holds bit-for-bit the same parameters
    assert all(torch.equal(p, q) for p, q in zip(replicas[0], replicas[-1], strict=True))


# ---------------------------------------------------------------- outside a process group


def test_helpers_outside_a_process_group():
    assert not dist.is_initialized()
    assert rank_device() == CPU
    x = torch.ones(3)
    assert ring_allreduce(x) is x and x.tolist() == [1.0, 1.0, 1.0]
    assert choose_backend(torch.cuda.device_count() + 1) == "gloo"
    with pytest.raises(TypeError, match="tensor must be"):
        ring_allreduce([1.0])
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        choose_backend(0)


# ---------------------------------------------------------------- launch (spawned processes)


def echo_worker(rank: int, world_size: int, base: int) -> dict[str, int]:
    """Return what this rank knows, and a sum over the ranks through dist.all_reduce."""
    import os

    total = torch.tensor([float(rank)], device=rank_device())
    dist.all_reduce(total)
    return {
        "device": str(total.device),
        "rank": rank,
        "world_size": world_size,
        "env_rank": int(os.environ["RANK"]),
        "sum": int(total.item()) + base,
        "threads": torch.get_num_threads(),
        "backend": dist.get_backend(),
    }


def failing_worker(rank: int, world_size: int) -> None:
    if rank == 1:
        print("rank 1 gives up")
        raise ValueError("rank one cannot go on")
    dist.barrier()  # waits for rank 1, which never comes


def unpicklable_worker(rank: int, world_size: int) -> object:
    return lambda: rank


def crashing_worker(rank: int, world_size: int) -> None:
    """Rank 1 writes to both streams, from Python and at the C level, then dies at once."""
    import os
    import sys

    if rank == 1:
        print("rank one prints this")
        sys.stderr.write("rank one warns about this\n")
        os.write(2, b"written by C to stderr\n")
        os._exit(3)  # no exception, no traceback, no cleanup: like a crash in C++
    dist.barrier()


def hanging_worker(rank: int, world_size: int) -> None:
    """Rank 1 never reaches the barrier that rank 0 waits in; both say where they are."""
    import time

    print(f"rank {rank} is about to wait")
    if rank == 1:
        time.sleep(3600)
    dist.barrier()


def test_launch_returns_each_ranks_value_in_rank_order():
    results = launch(echo_worker, 2, 100, backend="gloo")
    assert [r["rank"] for r in results] == [r["env_rank"] for r in results] == [0, 1]
    assert all(r["world_size"] == 2 and r["sum"] == 101 for r in results)
    assert all(r["backend"] == "gloo" for r in results)
    import os

    assert all(r["threads"] == max(1, (os.cpu_count() or 1) // 2) for r in results)


@pytest.mark.gpus(1)
def test_launch_gives_each_nccl_rank_its_own_gpu():
    world_size = min(torch.cuda.device_count(), 2)
    results = launch(echo_worker, world_size, 0, backend="nccl")
    assert [r["device"] for r in results] == [f"cuda:{rank}" for rank in range(world_size)]
    assert all(r["backend"] == "nccl" for r in results)
    assert results[0]["sum"] == sum(range(world_size))


def ring_worker(rank: int, world_size: int) -> list[float]:
    """Ring all-reduce tensors of several sizes and layouts; return the largest errors."""
    errors = []
    g = torch.Generator().manual_seed(rank)
    device = rank_device()  # its GPU under NCCL
    # 2 elements on 3 ranks leaves a chunk empty; the transposed one is not contiguous.
    for x in (torch.randn(2, generator=g), torch.randn(7, 5, generator=g).T, torch.ones(())):
        x = x.to(device)
        expected = x.clone(memory_format=torch.contiguous_format)  # NCCL wants contiguous
        dist.all_reduce(expected)
        y = x.clone()
        assert ring_allreduce(y) is y and y.shape == x.shape
        errors.append((y - expected).abs().max().item())
    report = ring_allreduce_demo(rank, world_size, 1000, repeats=2)
    assert report["ring_sec"] > 0 and report["all_reduce_sec"] > 0
    errors.append(report["max_abs_diff"])
    return errors


def test_ring_allreduce_matches_all_reduce():
    results = launch(ring_worker, 3, backend="gloo")
    assert len(results) == 3
    assert all(e < 1e-5 for errors in results for e in errors)


@pytest.mark.gpus(2)
def test_ring_allreduce_over_nccl_between_two_gpus():
    assert choose_backend(2) == "nccl"
    results = launch(ring_worker, 2)
    assert all(e < 1e-5 for errors in results for e in errors)


def test_launch_names_the_failing_rank_and_its_error():
    with pytest.raises(
        RuntimeError, match=r"^rank 1 failed: ValueError: rank one cannot go on"
    ) as e:
        launch(failing_worker, 2, timeout_s=60)
    assert "Traceback in rank 1:" in str(e.value) and "failing_worker" in str(e.value)
    assert "--- output of rank 1 ---\nrank 1 gives up" in str(e.value)


def test_launch_shows_the_output_of_a_rank_that_dies_without_an_exception():
    with pytest.raises(RuntimeError) as e:
        launch(crashing_worker, 2, timeout_s=60, run_timeout_s=120)
    message = str(e.value)
    assert message.startswith("rank 1 died without a Python exception (exit code 3)")
    for line in ("rank one prints this", "rank one warns about this", "written by C to stderr"):
        assert line in message


def test_launch_stops_a_hang_within_run_timeout_with_every_ranks_output():
    import time

    start = time.monotonic()
    # 40 s: enough for two processes to import torch and print on a busy machine.
    with pytest.raises(RuntimeError, match=r"did not finish within run_timeout_s=40 s") as e:
        launch(hanging_worker, 2, timeout_s=600, run_timeout_s=40)
    assert time.monotonic() - start < 120  # not the collective's 600 s
    message = str(e.value)
    assert "rank 0 is about to wait" in message and "rank 1 is about to wait" in message


def test_launch_reports_a_result_that_cannot_be_sent_back():
    with pytest.raises(RuntimeError, match=r"rank \d failed: .*(pickle|lambda)"):
        launch(unpicklable_worker, 1)


def test_launch_bad_arguments():
    def local_worker(rank, world_size):
        return rank

    with pytest.raises(TypeError, match="top level of an importable module"):
        launch(local_worker, 2)
    with pytest.raises(TypeError, match="top level of an importable module"):
        launch(lambda rank, world_size: rank, 2)
    with pytest.raises(TypeError, match="worker must be a function"):
        launch("echo_worker", 2)
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        launch(echo_worker, 0)
    with pytest.raises(TypeError, match="world_size must be an int"):
        launch(echo_worker, 2.0)
    with pytest.raises(ValueError, match="backend must be"):
        launch(echo_worker, 1, backend="mpi")
    with pytest.raises(ValueError, match="timeout_s"):
        launch(echo_worker, 1, timeout_s=0)
    with pytest.raises(ValueError, match="run_timeout_s"):
        launch(echo_worker, 1, run_timeout_s=-1)
    if torch.cuda.device_count() < 64:
        with pytest.raises(ValueError, match="one GPU per rank"):
            launch(echo_worker, 64, backend="nccl")


def test_ring_allreduce_sweep_measures_every_size_in_one_group():
    reports = launch(ring_allreduce_sweep, 3, [7, 1000], 2, backend="gloo")
    assert [sorted(report) for report in reports] == [[7, 1000]] * 3
    for rank, report in enumerate(reports):
        for numel in (7, 1000):
            assert report[numel]["rank"] == rank
            assert report[numel]["max_abs_diff"] < 1e-5 and report[numel]["ring_sec"] > 0


@pytest.mark.parametrize(
    ("sizes", "error", "match"),
    [
        (1000, TypeError, "sizes must be a sequence of ints"),
        ("1000", TypeError, "sizes must be a sequence of ints"),
        ([], ValueError, "sizes must hold at least one size"),
        ([10, 0], ValueError, r"sizes\[i\] must be >= 1"),
        ([10, 2.5], TypeError, r"sizes\[i\] must be an int"),
    ],
)
def test_ring_allreduce_sweep_bad_sizes(sizes, error, match):
    with pytest.raises(error, match=match):
        ring_allreduce_sweep(0, 1, sizes)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((0, 1), {"numel": 0}, ValueError, "numel must be >= 1"),
        ((0, 1), {"repeats": 0}, ValueError, "repeats must be >= 1"),
        ((0, 1), {"numel": 1.5}, TypeError, "numel must be an int"),
    ],
)
def test_ring_allreduce_demo_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        ring_allreduce_demo(*args, **kwargs)


def time_collective_cases(rank: int, world_size: int) -> list[tuple[int, list[float]]]:
    """``time_collective`` on an all-reduce in a gloo group, twice: (calls made, seconds)."""

    def case(repeats: int, sleeps: dict[int, float]) -> tuple[int, list[float]]:
        calls = []

        def reduce() -> torch.Tensor:
            x = torch.ones(1)
            dist.all_reduce(x)
            time.sleep(sleeps.get(len(calls), 0.0))  # after the reduce: late for the next one
            calls.append(x)
            return x

        out, seconds = time_collective(reduce, repeats)
        assert out is calls[-1] and out.item() == world_size
        return len(calls), seconds

    # Rank 1 comes late to the only timed call (it sleeps after its warm-up): without the
    # barrier, rank 0 would time the wait inside the all-reduce.
    late = case(1, {0: 0.5} if rank == 1 else {})
    # The first and the last of three timed calls are slow on every rank: each call's own time.
    slow = case(3, {1: 0.3, 3: 0.3})
    return [late, slow]


def test_time_collective_starts_every_call_together():
    for (calls_late, late), (calls_slow, slow) in launch(time_collective_cases, 2, backend="gloo"):
        assert (calls_late, calls_slow) == (2, 4)  # one untimed call, then the repeats
        assert len(late) == 1 and late[0] < 0.25, late
        assert len(slow) == 3 and slow[0] > 0.25 and slow[1] < 0.25 and slow[2] > 0.25, slow
