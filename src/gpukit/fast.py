"""Fast training on one device: the recipe of the page of that name, in one function.

:func:`train_fast` takes :func:`gpukit.training.train_ch6`'s arguments, trains in the same
epoch loop as it and returns the same :class:`~gpukit.results.TrainResult`, with a switch for
each step of the recipe.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import torch
from torch import nn

from gpukit._checks import check_choice, check_int, check_number, check_type
from gpukit._loop import (
    Batches,
    batch_size_of,
    check_training_arguments,
    count_examples,
    finish_run,
    seed_and_init,
    train_epochs,
)
from gpukit.devices import device_or_gpu
from gpukit.metrics import evaluate_accuracy_gpu
from gpukit.results import TrainResult
from gpukit.timing import Timer, format_seconds

__all__ = ["DeviceBatches", "auto_precision", "prepare_model", "read_batches", "train_fast"]

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def auto_precision(device: torch.device | str | None = None) -> str:
    """The precision ``train_fast(precision="auto")`` picks: the fastest one ``device`` has.

    ``"bf16"`` on a GPU with native bf16 (Ampere and later) and on a CPU whose bf16
    instructions (AVX512-BF16, AMX) PyTorch uses; ``"fp16"`` on an older GPU; ``"fp32"`` on
    other CPUs, which emulate bf16 more slowly than they compute fp32.

    Example:
        >>> auto_precision("cpu") in ("bf16", "fp32")
        True
    """
    device = device_or_gpu(device)
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"
    flags = torch.cpu.get_capabilities()
    native = flags.get("avx512_bf16") or flags.get("amx_bf16")
    # ATEN_CPU_CAPABILITY=avx2 (or an AVX2 CPU) keeps PyTorch's kernels off AVX-512.
    return "bf16" if native and torch.backends.cpu.get_cpu_capability() == "AVX512" else "fp32"


def read_batches(batches: Batches, limit: int | None = None) -> list[tuple[torch.Tensor, ...]]:
    """The first ``limit`` minibatches of ``batches`` as a list (``None``: all of them), leaving
    a DataLoader's shuffle as it was.

    Every pass over a shuffling DataLoader draws from its generator: reading the data once
    more, to hold it on the device or to warm a compiled model up, would otherwise change the
    order of every later epoch, and a run with the recipe's switches off would no longer see
    the batches of the same run without them. The generator's state is saved before reading
    and restored after.

    Example:
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> data = TensorDataset(torch.rand(6, 1, 2, 2), torch.arange(6))
        >>> loader = DataLoader(data, 2, shuffle=True, generator=torch.Generator().manual_seed(0))
        >>> read = read_batches(loader)
        >>> len(read), len(read_batches(loader, 1))
        (3, 1)
        >>> [y.tolist() for _, y in loader] == [y.tolist() for _, y in read]  # the same order
        True
    """
    if not isinstance(batches, Iterable) or isinstance(batches, torch.Tensor):
        raise TypeError(
            "batches must be an iterable of (X, y) minibatches, e.g. a DataLoader, got "
            f"{type(batches).__name__}"
        )
    if limit is not None:
        check_int(limit, "limit", 1, "or None")
    generator = getattr(batches, "generator", None)
    state = generator.get_state() if generator is not None else None
    pairs = [tuple(pair) for pair in itertools.islice(batches, limit)]
    if generator is not None:
        generator.set_state(state)
    return pairs


class DeviceBatches:
    """The examples of ``batches`` in one tensor on ``device``, read as shuffled minibatches
    of ``batch_size`` by index. An epoch's last, partial minibatch is left out, so that a
    compiled model sees one shape only.

    Example:
        >>> X, y = torch.rand(10, 1, 4, 4), torch.arange(10)
        >>> batches = DeviceBatches([(X[:6], y[:6]), (X[6:], y[6:])], 4, "cpu", seed=0)
        >>> len(batches), [tuple(Xb.shape) for Xb, _ in batches]
        (2, [(4, 1, 4, 4), (4, 1, 4, 4)])
    """

    def __init__(
        self, batches: Batches, batch_size: int, device: torch.device | str, seed: int = 0
    ):
        check_int(batch_size, "batch_size")
        check_int(seed, "seed", minimum=0)
        pairs = read_batches(batches)
        if not pairs:
            raise ValueError("batches must yield at least one (X, y) minibatch, got none")
        X = torch.cat([X for X, _ in pairs])
        y = torch.cat([y for _, y in pairs])
        # Fashion-MNIST's pixels are multiples of 1/255: as uint8 they take a quarter of the
        # memory and of the copy, and nothing is lost
        as_bytes = (X * 255).round()
        self.scale = 255.0 if torch.equal(as_bytes / 255, X) else 1.0
        self.X = (as_bytes.to(torch.uint8) if self.scale == 255 else X).to(device)
        self.y = y.to(device)
        self.batch_size = min(batch_size, len(y))
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.y) // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        order = torch.randperm(len(self.y), generator=self.generator).to(self.y.device)
        for i in range(len(self)):
            idx = order[i * self.batch_size : (i + 1) * self.batch_size]
            # one gather on the device per minibatch, instead of Python stacking images
            yield self.X[idx].float() / self.scale, self.y[idx]


def prepare_model(
    net: nn.Module,
    device: torch.device | str,
    channels_last: bool = True,
    compile: bool | str = False,
) -> nn.Module:
    """The model the recipe trains: ``net`` on ``device``, channels-last, maybe compiled.

    ``net`` itself is moved (and changed to channels-last in place); with ``compile`` the
    result is ``torch.compile(net)``, which shares ``net``'s weights: ``True``, or a mode such
    as ``"reduce-overhead"``.

    Example:
        >>> net = nn.Conv2d(1, 4, 3)
        >>> model = prepare_model(net, "cpu")
        >>> model is net, net.weight.is_contiguous(memory_format=torch.channels_last)
        (True, True)
    """
    check_type(net, "net", nn.Module, "an nn.Module")
    check_type(channels_last, "channels_last", bool, "True or False")
    if not isinstance(compile, bool | str):
        raise TypeError(f"compile must be a bool or a mode name, got {compile!r}")
    # Channels-last (NHWC) weights: each convolution then hands NHWC activations on
    layout = torch.channels_last if channels_last else torch.preserve_format
    net.to(device, memory_format=layout)
    if compile is False:
        return net
    # dynamic=False: every batch size gets a graph of its own. Otherwise Dynamo, seeing the
    # same forward() again at a new batch size (say, the next net of the same class), would
    # make the batch dimension symbolic and compile a dynamic-shape graph, which can be slower.
    mode = None if compile is True else compile  # e.g. "reduce-overhead": CUDA graphs
    return torch.compile(net, mode=mode, dynamic=False)


def _warm_up(
    model: nn.Module,
    net: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    dtype: torch.dtype | None,
    runs: int = 1,
) -> float:
    """Run forward and backward ``runs`` times on one minibatch, untimed by the epochs (with
    ``compile``, this compiles); the weights and buffers stay as they are."""
    buffers = [b.clone() for b in net.buffers()]  # batch norm's running averages
    timer = Timer()
    for _ in range(runs):
        # No gradient to add into: under CUDA graphs the last run's gradients live in the
        # graphs' memory, which the next run overwrites ("accessing tensor output of CUDAGraphs
        # that has been overwritten", pytorch/pytorch#169545)
        net.zero_grad(set_to_none=True)
        with torch.autocast(X.device.type, dtype, enabled=dtype is not None):
            loss = nn.functional.cross_entropy(model(X), y)
        loss.backward()
    seconds = timer.stop()
    net.zero_grad(set_to_none=True)
    with torch.no_grad():
        for b, saved in zip(net.buffers(), buffers, strict=True):
            b.copy_(saved)
    return seconds


def train_fast(
    net: nn.Module,
    train_iter: Batches,
    test_iter: Batches,
    num_epochs: int,
    lr: float,
    device: torch.device | str | None = None,
    *,
    init: str | None = "xavier",
    seed: int = 0,
    schedule: str = "warmup-cosine",
    plot: bool = True,
    verbose: bool = True,
    batch_size: int | None = None,
    momentum: float = 0.9,
    metrics_on_device: bool = True,
    on_device: bool = True,
    channels_last: bool = True,
    precision: str = "auto",
    compile: bool | str | None = None,
) -> TrainResult:
    """Train ``net`` like :func:`gpukit.training.train_ch6`, with the switches of the recipe.

    The defaults are the recipe; every switch off (``momentum=0``, ``schedule="constant"``,
    ``metrics_on_device=False``, ``on_device=False``, ``channels_last=False``,
    ``precision="fp32"``, ``compile=False``) is D2L's loop. The test accuracy is computed in
    fp32 by the uncompiled ``net``, with the test set copied to ``device`` once.

    Args:
        net, train_iter, test_iter, num_epochs, lr, device, init, seed, plot, verbose:
            as for :func:`gpukit.training.train_ch6`; ``lr`` is the peak learning rate.
        schedule: ``"warmup-cosine"`` (:func:`gpukit.training.lr_factor`) or ``"constant"``.
        batch_size: examples per step when ``on_device``; ``None``: ``train_iter``'s.
        momentum: SGD's momentum (Nesterov's when > 0); 0 is plain SGD.
        metrics_on_device: ``False`` reads the metrics at every step, as D2L's loop does.
        on_device: hold the training set on ``device`` as one tensor and draw minibatches
            by index instead of reading ``train_iter`` at every epoch.
        channels_last: store the weights channels-last (NHWC), the layout convolution
            kernels and tensor cores read best; the convolutions then convert the images.
        precision: ``"fp32"``, ``"bf16"``, ``"fp16"`` (with a gradient scaler) or
            ``"auto"`` (:func:`auto_precision`): ``torch.autocast`` for forward and loss.
        compile: ``torch.compile`` the model before the first epoch (timed apart, in
            ``compile_seconds``), with static shapes (``dynamic=False``): ``True``, a mode
            such as ``"reduce-overhead"`` (CUDA graphs of the compiled forward and backward
            passes), ``False``, or ``None``: on a GPU only.

    Every run starts with an untimed forward and backward pass on the first minibatch (three
    with ``"reduce-overhead"``, which records its CUDA graphs in the second), so the first
    epoch's time leaves out the first step's one-time costs, compiling included.

    Example:
        >>> from gpukit.models import lenet
        >>> X, y = torch.rand(64, 1, 28, 28), torch.arange(64) % 10
        >>> r = train_fast(lenet(), [(X, y)], [(X, y)], 2, 0.1, "cpu", batch_size=32,
        ...                plot=False)  # doctest: +ELLIPSIS
        test acc ..., ... sec/epoch on [cpu] (data on the device, channels-last, ...)
        64 training / 64 test images, batch 32, lr 0.1 (warm-up + cosine decay), 2 epochs
        >>> if torch.cuda.is_available():
        ...     r = train_fast(lenet(), [(X, y)], [(X, y)], 1, 0.1, "cuda:0", verbose=False)
    """
    check_training_arguments(
        net=net,
        num_epochs=num_epochs,
        lr=lr,
        init=init,
        seed=seed,
        schedule=schedule,
        batches={"train_iter": train_iter, "test_iter": test_iter},
    )
    if batch_size is not None:
        check_int(batch_size, "batch_size")
    if check_number(momentum, "momentum", zero=True) >= 1:
        raise ValueError(f"momentum must be >= 0 and < 1, got {momentum}")
    for name, flag in (
        ("metrics_on_device", metrics_on_device),
        ("on_device", on_device),
        ("channels_last", channels_last),
    ):
        check_type(flag, name, bool, "True or False")
    check_choice(precision, "precision", ["auto", *_DTYPES])
    if compile is not None and not isinstance(compile, bool | str):
        raise TypeError(f"compile must be None, a bool or a mode name, got {compile!r}")
    device = device_or_gpu(device)
    precision = auto_precision(device) if precision == "auto" else precision
    if compile is None:
        compile = device.type == "cuda"
    seed_and_init(net, init=init, seed=seed)
    model = prepare_model(net, device, channels_last, compile)
    batches: Batches = train_iter
    if on_device:
        batches = DeviceBatches(train_iter, batch_size or batch_size_of(train_iter), device, seed)
    test = [(X.to(device), y.to(device)) for X, y in read_batches(test_iter)]
    notes = ["data on the device"] * on_device + ["channels-last"] * channels_last + [precision]
    # One untimed step whatever the switches, so that no run pays its first step's one-time
    # costs (new shapes, kernels, memory) in its first timed epoch and another not. It also
    # compiles; "reduce-overhead" records its CUDA graphs only at the second call, and the
    # third replays them.
    X, y = read_batches(batches, 1)[0]
    runs = 3 if compile == "reduce-overhead" else 1
    warm_up = _warm_up(model, net, X.to(device), y.to(device), dtype=_DTYPES[precision], runs=runs)
    compile_seconds = 0.0
    if compile is not False:
        compile_seconds = warm_up
        notes.append(f"compiled in {format_seconds(compile_seconds)}")
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum, nesterov=momentum > 0)

    def evaluate() -> float:
        return evaluate_accuracy_gpu(net, test, device)

    history, n_train = train_epochs(
        model,
        batches,
        num_epochs=num_epochs,
        lr=lr,
        device=device,
        schedule=schedule,
        evaluate=evaluate,
        plot=plot,
        optimizer=optimizer,
        autocast=_DTYPES[precision],
        sync_every_step=not metrics_on_device,
    )
    return finish_run(
        history,
        devices=[str(device)],
        n_train=n_train,
        n_test=count_examples(test),
        batch_size=batch_size_of(batches),
        lr=lr,
        schedule=schedule,
        note=", ".join(notes),
        compile_seconds=compile_seconds,
        verbose=verbose,
    )
