"""Counting correct predictions: ``Accumulator``, ``accuracy``, ``evaluate_accuracy_gpu``.

The names and results follow D2L's PyTorch helpers. The differences are checks: D2L's
``Accumulator.add`` silently drops extra values and ``accuracy`` silently compares tensors of
different lengths; here both raise an error saying what was expected.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real

import torch
from torch import nn

from gpukit._checks import check_int

__all__ = ["Accumulator", "accuracy", "evaluate_accuracy_gpu"]


class Accumulator:
    """Keep ``n`` running sums (D2L's ``Accumulator``).

    Args:
        n: how many sums to keep, at least 1.

    Example:
        >>> metric = Accumulator(2)
        >>> metric.add(3, 4)
        >>> metric.add(1.5, torch.tensor(2))
        >>> metric[0], metric[1]
        (4.5, 6.0)
        >>> metric.reset()
        >>> metric[0]
        0.0
    """

    def __init__(self, n: int) -> None:
        check_int(n, "n", 1, "how many sums to keep")
        self.data = [0.0] * n

    def add(self, *args: float | torch.Tensor) -> None:
        """Add one value to each sum; exactly ``n`` values, numbers or one-element tensors.

        Example:
            >>> metric = Accumulator(3)
            >>> metric.add(1, 2, 3)
            >>> metric.data
            [1.0, 2.0, 3.0]
        """
        if len(args) != len(self.data):
            raise ValueError(
                f"add() takes exactly n={len(self.data)} values (one per sum), got {len(args)}"
            )
        values = []
        for i, value in enumerate(args):
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    raise ValueError(
                        f"value {i} must be a number or a one-element tensor, "
                        f"got a tensor of shape {tuple(value.shape)}"
                    )
                values.append(float(value.item()))
            elif isinstance(value, Real) and not isinstance(value, bool):
                values.append(float(value))
            else:
                raise TypeError(
                    f"value {i} must be a number or a one-element tensor, "
                    f"got {type(value).__name__}"
                )
        self.data = [a + b for a, b in zip(self.data, values, strict=True)]

    def reset(self) -> None:
        """Set every sum back to 0.

        Example:
            >>> metric = Accumulator(1)
            >>> metric.add(5)
            >>> metric.reset()
            >>> metric.data
            [0.0]
        """
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx: int) -> float:
        return self.data[idx]

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"Accumulator({self.data})"


def accuracy(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    """Count the correct predictions, as a float (D2L's ``accuracy``: a count, not a fraction).

    Args:
        y_hat: scores of shape ``(N, C)`` (the predicted class is the largest score), or the
            predicted classes, shape ``(N,)``.
        y: the true classes, shape ``(N,)``.

    Returns:
        How many of the ``N`` predictions equal ``y``.

    Example:
        >>> y_hat = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
        >>> accuracy(y_hat, torch.tensor([1, 1, 1]))
        2.0
        >>> accuracy(torch.tensor([0, 1]), torch.tensor([0, 1]))
        2.0
    """
    for name, value in (("y_hat", y_hat), ("y", y)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if y.dim() != 1:
        raise ValueError(f"y must have shape (N,) (one class per example), got {tuple(y.shape)}")
    if y_hat.dim() == 2 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(dim=1)
    elif y_hat.dim() == 2:
        y_hat = y_hat[:, 0]
    elif y_hat.dim() != 1:
        raise ValueError(
            f"y_hat must have shape (N, C) (scores) or (N,) (classes), got {tuple(y_hat.shape)}"
        )
    if y_hat.shape[0] != y.shape[0]:
        raise ValueError(
            f"y_hat and y must describe the same number of examples, got {y_hat.shape[0]} "
            f"predictions and {y.shape[0]} labels"
        )
    cmp = y_hat.to(y.dtype) == y.to(y_hat.device)
    return float(cmp.sum().item())


def _move(X: torch.Tensor | list[torch.Tensor], device: torch.device | None) -> object:
    if device is None:
        return X
    if isinstance(X, list | tuple):
        return [x.to(device) for x in X]
    return X.to(device)


def evaluate_accuracy_gpu(
    net: nn.Module,
    data_iter: Iterable[tuple[torch.Tensor, torch.Tensor]],
    device: str | torch.device | None = None,
) -> float:
    """Return the fraction of examples in ``data_iter`` that ``net`` classifies correctly.

    Like D2L's ``evaluate_accuracy_gpu``, the model runs in evaluation mode without gradients.
    Unlike D2L, the model's previous train/eval mode (of every submodule) is restored
    afterwards, so evaluating in the middle of training does not leave dropout or batch-norm
    switched to evaluation behaviour.

    Args:
        net: the model (an ``nn.Module``, or any callable when ``device`` is given).
        data_iter: yields ``(X, y)`` minibatches; ``X`` may be a tensor or a list of tensors.
        device: where to run; ``None``: the device of the model's first parameter (CPU for
            a model without parameters).

    Returns:
        Correct predictions divided by the number of examples.

    Example:
        >>> net = nn.Linear(2, 2)
        >>> with torch.no_grad():
        ...     _ = net.weight.copy_(torch.eye(2)), net.bias.zero_()
        >>> X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [0.0, 3.0]])
        >>> y = torch.tensor([0, 1, 1, 1])
        >>> evaluate_accuracy_gpu(net, [(X[:2], y[:2]), (X[2:], y[2:])])
        0.75
        >>> net.training  # the mode it had before
        True
        >>> if torch.cuda.is_available():
        ...     assert evaluate_accuracy_gpu(net.cuda(), [(X, y)]) == 0.75
    """
    if not callable(net):
        raise TypeError(f"net must be an nn.Module or a callable, got {type(net).__name__}")
    if not isinstance(data_iter, Iterable):
        raise TypeError(
            f"data_iter must be an iterable of (X, y) minibatches, got {type(data_iter).__name__}"
        )
    if device is not None:
        if not isinstance(device, str | torch.device):
            raise TypeError(
                f"device must be None, a str or a torch.device, got {type(device).__name__}"
            )
        device = torch.device(device)
    elif isinstance(net, nn.Module):
        param = next(iter(net.parameters()), None)
        device = param.device if param is not None else None

    modes = {}
    if isinstance(net, nn.Module):
        modes = {module: module.training for module in net.modules()}
        net.eval()
    metric = Accumulator(2)
    try:
        with torch.no_grad():
            for batch in data_iter:
                if not isinstance(batch, list | tuple) or len(batch) != 2:
                    raise ValueError("data_iter must yield (X, y) pairs")
                X, y = batch
                y = y.to(device) if device is not None else y
                metric.add(accuracy(net(_move(X, device)), y), y.numel())
    finally:
        for module, training in modes.items():
            module.training = training
    if metric[1] == 0:
        raise ValueError("data_iter yielded no examples, so there is no accuracy to compute")
    return metric[0] / metric[1]
