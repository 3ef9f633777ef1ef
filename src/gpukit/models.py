"""The networks of the multi-GPU pages: D2L's LeNet variant and its small-image ResNet-18.

:func:`lenet` is the network of D2L's "multi-GPU training from scratch" section as an
``nn.Module``; :func:`lenet_params` and :func:`lenet_forward` are the same network written with
bare tensors, as that section writes it, so that parameters can be copied to each device by
hand. :func:`init_weights` re-initialises a network from a seed alone, so two runs agree.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gpukit._checks import check_choice, check_int, check_number, check_type

__all__ = [
    "LENET_SHAPES",
    "Residual",
    "init_weights",
    "lenet",
    "lenet_forward",
    "lenet_params",
    "resnet18",
]

#: The shapes of the from-scratch LeNet's parameters, in D2L's order ``W1, b1, ..., W4, b4``:
#: two convolutions (20 kernels of 3 x 3 on one channel, 50 of 5 x 5 on 20 channels) and two
#: fully connected layers (800 -> 128 -> 10), each with its bias. :func:`lenet_params` makes
#: tensors of these shapes, and :func:`lenet_forward` accepts no others.
LENET_SHAPES = ((20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,), (128, 10), (10,))


class Residual(nn.Module):
    """D2L's residual block: two 3x3 convolutions with batch norm, plus a shortcut.

    ``use_1x1conv`` passes the shortcut through a 1x1 convolution, which it needs whenever the
    block changes the number of channels or (``strides=2``) halves the height and width; unlike
    D2L, a block without it is then refused when built, not on the first batch.

    Example:
        >>> blk = Residual(3, 6, use_1x1conv=True, strides=2)
        >>> blk(torch.zeros(4, 3, 6, 6)).shape
        torch.Size([4, 6, 3, 3])
    """

    def __init__(
        self, input_channels: int, num_channels: int, use_1x1conv: bool = False, strides: int = 1
    ) -> None:
        super().__init__()
        check_int(input_channels, "input_channels")
        check_int(num_channels, "num_channels")
        check_int(strides, "strides")
        check_type(use_1x1conv, "use_1x1conv", bool, "a bool")
        if not use_1x1conv and (input_channels != num_channels or strides != 1):
            raise ValueError(
                "use_1x1conv must be True when input_channels != num_channels or strides != 1 "
                f"(got {input_channels} -> {num_channels}, strides={strides})"
            )
        self.conv1 = nn.Conv2d(input_channels, num_channels, 3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, 3, padding=1)
        self.conv3 = (
            nn.Conv2d(input_channels, num_channels, 1, stride=strides) if use_1x1conv else None
        )
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Two convolutions, plus the shortcut (through the 1x1 convolution if there is one)."""
        Y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(X)))))
        return F.relu(Y + (X if self.conv3 is None else self.conv3(X)))


