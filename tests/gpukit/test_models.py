"""Tests of gpukit.models."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from gpukit.models import (
    LENET_SHAPES,
    Residual,
    init_weights,
    lenet,
    lenet_forward,
    lenet_params,
    resnet18,
)

# ---------------------------------------------------------------- Residual and ResNet-18


@pytest.mark.parametrize(
    ("args", "in_shape", "out_shape"),
    [
        ((3, 3), (4, 3, 6, 6), (4, 3, 6, 6)),
        ((3, 6, True), (4, 3, 6, 6), (4, 6, 6, 6)),
        ((3, 6, True, 2), (4, 3, 6, 6), (4, 6, 3, 3)),
        ((5, 5, True, 2), (2, 5, 7, 7), (2, 5, 4, 4)),
    ],
)
def test_residual_shapes(args, in_shape, out_shape):
    assert Residual(*args)(torch.randn(in_shape)).shape == out_shape


def test_residual_output_is_nonnegative_and_uses_the_shortcut():
    blk = Residual(2, 2).eval()
    with torch.no_grad():
        for conv in (blk.conv1, blk.conv2):
            conv.weight.zero_()
            conv.bias.zero_()
    X = torch.randn(3, 2, 4, 4)
    # With both convolutions zeroed, the block is relu(bn(0) + X) = relu(X) in eval mode.
    torch.testing.assert_close(blk(X), torch.relu(X))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"input_channels": 3, "num_channels": 6}, ValueError, "use_1x1conv must be True"),
        ({"input_channels": 3, "num_channels": 3, "strides": 2}, ValueError, "use_1x1conv"),
        ({"input_channels": 0, "num_channels": 3}, ValueError, "input_channels must be >= 1"),
        ({"input_channels": 3.0, "num_channels": 3}, TypeError, "input_channels must be an int"),
        ({"input_channels": 3, "num_channels": True}, TypeError, "num_channels must be an int"),
        ({"input_channels": 3, "num_channels": 3, "strides": 0}, ValueError, "strides"),
        ({"input_channels": 3, "num_channels": 3, "use_1x1conv": 1}, TypeError, "use_1x1conv"),
    ],
)
def test_residual_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Residual(**kwargs)


@pytest.mark.parametrize(
    ("num_classes", "in_channels", "size"), [(10, 1, 28), (3, 3, 32), (7, 1, 96), (10, 1, 8)]
)
def test_resnet18_output_shape(num_classes, in_channels, size):
    net = resnet18(num_classes, in_channels).eval()
    with torch.no_grad():
        assert net(torch.zeros(2, in_channels, size, size)).shape == (2, num_classes)


def test_resnet18_structure_follows_d2l():
    net = resnet18(10)
    names = [name for name, _ in net.named_children()]
    assert names == [
        "0",
        "1",
        "2",
        "resnet_block1",
        "resnet_block2",
        "resnet_block3",
        "resnet_block4",
        "global_avg_pool",
        "fc",
    ]
    assert net[0].kernel_size == (3, 3) and net[0].stride == (1, 1)
    assert not any(isinstance(m, nn.MaxPool2d) for m in net.modules())
    assert sum(isinstance(m, Residual) for m in net.modules()) == 8
    # A 28x28 image keeps 28, 14, 7, 4 pixels across the four stages.
    X = torch.zeros(1, 1, 28, 28)
    sides = []
    for name, module in net.named_children():
        X = module(X)
        if name.startswith("resnet_block"):
            sides.append(X.shape[-1])
    assert sides == [28, 14, 7, 4]


@pytest.mark.parametrize(
    ("args", "error", "argument"),
    [
        ((0,), ValueError, "num_classes"),
        (("10",), TypeError, "num_classes"),
        ((10, 0), ValueError, "in_channels"),
    ],
)
def test_resnet18_bad_arguments(args, error, argument):
    with pytest.raises(error, match=rf"^{argument}\b"):
        resnet18(*args)


# ---------------------------------------------------------------- LeNet


def test_lenet_shape_and_bad_arguments():
    assert lenet()(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    assert lenet(4)(torch.zeros(1, 1, 28, 28)).shape == (1, 4)
    with pytest.raises(ValueError, match="num_classes"):
        lenet(0)


def test_lenet_params_shapes_scale_and_seed():
    params = lenet_params(0.5, seed=0)
    assert [tuple(p.shape) for p in params] == [
        (20, 1, 3, 3),
        (20,),
        (50, 20, 5, 5),
        (50,),
        (800, 128),
        (128,),
        (128, 10),
        (10,),
    ]
    assert tuple(tuple(p.shape) for p in params) == LENET_SHAPES
    assert all(not p.requires_grad for p in params)
    assert all(torch.count_nonzero(b) == 0 for b in params[1::2])
    assert math.isclose(params[4].std().item(), 0.5, rel_tol=0.05)
    again = lenet_params(0.5, seed=0)
    assert all(torch.equal(p, q) for p, q in zip(params, again, strict=True))
    assert not torch.equal(lenet_params(0.5, seed=1)[0], params[0])


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"scale": 0}, ValueError),
        ({"scale": -0.1}, ValueError),
        ({"scale": float("nan")}, ValueError),
        ({"scale": "0.01"}, TypeError),
        ({"seed": 1.5}, TypeError),
    ],
)
def test_lenet_params_bad_arguments(kwargs, error):
    (argument,) = kwargs
    with pytest.raises(error, match=rf"^{argument}\b"):
        lenet_params(**kwargs)


def test_lenet_forward_matches_the_module():
    params = lenet_params(0.1, seed=3)
    net = lenet()
    with torch.no_grad():
        for layer, (W, b) in zip(
            (net[0], net[3], net[7], net[9]),
            zip(params[::2], params[1::2], strict=True),
            strict=True,
        ):
            # nn.Linear stores (out, in); D2L's matrices are (in, out).
            layer.weight.copy_(W if W.dim() == 4 else W.T)
            layer.bias.copy_(b)
    X = torch.rand(5, 1, 28, 28)
    torch.testing.assert_close(lenet_forward(X, params), net(X))


@pytest.mark.parametrize(
    ("X", "params", "error", "match"),
    [
        ("not a tensor", None, TypeError, "X must be"),
        (torch.zeros(2, 1, 32, 32), None, ValueError, r"X must have shape"),
        (torch.zeros(1, 28, 28), None, ValueError, r"X must have shape"),
        (torch.zeros(2, 1, 28, 28), [], ValueError, "params must be"),
        (torch.zeros(2, 1, 28, 28), "bad7", ValueError, r"params must be .*\(11,\)\]"),
    ],
)
def test_lenet_forward_bad_arguments(X, params, error, match):
    if params is None:
        params = lenet_params()
    elif params == "bad7":
        params = [*lenet_params()[:7], torch.zeros(11)]
    with pytest.raises(error, match=match):
        lenet_forward(X, params)


# ---------------------------------------------------------------- init_weights


@pytest.mark.parametrize("method", ["xavier", "normal"])
def test_init_weights_depends_on_the_seed_only(method):
    torch.manual_seed(1)
    a = init_weights(resnet18(10), method, seed=5)
    torch.manual_seed(2)
    b = resnet18(10)
    with torch.no_grad():
        for p in b.parameters():
            p.add_(1.0)  # whatever the net held before must not matter
    init_weights(b, method, seed=5)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    c = init_weights(resnet18(10), method, seed=6)
    assert not torch.equal(a[0].weight, c[0].weight)


def test_init_weights_values():
    net = init_weights(nn.Sequential(nn.Linear(400, 300), nn.BatchNorm1d(300)), "normal")
    assert math.isclose(net[0].weight.std().item(), 0.01, rel_tol=0.05)
    assert torch.count_nonzero(net[0].bias) == 0
    assert torch.equal(net[1].weight, torch.ones(300))
    xavier = init_weights(nn.Linear(400, 300), "xavier").weight
    bound = math.sqrt(6 / (400 + 300))
    assert xavier.abs().max() <= bound and xavier.abs().max() > 0.9 * bound


def test_init_weights_leaves_the_global_generator_alone():
    net = lenet()  # building it draws from the global generator; initialising must not
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    init_weights(net, seed=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("net",), {}, TypeError, "net must be"),
        ((nn.Linear(2, 2), "kaiming"), {}, ValueError, "method must be"),
        ((nn.Linear(2, 2),), {"seed": "0"}, TypeError, "seed must be"),
    ],
)
def test_init_weights_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        init_weights(*args, **kwargs)
