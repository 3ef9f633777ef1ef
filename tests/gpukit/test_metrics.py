"""Tests of gpukit.metrics."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from gpukit.metrics import Accumulator, accuracy, evaluate_accuracy_gpu

# ---------------------------------------------------------------- Accumulator


def test_accumulator_adds_resets_and_indexes():
    metric = Accumulator(3)
    metric.add(1, 2.5, torch.tensor(3))
    metric.add(1, 0.5, torch.tensor([1.0]))
    assert metric.data == [2.0, 3.0, 4.0]
    assert (metric[0], metric[-1]) == (2.0, 4.0)
    assert all(isinstance(v, float) for v in metric.data)
    metric.reset()
    assert metric.data == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-2, ValueError), (2.0, TypeError)])
def test_accumulator_n_errors(n, error):
    with pytest.raises(error, match="n must be"):
        Accumulator(n)


@pytest.mark.parametrize("values", [(1,), (1, 2, 3)])
def test_accumulator_add_needs_exactly_n_values(values):
    metric = Accumulator(2)
    with pytest.raises(ValueError, match="exactly n=2 values"):
        metric.add(*values)
    assert metric.data == [0.0, 0.0]


def test_accumulator_add_rejects_non_numbers():
    metric = Accumulator(2)
    with pytest.raises(TypeError, match="value 1 must be a number"):
        metric.add(1, "2")
    with pytest.raises(ValueError, match="value 0 must be a number or a one-element tensor"):
        metric.add(torch.ones(2), 1)
    assert metric.data == [0.0, 0.0]  # nothing half-added


# ---------------------------------------------------------------- accuracy


def test_accuracy_from_scores_and_from_classes():
    y_hat = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    y = torch.tensor([1, 1, 1])
    assert accuracy(y_hat, y) == 2.0
    assert isinstance(accuracy(y_hat, y), float)
    assert accuracy(torch.tensor([1, 0, 1]), y) == 2.0
    assert accuracy(torch.tensor([[1], [0], [1]]), y) == 2.0
    assert accuracy(torch.empty(0, 3), torch.empty(0, dtype=torch.long)) == 0.0


@settings(deadline=None)  # shared build machines are slow at times
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=30))
def test_accuracy_counts_matches(pairs):
    predicted = torch.tensor([p for p, _ in pairs], dtype=torch.long)
    y = torch.tensor([t for _, t in pairs], dtype=torch.long)
    scores = nn.functional.one_hot(predicted, 5).float() if pairs else torch.empty(0, 5)
    expected = float(sum(p == t for p, t in pairs))
    assert accuracy(scores, y) == expected
    assert accuracy(predicted, y) == expected


@pytest.mark.parametrize(
    ("y_hat", "y", "error", "pattern"),
    [
        (torch.zeros(3, 2), torch.zeros(4, dtype=torch.long), ValueError, "got 3 and 4"),
        (torch.zeros(3), torch.zeros(3, 1), ValueError, r"y must have shape \(N,\)"),
        (torch.zeros(3, 2, 2), torch.zeros(3), ValueError, r"y_hat must have shape \(N, C\)"),
        ([0.1, 0.9], torch.zeros(1), TypeError, "y_hat must be a torch.Tensor"),
        (torch.zeros(1), [1], TypeError, "y must be a torch.Tensor"),
    ],
)
def test_accuracy_errors(y_hat, y, error, pattern):
    with pytest.raises(error, match=pattern):
        accuracy(y_hat, y)


# ---------------------------------------------------------------- evaluate_accuracy_gpu


def identity_net() -> nn.Linear:
    net = nn.Linear(2, 2)
    with torch.no_grad():
        net.weight.copy_(torch.eye(2))
        net.bias.zero_()
    return net


X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [0.0, 3.0]])
Y = torch.tensor([0, 1, 1, 1])
BATCHES = [(X[:2], Y[:2]), (X[2:], Y[2:])]


def test_evaluate_accuracy_fraction():
    assert evaluate_accuracy_gpu(identity_net(), BATCHES) == 0.75
    assert evaluate_accuracy_gpu(identity_net(), [(X[:1], Y[:1])]) == 1.0


class Recorder(nn.Module):
    """Records, at each forward, its mode and whether gradients are on."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = identity_net()
        self.dropout = nn.Dropout(0.5)
        self.seen: list[tuple[bool, bool, bool]] = []

    def forward(self, x):
        self.seen.append((self.training, self.dropout.training, torch.is_grad_enabled()))
        return self.linear(x)


def test_evaluates_in_eval_mode_without_gradients_and_restores_modes():
    net = Recorder()
    net.dropout.eval()  # mixed modes must come back exactly as they were
    evaluate_accuracy_gpu(net, BATCHES)
    assert net.seen == [(False, False, False)] * 2
    assert net.training and not net.dropout.training and net.linear.training
    net.eval()
    evaluate_accuracy_gpu(net, BATCHES)
    assert not net.training


def test_modes_restored_when_the_model_fails():
    class Failing(Recorder):
        def forward(self, x):
            raise RuntimeError("boom")

    net = Failing()
    with pytest.raises(RuntimeError, match="boom"):
        evaluate_accuracy_gpu(net, BATCHES)
    assert net.training and net.dropout.training


def test_list_inputs_and_plain_callables():
    class TwoInputs(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = identity_net()

        def forward(self, a, b):
            return self.linear(a + b)

    net = TwoInputs()
    split = [([X, torch.zeros_like(X)], Y)]
    assert evaluate_accuracy_gpu(lambda inputs: net(*inputs), split, device="cpu") == 0.75
    assert evaluate_accuracy_gpu(lambda x: x, [(X, Y)]) == 0.75  # no parameters: stays put


def test_model_without_parameters():
    assert evaluate_accuracy_gpu(nn.Identity(), [(X, Y)]) == 0.75


@pytest.mark.parametrize(
    ("net", "data_iter", "device", "error", "pattern"),
    [
        (3, BATCHES, None, TypeError, "net must be"),
        (identity_net(), 5, None, TypeError, "data_iter must be an iterable"),
        (identity_net(), BATCHES, 0, TypeError, "device must be"),
        (identity_net(), [], None, ValueError, "data_iter yielded no examples"),
        (identity_net(), [X], None, ValueError, r"data_iter must yield \(X, y\) pairs"),
    ],
)
def test_evaluate_errors(net, data_iter, device, error, pattern):
    with pytest.raises(error, match=pattern):
        evaluate_accuracy_gpu(net, data_iter, device)


@pytest.mark.gpus(1)
def test_evaluate_on_the_model_device():
    net = identity_net().cuda()
    assert evaluate_accuracy_gpu(net, BATCHES) == 0.75  # CPU batches moved to the GPU
