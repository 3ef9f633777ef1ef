"""Counting correct predictions: ``Accumulator``, ``accuracy``, ``evaluate_accuracy_gpu``.

Names and results follow D2L's PyTorch helpers, with checks D2L lacks: its
``Accumulator.add`` silently drops extra values and its ``accuracy`` silently compares tensors
of different lengths; here both raise an error saying what was expected.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real

import torch
from torch import nn

from gpukit._checks import check_int, check_type
from gpukit.devices import existing_device

__all__ = ["Accumulator", "accuracy", "evaluate_accuracy_gpu"]


class Accumulator:
    """Keep ``n`` running sums (D2L's ``Accumulator``).

    Example:
        >>> metric = Accumulator(2)
        >>> metric.add(3, 4)
        >>> metric.add(1.5, torch.tensor(2))
        >>> metric[0], metric[1]
        (4.5, 6.0)
    """

    def __init__(self, n: int) -> None:
        self.data = [0.0] * check_int(n, "n", 1, "how many sums to keep")

    def add(self, *args: float | torch.Tensor) -> None:
        """Add one value to each sum: exactly ``n`` numbers or one-element tensors."""
        if len(args) != len(self.data):
            raise ValueError(f"add() takes exactly n={len(self.data)} values, got {len(args)}")
        for i, value in enumerate(args):
            accepted = f"value {i} must be a number or a one-element tensor"
            if isinstance(value, torch.Tensor) and value.numel() != 1:
                raise ValueError(f"{accepted}, got a tensor of shape {tuple(value.shape)}")
            if isinstance(value, bool) or not isinstance(value, torch.Tensor | Real):
                raise TypeError(f"{accepted}, got {type(value).__name__}")
        self.data = [a + float(b) for a, b in zip(self.data, args, strict=True)]

    def reset(self) -> None:
        """Set every sum back to 0."""
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx: int) -> float:
        return self.data[idx]


def _correct(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The number of correct predictions, as a tensor on ``y_hat``'s device."""
    if y_hat.dim() == 2:
        y_hat = y_hat.argmax(dim=1) if y_hat.shape[1] > 1 else y_hat[:, 0]
    return (y_hat.to(y.dtype) == y.to(y_hat.device)).sum()


def accuracy(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    """Count the correct predictions (D2L's ``accuracy``: a count, not a fraction).

    ``y_hat`` holds scores of shape ``(N, C)`` (the predicted class is the largest score) or
    the predicted classes, shape ``(N,)``; ``y`` the true classes, shape ``(N,)``.

    Example:
        >>> y_hat = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
        >>> accuracy(y_hat, torch.tensor([1, 1, 1]))
        2.0
    """
    check_type(y_hat, "y_hat", torch.Tensor, "a torch.Tensor")
    check_type(y, "y", torch.Tensor, "a torch.Tensor")
    if y.dim() != 1:
        raise ValueError(f"y must have shape (N,) (one class per example), got {tuple(y.shape)}")
    if y_hat.dim() not in (1, 2):
        raise ValueError(f"y_hat must have shape (N, C) or (N,), got {tuple(y_hat.shape)}")
    if len(y_hat) != len(y):
        raise ValueError(f"y_hat and y must hold as many examples, got {len(y_hat)} and {len(y)}")
    return float(_correct(y_hat, y))


def evaluate_accuracy_gpu(
    net: nn.Module,
    data_iter: Iterable[tuple[torch.Tensor, torch.Tensor]],
    device: str | torch.device | None = None,
) -> float:
    """Return the fraction of the examples in ``data_iter`` that ``net`` classifies correctly.

    As in D2L the model runs in evaluation mode without gradients, on ``device`` (``None``: the
    device of its first parameter). ``X`` may be a tensor or a list of tensors. Unlike D2L, the
    train/eval mode of every submodule is restored afterwards, so evaluating in the middle of
    training leaves dropout and batch norm as they were, and the count is read from the device
    once, at the end (D2L's waits for it after every minibatch).

    Example:
        >>> net = nn.Identity()  # the largest input is the predicted class
        >>> X, y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]]), torch.tensor([0, 1, 1])
        >>> evaluate_accuracy_gpu(net, [(X[:2], y[:2]), (X[2:], y[2:])]), net.training
        (0.6666666666666666, True)
    """
    if not callable(net):
        raise TypeError(f"net must be an nn.Module or a callable, got {type(net).__name__}")
    check_type(data_iter, "data_iter", Iterable, "an iterable of (X, y) minibatches")
    if device is not None:
        device = existing_device(device)
    elif isinstance(net, nn.Module):
        device = next((p.device for p in net.parameters()), None)
    modules = list(net.modules()) if isinstance(net, nn.Module) else []
    modes = [m.training for m in modules]
    correct: torch.Tensor | int = 0
    examples = 0
    try:
        if isinstance(net, nn.Module):
            net.eval()
        with torch.no_grad():
            for batch in data_iter:
                if not isinstance(batch, list | tuple) or len(batch) != 2:
                    raise ValueError("data_iter must yield (X, y) pairs")
                X, y = batch
                if device is not None:
                    X = [x.to(device) for x in X] if isinstance(X, list | tuple) else X.to(device)
                    y = y.to(device)
                correct += _correct(net(X), y)
                examples += y.numel()
    finally:
        for module, training in zip(modules, modes, strict=True):
            module.training = training
    if examples == 0:
        raise ValueError("data_iter yielded no examples, so there is no accuracy to compute")
    return float(correct) / examples
