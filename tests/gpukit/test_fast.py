"""Tests of gpukit.fast: train_fast's switches, each against D2L's loop in train_ch6."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpukit.fast import auto_precision, read_batches, train_fast
from gpukit.models import lenet
from gpukit.training import TrainResult, train_ch6

D2L_LOOP = {
    "momentum": 0,
    "schedule": "constant",
    "metrics_on_device": False,
    "on_device": False,
    "channels_last": False,
    "precision": "fp32",
    "compile": False,
}


def _toy_batches(n: int = 40, batch: int = 8, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    # Multiples of 1/255, like Fashion-MNIST's pixels: held on the device as uint8.
    X = torch.randint(0, 256, (n, 1, 28, 28), generator=g).float() / 255
    y = torch.arange(n) % 10
    return [(X[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def _numbers(result: TrainResult) -> list[float]:
    """Everything a run computes except the times, epoch after epoch."""
    return [x for s in result.history for x in (s.train_loss, s.train_acc, s.test_acc)]


def _run(net: nn.Module, **switches: object) -> TrainResult:
    data = _toy_batches()
    return train_fast(net, data, data[:2], 2, 0.1, "cpu", plot=False, verbose=False, **switches)


def test_every_switch_off_is_train_ch6():
    data = _toy_batches()
    d2l = train_ch6(lenet(), data, data[:2], 2, 0.1, "cpu", plot=False, verbose=False)
    assert _numbers(_run(lenet(), **D2L_LOOP)) == _numbers(d2l)


@pytest.mark.parametrize("switch", ["metrics_on_device", "channels_last"])
def test_switches_that_change_no_arithmetic_keep_the_numbers(switch):
    off = _run(lenet(), **D2L_LOOP)
    on = _run(lenet(), **{**D2L_LOOP, switch: True})
    assert _numbers(on) == pytest.approx(_numbers(off), rel=1e-4)


def test_data_on_the_device_in_full_batches_and_the_loader_left_alone():
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*map(torch.cat, zip(*_toy_batches(), strict=True))),
        batch_size=16,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    before = [y.tolist() for _, y in loader]
    loader.generator.manual_seed(0)
    result = train_fast(lenet(), loader, _toy_batches(), 2, 0.1, "cpu", plot=False, verbose=False)
    assert (result.n_train, result.batch_size) == (32, 16)  # 40 examples: 2 full batches of 16
    loader.generator.manual_seed(0)
    assert [y.tolist() for _, y in loader] == before


def test_read_batches_leaves_a_loaders_shuffle_alone():
    def shuffled() -> torch.utils.data.DataLoader:
        dataset = torch.utils.data.TensorDataset(torch.rand(40, 1, 2, 2), torch.arange(40))
        return torch.utils.data.DataLoader(
            dataset, 8, shuffle=True, generator=torch.Generator().manual_seed(0)
        )

    loader, fresh = shuffled(), shuffled()
    first = [y.tolist() for _, y in fresh]
    assert [y.tolist() for _, y in read_batches(loader)] == first
    assert [y.tolist() for _, y in read_batches(loader, 2)] == first[:2]
    # the epoch the loader gives next is still its first
    assert [y.tolist() for _, y in loader] == first != [y.tolist() for _, y in fresh]


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_trains(precision):
    result = _run(lenet(), precision=precision)
    assert precision in result.note
    assert torch.isfinite(torch.tensor(_numbers(result))).all()


def test_compile_warms_up_without_changing_the_weights(monkeypatch):
    compiled = []

    def fake_compile(model, mode=None, dynamic=None):
        compiled.append(mode)
        return model  # the warm-up and the loop run as they would on a compiled model

    monkeypatch.setattr(torch, "compile", fake_compile)
    net = nn.Sequential(lenet(), nn.BatchNorm1d(10))
    plain = _run(nn.Sequential(lenet(), nn.BatchNorm1d(10)), compile=False)
    warmed = _run(net, compile="reduce-overhead")
    assert compiled == ["reduce-overhead"] and warmed.compile_seconds > 0
    assert "compiled in" in warmed.note
    assert _numbers(warmed) == pytest.approx(_numbers(plain), rel=1e-5)


@pytest.mark.parametrize(("compile", "untimed"), [(False, 1), ("reduce-overhead", 3)])
def test_every_run_takes_untimed_steps_before_its_first_epoch(monkeypatch, compile, untimed):
    # Without them, an uncompiled run pays its first step's one-time costs in its first epoch
    # while a compiled one does not, and "reduce-overhead" records its CUDA graphs in it.
    monkeypatch.setattr(torch, "compile", lambda model, mode=None, dynamic=None: model)
    net, calls, fresh = lenet(), [], []

    def seen(module, inputs, output):
        calls.append(module.training)
        fresh.append(all(p.grad is None for p in module.parameters()))

    net.register_forward_hook(seen)
    result = _run(net, **{**D2L_LOOP, "compile": compile})
    steps = result.epochs * len(_toy_batches())
    assert calls.count(True) == steps + untimed
    assert calls[:untimed] == [True] * untimed  # before the first epoch's first step
    # ... each with no gradient to add into: under CUDA graphs, adding into the last run's
    # gradients reads memory that the graphs have overwritten
    assert fresh[:untimed] == [True] * untimed


def test_auto_precision_names_a_precision():
    assert auto_precision("cpu") in ("bf16", "fp32")
    if torch.cuda.is_available():
        assert auto_precision("cuda:0") in ("bf16", "fp16")


def _has_symbolic_shapes(gm: torch.fx.GraphModule) -> bool:
    """Whether a graph Dynamo hands to a backend takes a symbolic size (a dynamic shape)."""
    for node in gm.graph.find_nodes(op="placeholder"):
        value = node.meta.get("example_value")  # a size, or a tensor with its sizes
        sizes = value.shape if isinstance(value, torch.Tensor) else [value]
        if any(isinstance(size, torch.SymInt) for size in sizes):
            return True
    return False


def test_a_new_batch_size_compiles_a_static_graph(monkeypatch):
    # The page compiles LeNet at one batch size in its table and again, a new net of the same
    # class, at another in the recipe. Dynamo's automatic dynamic shapes would turn the
    # second compile into a dynamic-shape graph; train_fast asks for one graph per shape.
    graphs = []
    real_compile = torch.compile

    def record(gm, example_inputs):
        graphs.append(_has_symbolic_shapes(gm))
        return gm.forward  # run the captured graph as it is

    def compile_recording(model, **options):
        return real_compile(model, backend=record, **options)

    monkeypatch.setattr(torch, "compile", compile_recording)
    torch._dynamo.reset()
    try:
        _run(lenet(), compile=True, batch_size=16)
        _run(lenet(), compile=True, batch_size=8)
    finally:
        torch._dynamo.reset()
    assert len(graphs) >= 2
    assert not any(graphs), f"dynamic-shape graphs: {graphs}"


def test_the_code_the_page_prints_is_the_code_that_trains(monkeypatch):
    # The fast-training page shows these three (literalinclude) as "train_fast's code": a
    # refactoring that stops using one of them must fail here, not leave the page stale.
    from gpukit import fast, step

    calls = []

    def counting(name, real):
        def counted(*args, **kwargs):
            calls.append(name)
            return real(*args, **kwargs)

        return counted

    for module, name in ((fast, "DeviceBatches"), (fast, "prepare_model"), (step, "train_step")):
        monkeypatch.setattr(module, name, counting(name, getattr(module, name)))
    _run(lenet(), compile=False)
    assert set(calls) == {"DeviceBatches", "prepare_model", "train_step"}


def test_device_batches_hold_the_data():
    from gpukit.fast import DeviceBatches

    X, y = torch.arange(12, dtype=torch.float32).reshape(6, 1, 1, 2) / 255, torch.arange(6)
    batches = DeviceBatches([(X, y)], 4, "cpu", seed=0)
    assert batches.X.dtype == torch.uint8  # multiples of 1/255 are held as bytes
    assert len(batches) == 1  # the partial last minibatch is left out
    ((Xb, yb),) = list(batches)
    assert torch.equal(Xb, X[yb])


def test_train_step_updates_the_weights_and_checks_autocast():
    from gpukit.step import train_step

    net = nn.Linear(4, 3)
    before = net.weight.detach().clone()
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    X, y = torch.randn(8, 4), torch.arange(8) % 3
    train_step(net, X, y, optimizer=sgd, scaler=scaler, autocast=None)
    assert not torch.equal(net.weight, before)
    with pytest.raises(TypeError, match=r"autocast must be None or a torch\.dtype"):
        train_step(net, X, y, optimizer=sgd, scaler=scaler, autocast="bf16")