def resnet18(num_classes: int, in_channels: int = 1) -> nn.Sequential:
    """D2L's ResNet-18 for small images such as Fashion-MNIST's 28x28.

    Unlike the ImageNet ResNet-18, the stem is a 3x3 convolution with stride 1 and there is no
    max-pooling, so a 28x28 image still has a 4x4 feature map in the last stage.

    Example:
        >>> sum(p.numel() for p in resnet18(10).parameters())
        11175818
    """
    check_int(num_classes, "num_classes")
    check_int(in_channels, "in_channels")
    net = nn.Sequential(nn.Conv2d(in_channels, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
    for i, (c_in, c_out) in enumerate(((64, 64), (64, 128), (128, 256), (256, 512)), 1):
        first = Residual(c_in, c_out, use_1x1conv=True, strides=2) if i > 1 else Residual(64, 64)
        net.add_module(f"resnet_block{i}", nn.Sequential(first, Residual(c_out, c_out)))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


def lenet(num_classes: int = 10) -> nn.Sequential:
    """The LeNet variant of D2L's multi-GPU-from-scratch section, as an ``nn.Module``.

    Unlike chapter 6's LeNet it has a 3x3 first convolution with 20 channels, 50 channels in
    the second, ReLU instead of sigmoid and a 128-unit hidden layer. It expects 1x28x28 images.

    Example:
        >>> lenet()(torch.zeros(5, 1, 28, 28)).shape
        torch.Size([5, 10])
    """
    check_int(num_classes, "num_classes")
    return nn.Sequential(
        nn.Conv2d(1, 20, kernel_size=3),
        nn.ReLU(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(20, 50, kernel_size=5),
        nn.ReLU(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(800, 128),
        nn.ReLU(),
        nn.Linear(128, num_classes),
    )


def lenet_params(scale: float = 0.01, *, seed: int | None = None) -> list[torch.Tensor]:
    """D2L's from-scratch LeNet parameters ``[W1, b1, W2, b2, W3, b3, W4, b4]`` on the CPU.

    Weights are Gaussian with standard deviation ``scale`` (``seed=None``: from torch's global
    generator, as in D2L), biases zero; :func:`gpukit.parallel.get_params` makes them trainable.

    Example:
        >>> [tuple(p.shape) for p in lenet_params(seed=1)][:2]
        [(20, 1, 3, 3), (20,)]
    """
    check_number(scale, "scale")
    if seed is not None:
        check_int(seed, "seed", None, "or None")
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    return [
        torch.randn(shape, generator=generator) * scale if len(shape) > 1 else torch.zeros(shape)
        for shape in LENET_SHAPES
    ]


def lenet_forward(X: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    """D2L's ``lenet(X, params)``: the from-scratch LeNet on images ``X`` of shape
    ``(B, 1, 28, 28)``, with the eight tensors of :func:`lenet_params` (or copies of them).

    Example:
        >>> lenet_forward(torch.zeros(3, 1, 28, 28), lenet_params(seed=0)).shape
        torch.Size([3, 10])
    """
    check_type(X, "X", torch.Tensor, "a torch.Tensor")
    if X.dim() != 4 or tuple(X.shape[1:]) != (1, 28, 28):
        raise ValueError(f"X must have shape (batch, 1, 28, 28), got {tuple(X.shape)}")
    shapes = [tuple(p.shape) if isinstance(p, torch.Tensor) else p for p in params]
    if shapes != list(LENET_SHAPES):
        raise ValueError(f"params must be the 8 tensors of lenet_params(), got {shapes}")
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h1 = F.avg_pool2d(F.relu(F.conv2d(X, W1, b1)), kernel_size=2, stride=2)
    h2 = F.avg_pool2d(F.relu(F.conv2d(h1, W2, b2)), kernel_size=2, stride=2)
    h3 = F.relu(h2.reshape(h2.shape[0], -1) @ W3 + b3)
    return h3 @ W4 + b4


def init_weights(net: nn.Module, method: str = "xavier", *, seed: int = 0) -> nn.Module:
    """Re-initialise every parameter of ``net`` from ``seed`` alone, in place; return ``net``.

    Convolution and linear weights get D2L's ``"xavier"`` (uniform, as in ``train_ch6``) or
    ``"normal"`` (std 0.01, as in the concise multi-GPU section). Where D2L keeps PyTorch's
    random biases, here they are zero and batch norm is reset: the same seed gives the same
    network whatever was drawn before, and torch's global generator is not touched.

    Example:
        >>> a, b = init_weights(lenet(), seed=3), init_weights(lenet(), seed=3)
        >>> all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
        True
    """
    check_type(net, "net", nn.Module, "a torch.nn.Module")
    check_choice(method, "method", ("xavier", "normal"))
    check_int(seed, "seed", None)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.Linear | nn.Conv2d):
                # Drawn on the CPU, so the numbers do not depend on the device the net is on.
                weight = torch.empty(module.weight.shape)
                if method == "xavier":
                    nn.init.xavier_uniform_(weight, generator=generator)
                else:
                    nn.init.normal_(weight, std=0.01, generator=generator)
                module.weight.copy_(weight)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.modules.batchnorm._BatchNorm):
                module.reset_parameters()
    return net
