"""Tests of gpukit.timing: the numbers, the printed form, and waiting for the GPU."""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from gpukit.timing import Benchmark, Timer, format_seconds

TIME = re.compile(r"\d+\.\d+ sec")  # how executed pages mask times


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0.0000 sec"),
        (0.123456, "0.1235 sec"),
        (12, "12.0000 sec"),
        (1e-6, "0.0000 sec"),
        (np.float32(0.5), "0.5000 sec"),
    ],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text
    assert TIME.fullmatch(format_seconds(seconds))


@pytest.mark.parametrize(
    ("seconds", "error"),
    [
        (-0.1, ValueError),
        (math.inf, ValueError),
        (math.nan, ValueError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
    ],
)
def test_format_seconds_rejects(seconds, error):
    with pytest.raises(error, match="seconds must be"):
        format_seconds(seconds)


def test_timer_math():
    timer = Timer()
    timer.times = [1.0, 2.0, 6.0]
    assert timer.sum() == 9.0
    assert timer.avg() == 3.0


def test_timer_measures_and_records():
    timer = Timer()
    time.sleep(0.02)
    first = timer.stop()
    assert 0.02 <= first < 1.0
    assert timer.times == [first]
    timer.start()  # restarts: the next interval excludes the first
    second = timer.stop()
    assert second < 0.02
    assert timer.times == [first, second]
    assert timer.sum() == pytest.approx(first + second)


def test_timer_starts_when_created():
    timer = Timer()
    time.sleep(0.01)
    assert timer.stop() >= 0.01


def test_empty_timer():
    timer = Timer()
    assert timer.sum() == 0
    with pytest.raises(statistics.StatisticsError):
        timer.avg()


def test_timer_accepts_cpu_device():
    assert Timer("cpu").device is None
    assert Timer(torch.device("cpu")).stop() >= 0


@pytest.mark.parametrize(
    ("device", "error", "pattern"),
    [
        (0, TypeError, "device must be a str"),
        ("no-such-device", ValueError, "device must name a device"),
        ("meta", ValueError, "CPU or a CUDA device"),
    ],
)
def test_timer_device_errors(device, error, pattern):
    with pytest.raises(error, match=pattern):
        Timer(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_timer_cuda_device_without_cuda():
    with pytest.raises(ValueError, match="CUDA is not available"):
        Timer("cuda:0")


def test_wall_clock_timer_synchronizes_every_gpu_in_use(monkeypatch):
    calls: list[tuple[str, int]] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    reserved = {0: 0, 1: 0, 2: 2**20, 3: 0}  # bytes the allocator holds on each GPU
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda i: reserved[i])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda i: calls.append(("sync", i)))
    timer = Timer()
    # start() waits for work queued before it on the current GPU and on any GPU holding
    # memory; GPUs 0 and 3 were never used, and synchronizing would create a context there.
    assert calls == [("sync", 1), ("sync", 2)]
    calls.clear()
    timer.stop()
    assert calls == [("sync", 1), ("sync", 2)]


def test_wall_clock_timer_leaves_uninitialized_cuda_alone(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)

    def fail(*args):
        raise AssertionError("synchronize called although CUDA was never used")

    monkeypatch.setattr(torch.cuda, "synchronize", fail)
    Timer().stop()


def test_benchmark_prints_description_and_time(capsys):
    x = torch.ones(64, 64)
    with Benchmark("matmul") as bench:
        x @ x
    out = capsys.readouterr().out
    assert re.fullmatch(r"matmul: \d+\.\d{4} sec\n", out)
    assert out == f"matmul: {format_seconds(bench.timer.times[-1])}\n"


def test_benchmark_default_description_and_duration(capsys):
    with Benchmark() as bench:
        time.sleep(0.02)
    assert capsys.readouterr().out.startswith("Done: ")
    assert bench.timer.times[-1] >= 0.02


def test_benchmark_excludes_time_before_the_block(capsys):
    bench = Benchmark("late")
    time.sleep(0.03)
    with bench:
        pass
    assert bench.timer.times[-1] < 0.03
    capsys.readouterr()


def test_benchmark_prints_nothing_when_the_block_fails(capsys):
    with pytest.raises(KeyError), Benchmark("fails"):
        raise KeyError("x")
    assert capsys.readouterr().out == ""


def test_benchmark_argument_errors():
    with pytest.raises(TypeError, match="description must be a str"):
        Benchmark(3)
    with pytest.raises(TypeError, match="device must be"):
        Benchmark("x", device=1.5)


SLEEP_CYCLES = 200_000_000  # about 0.1 s on current GPUs


@pytest.mark.gpus(1)
def test_wall_clock_timer_waits_for_queued_gpu_work():
    torch.cuda.synchronize()
    start = time.perf_counter()
    torch.cuda._sleep(SLEEP_CYCLES)
    queued = time.perf_counter() - start
    timer = Timer()  # the GPU is still busy: start() must wait for it
    assert time.perf_counter() - start > 5 * queued
    torch.cuda._sleep(SLEEP_CYCLES)
    waited = timer.stop()
    assert waited > 5 * queued


@pytest.mark.gpus(2)
def test_wall_clock_timer_waits_for_work_queued_on_another_gpu():
    x = torch.ones(1, device="cuda:1")  # GPU 1 is in use, GPU 0 stays the current device
    torch.cuda.synchronize(1)
    start = time.perf_counter()
    with torch.cuda.device(1):
        torch.cuda._sleep(SLEEP_CYCLES)
    queued = time.perf_counter() - start
    Timer().stop()
    assert time.perf_counter() - start > 5 * queued
    del x


@pytest.mark.gpus(2)
def test_wall_clock_timer_leaves_unused_gpus_alone():
    # A fresh process: earlier tests in this one have used every GPU. Synchronizing a GPU
    # creates a CUDA context on it; a DDP process must not open one on its neighbour's GPU.
    code = (
        "import torch; from gpukit.timing import Timer; "
        "x = torch.ones(1, device='cuda:0'); Timer().stop(); "
        "print(torch._C._cuda_hasPrimaryContext(1))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.gpus(1)
def test_event_timer_measures_gpu_work():
    Timer("cuda:0").stop()  # warm-up
    timer = Timer("cuda:0")
    torch.cuda._sleep(SLEEP_CYCLES)
    long = timer.stop()
    timer.start()
    short = timer.stop()
    assert long > 10 * short and long > 0.01
    assert timer.device == torch.device("cuda", 0)


@pytest.mark.gpus(1)
def test_event_benchmark(capsys):
    with Benchmark("gpu", device="cuda"):
        torch.cuda._sleep(SLEEP_CYCLES)
    assert TIME.search(capsys.readouterr().out)
