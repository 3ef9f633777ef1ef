"""One training step, as every training function of gpukit takes it.

:func:`gpukit.training.train_ch6`, its data-parallel versions and
:func:`gpukit.fast.train_fast` all run their minibatches through :func:`train_step`: the
forward pass and the loss under ``torch.autocast``, the backward pass through a gradient
scaler, and the optimizer's update.
"""

from __future__ import annotations

import torch
from torch import nn

from gpukit._checks import check_type

__all__ = ["train_step"]


def train_step(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    autocast: torch.dtype | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on the minibatch ``(X, y)``; returns the predictions and the loss.

    Under ``torch.autocast`` the forward pass and the loss run their convolutions and matrix
    products in the dtype ``autocast`` (``None``: fp32); weights, gradients and the update
    stay fp32. For float16 the scaler multiplies the loss before ``backward``, so that small
    gradients do not round to zero, and divides the gradients by the same factor before the
    update; when it is disabled (fp32, bf16) it passes everything on unchanged.

    Example:
        >>> net = nn.Linear(4, 3)
        >>> sgd = torch.optim.SGD(net.parameters(), lr=0.1)
        >>> scaler = torch.amp.GradScaler("cpu", enabled=False)
        >>> X, y = torch.randn(8, 4), torch.arange(8) % 3
        >>> y_hat, loss = train_step(net, X, y, optimizer=sgd, scaler=scaler, autocast=None)
        >>> y_hat.shape, loss.dim()
        (torch.Size([8, 3]), 0)
    """
    check_type(optimizer, "optimizer", torch.optim.Optimizer, "a torch.optim.Optimizer")
    check_type(scaler, "scaler", torch.amp.GradScaler, "a torch.amp.GradScaler")
    if autocast is not None and not isinstance(autocast, torch.dtype):
        raise TypeError(f"autocast must be None or a torch.dtype, got {autocast!r}")
    optimizer.zero_grad()
    with torch.autocast(X.device.type, autocast, enabled=autocast is not None):
        y_hat = model(X)
        loss = nn.functional.cross_entropy(y_hat, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # skips the update if a gradient overflowed to inf or NaN
    scaler.update()  # after an overflow, a smaller factor for the next steps
    return y_hat, loss
