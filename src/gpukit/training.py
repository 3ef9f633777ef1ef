"""Training loops of the multi-GPU pages: one device (:func:`train_ch6`), ``nn.DataParallel``
(:func:`train_data_parallel`) and ``DistributedDataParallel`` processes (:func:`train_ddp`).

Each returns a :class:`~gpukit.results.TrainResult` (:mod:`gpukit.results`; importable from
here too) and prints its :meth:`~gpukit.results.TrainResult.summary`, which names
the devices really used and how much data was seen. The network is re-initialised from
``seed`` and the global generator is seeded, so with the same data order two runs on a CPU
give the same numbers.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from gpukit import results
from gpukit._checks import check_choice, check_int, check_number, check_tensors
from gpukit._loop import (
    Batches,
    batch_size_of,
    check_training_arguments,
    count_examples,
    finish_run,
    plot_history,
    schedule_factor,
    seed_and_init,
    train_epochs,
)
from gpukit.data import find_fashion_mnist, load_data_fashion_mnist
from gpukit.devices import device_or_gpu, existing_devices, try_all_gpus
from gpukit.metrics import evaluate_accuracy_gpu
from gpukit.models import resnet18
from gpukit.parallel import checked_backend, launch_checked, rank_device
from gpukit.results import EpochStats, TrainResult

__all__ = [
    "SCHEDULES",
    "lr_factor",
    "sgd",
    "train_ch6",
    "train_data_parallel",
    "train_ddp",
]

#: The learning-rate schedules the training functions accept (see :func:`lr_factor`), each with
#: the words a summary prints for it.
SCHEDULES = results.SCHEDULES
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
    return schedule_factor(schedule, step, steps_per_epoch, num_epochs)


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


# --------------------------------------------------------------------------- one process


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
        verbose: print :meth:`~gpukit.results.TrainResult.summary`.

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
    check_training_arguments(
        net=net,
        num_epochs=num_epochs,
        lr=lr,
        init=init,
        seed=seed,
        schedule=schedule,
        batches={"train_iter": train_iter, "test_iter": test_iter},
    )
    device = device_or_gpu(device)
    seed_and_init(net, init=init, seed=seed)
    net.to(device)
    return _train_in_this_process(
        net,
        train_iter,
        test_iter,
        num_epochs=num_epochs,
        lr=lr,
        schedule=schedule,
        devices=[device],
        plot=plot,
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
    check_training_arguments(
        net=net,
        num_epochs=num_epochs,
        lr=lr,
        init=init,
        seed=seed,
        schedule=schedule,
        batches={"train_iter": train_iter, "test_iter": test_iter},
    )
    if devices is None:
        devices = try_all_gpus()
    devs = existing_devices(devices)
    gpus = [d for d in devs if d.type == "cuda"]
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"devices must not repeat a GPU, got {[str(d) for d in devs]}")
    seed_and_init(net, init=init, seed=seed)
    model: nn.Module
    if gpus:
        net.to(gpus[0])
        model = nn.DataParallel(net, device_ids=gpus)
        used = gpus
    else:
        net.to("cpu")
        model = net
        used = [torch.device("cpu")]
    note = ""
    if gpus and len(gpus) < len(devs):
        note = f"nn.DataParallel uses GPUs only: {len(gpus)} of the {len(devs)} devices"
    elif not gpus and len(devs) > 1:
        note = f"nn.DataParallel needs GPUs: 1 CPU replica instead of {len(devs)} devices"
    return _train_in_this_process(
        model,
        train_iter,
        test_iter,
        num_epochs=num_epochs,
        lr=lr,
        schedule=schedule,
        devices=used,
        note=note,
        plot=plot,
        verbose=verbose,
    )


def _train_in_this_process(
    model: nn.Module,
    train_iter: Batches,
    test_iter: Batches,
    *,
    num_epochs: int,
    lr: float,
    schedule: str,
    devices: list[torch.device],
    note: str = "",
    plot: bool,
    verbose: bool,
) -> TrainResult:
    """Train ``model``, already placed, with its inputs and its evaluation on ``devices[0]``:
    the end of :func:`train_ch6` and :func:`train_data_parallel`."""

    def evaluate() -> float:
        return evaluate_accuracy_gpu(model, test_iter, devices[0])

    history, n_train = train_epochs(
        model,
        train_iter,
        num_epochs=num_epochs,
        lr=lr,
        device=devices[0],
        schedule=schedule,
        evaluate=evaluate,
        plot=plot,
    )
    return finish_run(
        history,
        devices=[str(device) for device in devices],
        n_train=n_train,
        n_test=count_examples(test_iter),
        batch_size=batch_size_of(train_iter),
        lr=lr,
        schedule=schedule,
        note=note,
        verbose=verbose,
    )


# --------------------------------------------------------------------------- DDP processes


def _ddp_worker(rank: int, world_size: int, config: dict[str, Any]) -> dict[str, Any] | None:
    """One rank of :func:`train_ddp`; module-level so that spawned processes can import it."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    seed = config["seed"]
    per_rank = config["batch_size"] // world_size
    device = rank_device()
    net = pickle.loads(config["net"])
    seed_and_init(net, init=config["init"], seed=seed)
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
    train_iter, per_rank_test_iter = load_data_fashion_mnist(per_rank, **data_options)
    # Rank 0 evaluates alone while the others wait: in batches of EVAL_BATCH_SIZE (the
    # accuracy does not depend on it), not in the few examples of a training step per rank.
    test_iter = DataLoader(
        per_rank_test_iter.dataset,
        batch_size=EVAL_BATCH_SIZE,
        collate_fn=per_rank_test_iter.collate_fn,
    )
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

    history, _ = train_epochs(
        model,
        loader,
        num_epochs=config["num_epochs"],
        lr=config["lr"],
        device=device,
        schedule=config["schedule"],
        evaluate=evaluate,
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
    run_timeout_s: float | None = None,
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
        run_timeout_s: stop the ranks and show their output if the whole run takes longer
            (``None``: no limit), as for :func:`gpukit.parallel.launch`.
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
    check_training_arguments(
        net=net,
        num_epochs=num_epochs,
        lr=lr,
        init=init,
        seed=seed,
        schedule=schedule,
        batches={},  # each rank loads its own
    )
    check_int(world_size, "world_size")
    check_int(batch_size, "batch_size")
    if batch_size % world_size:
        raise ValueError(
            f"batch_size must be a multiple of world_size ({world_size}), got {batch_size}"
        )
    for name, value in (("n_train", n_train), ("n_test", n_test), ("resize", resize)):
        if value is not None:
            check_int(value, name, 1, "or None")
    backend = checked_backend(backend, world_size)
    if run_timeout_s is not None:
        check_number(run_timeout_s, "run_timeout_s")
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
    out = launch_checked(
        _ddp_worker,
        world_size=world_size,
        args=(config,),
        backend=backend,
        run_timeout_s=run_timeout_s,
    )[0]
    net.load_state_dict(out["state_dict"])
    history: list[EpochStats] = out["history"]
    devices = [f"cuda:{i}" if backend == "nccl" else "cpu" for i in range(world_size)]
    plural = "es" if world_size > 1 else ""
    note = f"DistributedDataParallel, {world_size} {backend} process{plural}"
    if plot:
        plot_history(history, num_epochs=num_epochs)
    return finish_run(
        history,
        devices=devices,
        n_train=out["n_train"],
        n_test=out["n_test"],
        batch_size=batch_size,
        lr=float(lr),
        schedule=schedule,
        note=note,
        verbose=verbose,
    )
