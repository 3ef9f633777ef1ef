"""Training loops of the multi-GPU pages: one device (:func:`train_ch6`), ``nn.DataParallel``
(:func:`train_data_parallel`) and ``DistributedDataParallel`` processes (:func:`train_ddp`).

Each returns a :class:`TrainResult` and prints its :meth:`~TrainResult.summary`, which names
the devices really used and how much data was seen. The network is re-initialised from
``seed`` and the global generator is seeded, so with the same data order two runs on a CPU
give the same numbers.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from gpukit._checks import check_choice, check_int, check_number, check_tensors
from gpukit.data import find_fashion_mnist, load_data_fashion_mnist
from gpukit.devices import _device_or_gpu, _existing_devices, try_all_gpus
from gpukit.metrics import evaluate_accuracy_gpu
from gpukit.models import init_weights, resnet18
from gpukit.parallel import _check_backend, _launch, _rank_device
from gpukit.plotting import Animator
from gpukit.timing import Timer, format_seconds

__all__ = [
    "SCHEDULES",
    "EpochStats",
    "TrainResult",
    "lr_factor",
    "sgd",
    "train_ch6",
    "train_data_parallel",
    "train_ddp",
]

Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]

#: The learning-rate schedules the training functions accept, with the words summaries use.
SCHEDULES = {"constant": "", "warmup-cosine": "warm-up + cosine decay"}
WARMUP_START = 0.1  # the warm-up starts at a tenth of the learning rate
LEGEND = ["train loss", "train acc", "test acc"]
EVAL_BATCH_SIZE = 256  # test examples per forward pass of train_ddp's rank 0


def lr_factor(schedule: str, step: int, steps_per_epoch: int, num_epochs: int) -> float:
    """The multiple of the learning rate used at optimizer step ``step`` (0 for the first).

    ``"constant"`` is D2L's: always 1. ``"warmup-cosine"`` rises linearly from 0.1 to 1 over
    the first epoch (the *warm-up* of Goyal et al., 2017: the first steps from small initial
    weights are the ones a large learning rate overshoots), then falls along half a cosine
    towards 0 at the end of the last epoch, so that the final weights, and the batch-norm
    averages evaluated with them, no longer jump from step to step. With one epoch there is
    only the warm-up.

    Example:
        >>> [round(lr_factor("warmup-cosine", s, 4, 3), 2) for s in range(0, 12, 2)]
        [0.1, 0.55, 1.0, 0.85, 0.5, 0.15]
        >>> lr_factor("constant", 7, 4, 3)
        1.0
    """
    check_choice(schedule, "schedule", SCHEDULES)
    check_int(step, "step", 0)
    check_int(steps_per_epoch, "steps_per_epoch")
    check_int(num_epochs, "num_epochs")
    return _lr_factor(schedule, step, steps_per_epoch, num_epochs)


def _lr_factor(schedule: str, step: int, steps_per_epoch: int, num_epochs: int) -> float:
    if schedule == "constant":
        return 1.0
    if step < steps_per_epoch:
        return WARMUP_START + (1 - WARMUP_START) * step / steps_per_epoch
    decay_steps = max(1, steps_per_epoch * (num_epochs - 1))
    progress = min(1.0, (step - steps_per_epoch) / decay_steps)
    return 0.5 * (1 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class EpochStats:
    """What one epoch measured.

    Attributes:
        epoch: 1 for the first epoch.
        train_loss: mean training loss over the epoch's examples.
        train_acc: fraction of the epoch's training examples classified correctly.
        test_acc: test accuracy after the epoch.
        seconds: time spent training (evaluation excluded).
        lr: the learning rate of the epoch's last step (it changes under a schedule).
    """

    epoch: int
    train_loss: float
    train_acc: float
    test_acc: float
    seconds: float
    lr: float | None = None


@dataclass
class TrainResult:
    """The numbers of one training run, for a page to print, plot or compare.

    Attributes:
        test_acc: test accuracy after the last epoch.
        sec_per_epoch: mean training time per epoch (evaluation excluded).
        devices: the devices that really computed, e.g. ``["cuda:0", "cuda:1"]``.
        epochs: number of epochs.
        n_train: training examples per epoch.
        n_test: test examples.
        batch_size: examples per optimisation step, over all devices together.
        lr: learning rate (its peak, under a schedule).
        history: one :class:`EpochStats` per epoch.
        note: how the devices were used, when that needs saying.
        schedule: the learning-rate schedule, a key of :data:`SCHEDULES`.
        compile_seconds: time spent compiling before the first epoch
            (:func:`gpukit.fast.train_fast`), not counted in ``sec_per_epoch``.

    Example:
        >>> r = TrainResult(0.8512, 12.34561, ["cuda:0", "cuda:1"], 10, 60000, 10000, 512, 0.2)
        >>> print(r.summary())
        test acc 0.85, 12.3456 sec/epoch on [cuda:0, cuda:1]
        60,000 training / 10,000 test images, batch 512, lr 0.2, 10 epochs
    """

    test_acc: float
    sec_per_epoch: float
    devices: list[str]
    epochs: int
    n_train: int
    n_test: int
    batch_size: int
    lr: float
    history: list[EpochStats] = field(default_factory=list)
    note: str = ""
    schedule: str = "constant"
    compile_seconds: float = 0.0

    def summary(self) -> str:
        """Two lines: accuracy, time and devices; then the amount of data and the settings."""
        note = f" ({self.note})" if self.note else ""
        first = f"test acc {self.test_acc:.2f}, {format_seconds(self.sec_per_epoch)}/epoch"
        settings = _settings(
            self.n_train, self.n_test, self.batch_size, self.lr, self.schedule, self.epochs
        )
        return f"{first} on [{', '.join(self.devices)}]{note}\n{settings}"


def _settings(
    n_train: int,
    n_test: int,
    batch_size: int,
    lr: float,
    schedule: str,
    epochs: int,
    resize: int | None = None,
) -> str:
    """The data and settings of a run, as summaries and profiles print them."""
    schedule = f" ({SCHEDULES[schedule]})" if SCHEDULES[schedule] else ""
    size = f" of {resize}x{resize} pixels" if resize is not None else ""
    return (
        f"{n_train:,} training / {n_test:,} test images{size}, batch {batch_size}, "
        f"lr {lr:g}{schedule}, {epochs} epoch{'s' if epochs != 1 else ''}"
    )


def sgd(params: Iterable[torch.Tensor], lr: float, batch_size: int) -> None:
    """Minibatch SGD on summed losses (D2L's ``sgd``): ``p -= lr * p.grad / batch_size``.

    Gradients are zeroed afterwards, as in D2L.

    Example:
        >>> w = torch.tensor([1.0], requires_grad=True)
        >>> (3 * w).sum().backward()
        >>> sgd([w], lr=0.1, batch_size=3)
        >>> w
        tensor([0.9000], requires_grad=True)
    """
    check_number(lr, "lr")
    check_int(batch_size, "batch_size")
    params = check_tensors(params, "params")
    with torch.no_grad():
        for param in params:
            if param.grad is None:
                raise ValueError("params must all have gradients: call backward() first")
            param -= lr * param.grad / batch_size
            param.grad.zero_()


# --------------------------------------------------------------------------- checks


def _check(
    net: object,
    num_epochs: object,
    lr: object,
    init: object,
    seed: object,
    schedule: object,
    **batches: object,
) -> None:
    """The checks of the arguments that the entry points share; ``batches``: name -> value."""
    if not isinstance(net, nn.Module):
        raise TypeError(f"net must be a torch.nn.Module, got {type(net).__name__}")
    check_int(num_epochs, "num_epochs")
    check_number(lr, "lr")
    if init not in ("xavier", "normal", None):
        raise ValueError(
            f"init must be 'xavier', 'normal' or None (keep the weights), got {init!r}"
        )
    check_int(seed, "seed", None)
    check_choice(schedule, "schedule", SCHEDULES)
    for name, data_iter in batches.items():
        if not isinstance(data_iter, Iterable) or isinstance(data_iter, torch.Tensor):
            raise TypeError(f"{name} must be an iterable of (X, y) minibatches, e.g. a DataLoader")
        # Not iter(data_iter) is data_iter: a DataLoader's iter() draws from its shuffling
        # generator, and the check would change the batches of the run it checks.
        if isinstance(data_iter, Iterator):
            raise TypeError(
                f"{name} is read once per epoch, so it must be a DataLoader or a list of (X, y) "
                "minibatches, not a one-shot iterator or generator"
            )


def _init(net: nn.Module, init: str | None, seed: int) -> None:
    """Seed torch's global generator and re-initialise ``net`` from ``seed`` (``None``: keep)."""
    torch.manual_seed(seed)
    if init is not None:
        init_weights(net, init, seed=seed)


# --------------------------------------------------------------------------- one process


def _step(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    dtype: torch.dtype | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on the minibatch ``(X, y)``; returns the predictions and the loss.

    Under ``torch.autocast`` the forward pass and the loss run their convolutions and matrix
    products in ``dtype`` (``None``: fp32); weights, gradients and the update stay fp32. For
    float16 the scaler multiplies the loss before ``backward``, so that small gradients do
    not round to zero, and divides the gradients by the same factor before the update; when
    it is disabled (fp32, bf16) it passes everything on unchanged.
    """
    optimizer.zero_grad()
    with torch.autocast(X.device.type, dtype, enabled=dtype is not None):
        y_hat = model(X)
        loss = nn.functional.cross_entropy(y_hat, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # skips the update if a gradient overflowed to inf or NaN
    scaler.update()  # after an overflow, a smaller factor for the next steps
    return y_hat, loss


def _train_epochs(
    model: nn.Module,
    train_iter: Batches,
    num_epochs: int,
    lr: float,
    device: torch.device,
    schedule: str,
    evaluate: Callable[[], float],
    *,
    reduce: Callable[[torch.Tensor, float], tuple[torch.Tensor, float]] | None = None,
    before_epoch: Callable[[int], None] | None = None,
    plot: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    autocast: torch.dtype | None = None,
    sync_every_step: bool = False,
) -> tuple[list[EpochStats], int]:
    """The epoch loop of every entry point: SGD on cross-entropy, ``lr_factor`` at every step.

    The entry points differ in how they place the model and in three hooks: ``evaluate()``
    gives the test accuracy after an epoch, ``reduce(sums, seconds)`` combines the epoch's
    ``[loss sum, correct, examples]`` and time over DDP ranks, ``before_epoch`` reshuffles a
    distributed sampler. The metrics stay on ``device`` and are read once an epoch (a
    ``.item()`` per minibatch would make the CPU wait for the GPU at every step).

    :func:`gpukit.fast.train_fast`'s options: ``optimizer`` replaces plain SGD (``lr`` is the
    schedule's peak); ``autocast`` runs forward and loss in that dtype (float16 also scales the
    loss); ``sync_every_step`` reads the metrics after every minibatch, as D2L's loop does.
    """
    if optimizer is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scaler = torch.amp.GradScaler(device.type, enabled=autocast == torch.float16)
    try:  # the scheduler steps once per minibatch
        steps = len(train_iter)  # type: ignore[arg-type]
    except TypeError:
        steps = sum(1 for _ in train_iter)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _lr_factor(schedule, step, steps, num_epochs)
    )
    animator = Animator(xlabel="epoch", xlim=[1, num_epochs], legend=LEGEND) if plot else None
    history: list[EpochStats] = []
    for epoch in range(num_epochs):
        if before_epoch is not None:
            before_epoch(epoch)
        model.train()
        sums = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, correct
        examples, step_lr = 0, lr
        timer = Timer()
        for X, y in train_iter:
            X, y = X.to(device), y.to(device)
            step_lr = optimizer.param_groups[0]["lr"]
            y_hat, batch_loss = _step(model, X, y, optimizer, scaler, autocast)
            scheduler.step()
            with torch.no_grad():
                step_sums = torch.stack((batch_loss * len(y), (y_hat.argmax(dim=1) == y).sum()))
                sums += step_sums
            if sync_every_step:
                step_sums.tolist()  # makes the CPU wait for the GPU, as D2L's .item() calls do
            examples += len(y)
        seconds = timer.stop()
        if examples == 0:
            raise ValueError("train_iter yielded no examples")
        totals = torch.cat((sums.cpu(), torch.tensor([examples], dtype=torch.float64)))
        if reduce is not None:
            totals, seconds = reduce(totals, seconds)
        loss_sum, correct, count = totals.tolist()
        stats = EpochStats(
            epoch + 1, loss_sum / count, correct / count, evaluate(), seconds, step_lr
        )
        history.append(stats)
        if animator is not None:
            animator.add(stats.epoch, (stats.train_loss, stats.train_acc, stats.test_acc))
    return history, int(count)


def _finish(
    history: list[EpochStats],
    devices: list[str],
    n_train: int,
    test_iter: Batches,
    batch_size: int,
    lr: float,
    schedule: str,
    note: str = "",
    verbose: bool = True,
    n_test: int | None = None,
    compile_seconds: float = 0.0,
) -> TrainResult:
    """The :class:`TrainResult` of a finished run, printed with ``verbose``."""
    if n_test is None:  # a DataLoader's dataset, not a pass over it (which draws a random seed)
        dataset = getattr(test_iter, "dataset", None)
        n_test = len(dataset) if dataset is not None else sum(len(y) for _, y in test_iter)
    result = TrainResult(
        history[-1].test_acc,
        sum(s.seconds for s in history) / len(history),
        devices,
        len(history),
        n_train,
        n_test,
        batch_size,
        lr,
        history,
        note,
        schedule,
        compile_seconds,
    )
    if verbose:
        print(result.summary())
    return result


def _batch_size(train_iter: Batches) -> int:
    size = getattr(train_iter, "batch_size", None)
    if isinstance(size, int):
        return size
    for X, _ in train_iter:
        return len(X)
    raise ValueError("train_iter yielded no examples")


def train_ch6(
    net: nn.Module,
    train_iter: Batches,
    test_iter: Batches,
    num_epochs: int,
    lr: float,
    device: torch.device | str | None = None,
    *,
    init: str | None = "xavier",
    seed: int = 0,
    schedule: str = "constant",
    plot: bool = True,
    verbose: bool = True,
) -> TrainResult:
    """Train ``net`` on one device with SGD and cross-entropy (D2L's ``train_ch6``).

    As in D2L the weights are re-initialised first (Xavier), here from ``seed`` alone; the
    curves are train loss, train accuracy and test accuracy, one point per epoch (D2L's five
    points per epoch fail with fewer than five batches). The time per epoch waits for the
    GPU (:class:`gpukit.timing.Timer`), where D2L's examples/sec reads the clock early.

    Args:
        net: the model; moved to ``device``.
        train_iter, test_iter: ``(X, y)`` minibatches, e.g. from ``load_data_fashion_mnist``.
        num_epochs: passes over ``train_iter``.
        lr: learning rate.
        device: where to train; ``None``: :func:`gpukit.devices.try_gpu`.
        init: ``"xavier"`` (D2L), ``"normal"`` (std 0.01) or ``None`` to keep the weights.
        seed: seeds the initialisation and torch's global generator.
        schedule: the learning rate over the steps: ``"constant"`` (D2L) or
            ``"warmup-cosine"`` (:func:`lr_factor`).
        plot: draw the curves with :class:`gpukit.plotting.Animator`.
        verbose: print :meth:`TrainResult.summary`.

    Example:
        >>> from gpukit.models import lenet
        >>> X, y = torch.rand(64, 1, 28, 28), torch.arange(64) % 10
        >>> r = train_ch6(lenet(), [(X, y)], [(X, y)], 1, 0.1, "cpu", plot=False)
        ... # doctest: +ELLIPSIS
        test acc ..., ... sec/epoch on [cpu]
        64 training / 64 test images, batch 64, lr 0.1, 1 epoch
        >>> if torch.cuda.is_available():
        ...     r = train_ch6(lenet(), [(X, y)], [(X, y)], 1, 0.1, "cuda:0", verbose=False)
    """
    _check(net, num_epochs, lr, init, seed, schedule, train_iter=train_iter, test_iter=test_iter)
    device = _device_or_gpu(device)
    _init(net, init, seed)
    net.to(device)
    history, n_train = _train_epochs(
        net,
        train_iter,
        num_epochs,
        lr,
        device,
        schedule,
        lambda: evaluate_accuracy_gpu(net, test_iter, device),
        plot=plot,
    )
    return _finish(
        history,
        [str(device)],
        n_train,
        test_iter,
        _batch_size(train_iter),
        lr,
        schedule,
        verbose=verbose,
    )


def train_data_parallel(
    net: nn.Module,
    train_iter: Batches,
    test_iter: Batches,
    num_epochs: int,
    lr: float,
    devices: Sequence[torch.device | str] | None = None,
    *,
    init: str | None = "normal",
    seed: int = 0,
    schedule: str = "constant",
    plot: bool = True,
    verbose: bool = True,
) -> TrainResult:
    """Train ``net`` with ``nn.DataParallel`` over ``devices`` (D2L's concise multi-GPU ``train``).

    D2L's ``train(net, num_gpus, batch_size, lr)`` loads the data itself; here the data
    and devices are arguments. Each batch from ``train_iter`` is split over the GPUs, so
    its size is the total batch (D2L: 256 on one GPU, 512 with lr 0.2 on two).

    ``nn.DataParallel`` only spreads work over GPUs. Without CUDA it simply runs the network,
    so D2L's line "on [cpu, cpu]" on a laptop reports a second device that never computed.
    Here the summary lists the devices really used (``on [cpu]``) and says why.

    The arguments are :func:`train_ch6`'s, except:

    Args:
        devices: GPUs (CPUs in the list are left out, as ``nn.DataParallel`` cannot use
            them); only CPUs: one CPU replica. ``None``: :func:`gpukit.devices.try_all_gpus`.
        init: ``"normal"`` (std 0.01, D2L's choice here), ``"xavier"`` or ``None``.

    Example:
        >>> from gpukit.models import lenet
        >>> X, y = torch.rand(32, 1, 28, 28), torch.arange(32) % 10
        >>> r = train_data_parallel(lenet(), [(X, y)], [(X, y)], 1, 0.1, ["cpu", "cpu"],
        ...                         plot=False, verbose=False)
        >>> r.devices, r.note
        (['cpu'], 'nn.DataParallel needs GPUs: 1 CPU replica instead of 2 devices')
        >>> if torch.cuda.device_count() >= 2:
        ...     r = train_data_parallel(lenet(), [(X, y)], [(X, y)], 1, 0.1, ["cuda:0", "cuda:1"],
        ...                             plot=False, verbose=False)
    """
    _check(net, num_epochs, lr, init, seed, schedule, train_iter=train_iter, test_iter=test_iter)
    if devices is None:
        devices = try_all_gpus()
    devs = _existing_devices(devices)
    gpus = [d for d in devs if d.type == "cuda"]
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"devices must not repeat a GPU, got {[str(d) for d in devs]}")
    _init(net, init, seed)
    model: nn.Module
    if gpus:
        net.to(gpus[0])
        model, used = nn.DataParallel(net, device_ids=gpus), gpus
    else:
        net.to("cpu")
        model, used = net, [torch.device("cpu")]
    note = ""
    if gpus and len(gpus) < len(devs):
        note = f"nn.DataParallel uses GPUs only: {len(gpus)} of the {len(devs)} devices"
    elif not gpus and len(devs) > 1:
        note = f"nn.DataParallel needs GPUs: 1 CPU replica instead of {len(devs)} devices"
    history, n_train = _train_epochs(
        model,
        train_iter,
        num_epochs,
        lr,
        used[0],
        schedule,
        lambda: evaluate_accuracy_gpu(model, test_iter, used[0]),
        plot=plot,
    )
    return _finish(
        history,
        [str(d) for d in used],
        n_train,
        test_iter,
        _batch_size(train_iter),
        lr,
        schedule,
        note,
        verbose,
    )


# --------------------------------------------------------------------------- DDP processes


def _ddp_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any] | None:
    """One rank of :func:`train_ddp`; module-level so that spawned processes can import it."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    seed = config["seed"]
    per_rank = config["batch_size"] // world_size
    torch.manual_seed(seed)
    device = _rank_device()
    net = pickle.loads(config["net"])
    if config["init"] is not None:
        init_weights(net, config["init"], seed=seed)
    net.to(device)
    model = DistributedDataParallel(
        net, device_ids=[device.index] if device.type == "cuda" else None
    )

    data_options = {
        "resize": config["resize"],
        "root": config["root"],
        "n_train": config["n_train"],
        "n_test": config["n_test"],
        "seed": seed,
    }
    train_iter, _ = load_data_fashion_mnist(per_rank, **data_options)
    # Rank 0 evaluates alone while the others wait: in batches of EVAL_BATCH_SIZE (the
    # accuracy does not depend on it), not in the few examples of a training step per rank.
    _, test_iter = load_data_fashion_mnist(EVAL_BATCH_SIZE, **data_options)
    dataset = train_iter.dataset
    sampler = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed
    )
    # train_iter's collate_fn resizes the images, if asked to.
    loader = DataLoader(
        dataset, batch_size=per_rank, sampler=sampler, collate_fn=train_iter.collate_fn
    )

    def reduce(totals: torch.Tensor, seconds: float) -> tuple[torch.Tensor, float]:
        # The totals cover every rank's shard; the epoch lasts as long as its slowest rank.
        totals, slowest = totals.to(device), torch.tensor([seconds], device=device)
        dist.all_reduce(totals)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return totals.cpu(), slowest.item()

    def evaluate() -> float:
        accuracy = evaluate_accuracy_gpu(model.module, test_iter, device) if rank == 0 else 0.0
        # Otherwise the other ranks would start the next epoch's clock while rank 0 is still
        # evaluating, and count the wait as training time.
        dist.barrier()
        return accuracy

    history, _ = _train_epochs(
        model,
        loader,
        config["num_epochs"],
        config["lr"],
        device,
        config["schedule"],
        evaluate,
        reduce=reduce,
        before_epoch=sampler.set_epoch,  # the same new shuffle on every rank
    )
    if rank != 0:
        return None
    return {
        "history": history,
        "n_train": len(dataset),
        "n_test": len(test_iter.dataset),
        "state_dict": {k: v.cpu() for k, v in model.module.state_dict().items()},
    }


def train_ddp(
    world_size: int,
    num_epochs: int,
    lr: float,
    batch_size: int,
    *,
    net: nn.Module | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    resize: int | None = None,
    root: str | Path | None = None,
    init: str | None = "normal",
    seed: int = 0,
    schedule: str = "constant",
    backend: str | None = None,
    plot: bool = True,
    verbose: bool = True,
) -> TrainResult:
    """Train on Fashion-MNIST with ``DistributedDataParallel`` in ``world_size`` processes.

    Each rank loads Fashion-MNIST with :func:`gpukit.data.load_data_fashion_mnist`, reads
    its own shard through a ``DistributedSampler`` and keeps a full copy of the network;
    gradients are averaged over the ranks during ``backward``. Rank 0 measures the test
    accuracy after each epoch. The processes use one GPU each (NCCL) when there are enough
    GPUs, otherwise they are CPU processes talking through gloo, and the summary says so.

    ``batch_size`` is the total over the ranks (each rank takes ``batch_size // world_size``),
    so ``lr`` means what it means for :func:`train_data_parallel` with the same batch.

    Rank 0's trained weights are loaded back into ``net``, and its numbers are printed here
    (what the ranks print is captured by :func:`gpukit.parallel.launch` and shown only in the
    error when a rank fails).

    Args:
        world_size: number of processes.
        num_epochs, lr, init, seed, schedule, verbose: as for :func:`train_data_parallel`.
        batch_size: examples per step over all ranks; a multiple of ``world_size``.
        net: the model, picklable and defined in an importable module (not in a notebook);
            ``None``: ``resnet18(10)``.
        n_train, n_test: use only the first examples (``None``: all).
        resize: the side of the images in pixels, as for
            :func:`gpukit.data.load_data_fashion_mnist` (``None``: Fashion-MNIST's 28).
        root: folder of the Fashion-MNIST files (``None``: gpukit.data's search order).
        backend: ``"nccl"``, ``"gloo"`` or ``None`` (NCCL when each rank can have a GPU).
        plot: draw the curves, in the calling process, once training is done.

    Example:
        >>> from gpukit.data import DataNotFoundError
        >>> from gpukit.models import lenet
        >>> try:
        ...     r = train_ddp(2, 1, 0.1, 32, net=lenet(), n_train=64, n_test=32, plot=False)
        ... except DataNotFoundError:
        ...     pass  # no Fashion-MNIST here and no network: the error says how to get it
        ... else:
        ...     assert r.n_train == 64 and len(r.devices) == 2
        ... # doctest: +ELLIPSIS
        test acc ..., ... sec/epoch on [...] (DistributedDataParallel, 2 ... processes)
        64 training / 32 test images, batch 32, lr 0.1, 1 epoch
    """
    if net is None:
        net = resnet18(10)
    _check(net, num_epochs, lr, init, seed, schedule)
    check_int(world_size, "world_size")
    check_int(batch_size, "batch_size")
    if batch_size % world_size:
        raise ValueError(
            f"batch_size must be a multiple of world_size ({world_size}), got {batch_size}"
        )
    for name, value in (("n_train", n_train), ("n_test", n_test), ("resize", resize)):
        if value is not None:
            check_int(value, name, 1, "or None")
    backend = _check_backend(backend, world_size)
    if n_train is not None and n_train < world_size:
        raise ValueError(f"n_train must be >= world_size ({world_size}), got {n_train}")
    foreign = sorted(
        {type(m).__qualname__ for m in net.modules() if type(m).__module__ == "__main__"}
    )
    if foreign:
        raise TypeError(
            f"net must be built from classes of an importable module, but {foreign} are "
            "defined in __main__ (a notebook or script), which the processes cannot import"
        )
    config = {
        "net": pickle.dumps(copy.deepcopy(net).cpu()),
        "num_epochs": num_epochs,
        "lr": float(lr),
        "batch_size": batch_size,
        "n_train": n_train,
        "n_test": n_test,
        "resize": resize,
        # Found (and if need be downloaded) here, once, so the ranks never write one file.
        "root": str(find_fashion_mnist(root)),
        "init": init,
        "seed": seed,
        "schedule": schedule,
    }
    out = _launch(_ddp_worker, world_size, (config,), backend)[0]
    net.load_state_dict(out["state_dict"])
    history: list[EpochStats] = out["history"]
    devices = [f"cuda:{i}" if backend == "nccl" else "cpu" for i in range(world_size)]
    plural = "es" if world_size > 1 else ""
    note = f"DistributedDataParallel, {world_size} {backend} process{plural}"
    if plot:
        animator = Animator(xlabel="epoch", xlim=[1, num_epochs], legend=LEGEND)
        for s in history:
            animator.add(s.epoch, (s.train_loss, s.train_acc, s.test_acc))
    return _finish(
        history,
        devices,
        out["n_train"],
        None,
        batch_size,
        float(lr),
        schedule,
        note,
        verbose,
        n_test=out["n_test"],
    )
