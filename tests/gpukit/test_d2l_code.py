"""``import gpukit as d2l`` runs a reader's D2L code: the helpers it calls keep D2L's meaning.

Each test is written the way D2L's PyTorch code calls the helper (positional arguments where
D2L passes them positionally), including names no page of this site uses. A helper removed or
renamed, or a D2L argument dropped, fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import gpukit as d2l


def test_devices_as_d2l_names_them() -> None:
    assert d2l.cpu() == torch.device("cpu")
    assert d2l.try_gpu(10) == torch.device("cpu")  # no machine has 11 GPUs
    assert d2l.try_all_gpus() == ([d2l.gpu(i) for i in range(d2l.num_gpus())] or [d2l.cpu()])


def test_timer_as_d2l_uses_it() -> None:
    # D2L's minibatch-SGD chapter plots timer.cumsum() against the examples seen so far.
    timer = d2l.Timer()
    for _ in range(3):
        timer.start()
        torch.ones(64, 64) @ torch.ones(64, 64)
        timer.stop()
    cumulative = timer.cumsum()
    assert len(cumulative) == 3 and cumulative == sorted(cumulative)
    assert cumulative[-1] == pytest.approx(timer.sum())
    assert timer.avg() == pytest.approx(timer.sum() / 3)


def test_benchmark_as_d2l_uses_it(capsys: pytest.CaptureFixture[str]) -> None:
    with d2l.Benchmark("Run on CPU."):
        torch.ones(100, 100) @ torch.ones(100, 100)
    assert capsys.readouterr().out.startswith("Run on CPU.: ")


def test_resnet_data_as_d2l_loads_it(
    fake_fashion_mnist: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # D2L's ResNet section: load_data_fashion_mnist(batch_size, resize=96), then train_ch6.
    monkeypatch.setenv("GPUKIT_DATA", str(fake_fashion_mnist()))
    batch_size = 8
    train_iter, _ = d2l.load_data_fashion_mnist(batch_size, resize=96)
    X, y = next(iter(train_iter))
    assert X.shape == (batch_size, 1, 96, 96) and y.shape == (batch_size,)
    assert X.min() >= 0.0 and X.max() <= 1.0  # antialiased bilinear stays in range
    net = d2l.resnet18(10)
    assert net(X).shape == (batch_size, 10)
    _, test_iter = d2l.load_data_fashion_mnist(batch_size, 64)
    assert next(iter(test_iter))[0].shape == (batch_size, 1, 64, 64)


def test_multi_gpu_helpers_as_d2l_calls_them() -> None:
    devices = [d2l.cpu(), d2l.cpu()]  # D2L: d2l.try_all_gpus()
    X = torch.rand(6, 1, 28, 28)
    y = torch.arange(6)
    X_shards, y_shards = d2l.split_batch(X, y, devices)
    assert [len(shard) for shard in y_shards] == [3, 3]
    grads = [torch.ones(2), 2 * torch.ones(2)]
    d2l.allreduce(grads)
    assert all(torch.equal(g, torch.full((2,), 3.0)) for g in grads)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    metric = d2l.Accumulator(2)
    metric.add(d2l.accuracy(net(X_shards[0]), y_shards[0]), y_shards[0].numel())
    assert 0 <= metric[0] <= metric[1] == 3
    acc = d2l.evaluate_accuracy_gpu(net, [(X, y)])
    animator = d2l.Animator("epoch", "test acc", xlim=[1, 2])
    animator.add(1, (acc,))
    assert animator.Y[0] == [acc]
