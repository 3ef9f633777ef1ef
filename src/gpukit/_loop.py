"""The epoch loop behind every training function of gpukit, and what it returns.

:mod:`gpukit.training` (one device, ``nn.DataParallel``, DDP processes) and
:mod:`gpukit.fast` (the fast-training recipe) place the model and the data each in their own
way, then hand over to :func:`train_epochs` and :func:`finish_run`. These take their settings
by keyword, so that a caller reads as what it asks for.

What a run returns, :class:`~gpukit.results.TrainResult` with its
:class:`~gpukit.results.EpochStats`, is public: :mod:`gpukit.results`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

from gpukit import step as one_step
from gpukit._checks import check_choice, check_int, check_number
from gpukit.models import init_weights
from gpukit.plotting import Animator
from gpukit.results import SCHEDULES, EpochStats, TrainResult
from gpukit.timing import Timer

Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]

WARMUP_START = 0.1  # the warm-up starts at a tenth of the learning rate
LEGEND = ["train loss", "train acc", "test acc"]


def schedule_factor(schedule: str, step: int, steps_per_epoch: int, num_epochs: int) -> float:
    """:func:`gpukit.training.lr_factor` without its checks, for the loop's every step."""
    if schedule == "constant":
        return 1.0
    if step < steps_per_epoch:
        return WARMUP_START + (1 - WARMUP_START) * step / steps_per_epoch
    decay_steps = max(1, steps_per_epoch * (num_epochs - 1))
    progress = min(1.0, (step - steps_per_epoch) / decay_steps)
    return 0.5 * (1 + math.cos(math.pi * progress))


def check_training_arguments(
    *,
    net: object,
    num_epochs: object,
    lr: object,
    init: object,
    seed: object,
    schedule: object,
    batches: dict[str, object],
) -> None:
    """The checks of the arguments that the training functions share.

    ``batches`` maps an argument's name (``"train_iter"``) to its value: each must be read
    again at every epoch.
    """
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


def seed_and_init(net: nn.Module, *, init: str | None, seed: int) -> None:
    """Seed torch's global generator and re-initialise ``net`` from ``seed`` (``None``: keep)."""
    torch.manual_seed(seed)
    if init is not None:
        init_weights(net, init, seed=seed)


def batch_size_of(train_iter: Batches) -> int:
    """The examples per minibatch of ``train_iter``: a DataLoader's setting, or the first
    minibatch's size."""
    size = getattr(train_iter, "batch_size", None)
    if isinstance(size, int):
        return size
    for X, _ in train_iter:
        return len(X)
    raise ValueError("train_iter yielded no examples")


def count_examples(test_iter: Batches) -> int:
    """The examples of ``test_iter``: a DataLoader's dataset, not a pass over the loader (which
    would draw a random seed from torch's global generator)."""
    dataset = getattr(test_iter, "dataset", None)
    if dataset is not None:
        return len(dataset)
    return sum(len(y) for _, y in test_iter)


def epoch_animator(num_epochs: int) -> Animator:
    """The plot of a run's curves (train loss, train accuracy, test accuracy) by epoch."""
    return Animator(xlabel="epoch", xlim=[1, num_epochs], legend=LEGEND)


def plot_history(history: list[EpochStats], *, num_epochs: int) -> None:
    """Draw the curves of a finished run, as :func:`train_epochs` draws them while it runs."""
    animator = epoch_animator(num_epochs)
    for stats in history:
        animator.add(stats.epoch, (stats.train_loss, stats.train_acc, stats.test_acc))


def _steps_per_epoch(train_iter: Batches) -> int:
    try:
        return len(train_iter)  # type: ignore[arg-type]
    except TypeError:
        return sum(1 for _ in train_iter)


def train_epochs(
    model: nn.Module,
    train_iter: Batches,
    *,
    num_epochs: int,
    lr: float,
    device: torch.device,
    schedule: str,
    evaluate: Callable[[], float],
    reduce: Callable[[torch.Tensor, float], tuple[torch.Tensor, float]] | None = None,
    before_epoch: Callable[[int], None] | None = None,
    plot: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    autocast: torch.dtype | None = None,
    sync_every_step: bool = False,
) -> tuple[list[EpochStats], int]:
    """SGD on cross-entropy for ``num_epochs`` passes over ``train_iter``, the learning rate
    following ``schedule`` at every step; returns one :class:`EpochStats` per epoch and the
    training examples of an epoch (over all ranks).

    The callers differ in how they place the model and in three hooks: ``evaluate()`` gives
    the test accuracy after an epoch, ``reduce(totals, seconds)`` combines the epoch's
    ``[loss sum, correct, examples]`` and time over DDP ranks, ``before_epoch(epoch)``
    reshuffles a distributed sampler. The metrics stay on ``device`` and are read once an
    epoch (a ``.item()`` per minibatch would make the CPU wait for the GPU at every step).

    :func:`gpukit.fast.train_fast`'s options: ``optimizer`` replaces plain SGD (``lr`` is the
    schedule's peak); ``autocast`` runs forward and loss in that dtype (float16 also scales the
    loss); ``sync_every_step`` reads the metrics after every minibatch, as D2L's loop does.
    """
    if optimizer is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scaler = torch.amp.GradScaler(device.type, enabled=autocast == torch.float16)
    steps = _steps_per_epoch(train_iter)
    # The scheduler steps once per minibatch.
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: schedule_factor(schedule, step, steps, num_epochs)
    )
    animator = epoch_animator(num_epochs) if plot else None
    history: list[EpochStats] = []
    for epoch in range(num_epochs):
        if before_epoch is not None:
            before_epoch(epoch)
        model.train()
        sums = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, correct
        examples = 0
        step_lr = lr
        timer = Timer()
        for X, y in train_iter:
            X = X.to(device)
            y = y.to(device)
            step_lr = optimizer.param_groups[0]["lr"]
            # looked up in gpukit.step at each call, so that a test can count the calls
            y_hat, batch_loss = one_step.train_step(
                model, X, y, optimizer=optimizer, scaler=scaler, autocast=autocast
            )
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
            epoch=epoch + 1,
            train_loss=loss_sum / count,
            train_acc=correct / count,
            test_acc=evaluate(),
            seconds=seconds,
            lr=step_lr,
        )
        history.append(stats)
        if animator is not None:
            animator.add(stats.epoch, (stats.train_loss, stats.train_acc, stats.test_acc))
    return history, int(count)


def finish_run(
    history: list[EpochStats],
    *,
    devices: list[str],
    n_train: int,
    n_test: int,
    batch_size: int,
    lr: float,
    schedule: str,
    note: str = "",
    compile_seconds: float = 0.0,
    verbose: bool = True,
) -> TrainResult:
    """The :class:`TrainResult` of a finished run, printed with ``verbose``."""
    result = TrainResult(
        test_acc=history[-1].test_acc,
        sec_per_epoch=sum(stats.seconds for stats in history) / len(history),
        devices=devices,
        epochs=len(history),
        n_train=n_train,
        n_test=n_test,
        batch_size=batch_size,
        lr=lr,
        history=history,
        note=note,
        schedule=schedule,
        compile_seconds=compile_seconds,
    )
    if verbose:
        print(result.summary())
    return result
