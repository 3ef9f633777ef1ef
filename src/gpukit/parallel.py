"""Data parallelism by hand: split a batch, copy parameters, all-reduce; and start processes.

:func:`split_batch`, :func:`get_params` and :func:`allreduce` are the helpers of D2L's
"multi-GPU training from scratch" section. They accept any list of devices, repeated ones
included, so ``[cpu(), cpu()]`` gives two CPU replicas on a machine without enough GPUs.

:func:`launch` starts one process per rank for ``torch.distributed`` (NCCL when each rank can
have its own GPU, gloo on the CPU otherwise) and hands each rank's return value back to the
caller; :func:`ring_allreduce` is the ring algorithm of D2L's parameter-server section, written
with ``send``/``recv``, and :func:`ring_allreduce_demo` checks it against ``dist.all_reduce``.
"""

from __future__ import annotations

import datetime
import os
import pickle
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gpukit._checks import check_int
from gpukit.devices import existing_device

__all__ = [
    "LaunchError",
    "allreduce",
    "choose_backend",
    "get_params",
    "launch",
    "rank_device",
    "ring_allreduce",
    "ring_allreduce_demo",
    "split_batch",
]


def _check_devices(devices: object) -> list[torch.device]:
    if isinstance(devices, str | torch.device) or not isinstance(devices, Sequence):
        raise TypeError("devices must be a list of devices, e.g. [torch.device('cpu')]")
    if len(devices) == 0:
        raise ValueError("devices must not be empty")
    try:
        return [torch.device(d) for d in devices]
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"devices must hold devices such as 'cpu' or 'cuda:0': {err}") from None


def split_batch(
    X: torch.Tensor, y: torch.Tensor, devices: Sequence[torch.device | str]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Split ``X`` and ``y`` along dimension 0 into ``len(devices)`` parts, one per device.

    Part ``i`` is moved to ``devices[i]``; part sizes differ by at most one. A device may be
    listed more than once (``[cpu(), cpu()]``: two CPU replicas).

    D2L uses ``nn.parallel.scatter``, which works on GPUs only and cuts ``torch.chunk``-style:
    10 examples on 4 GPUs become 3+3+3+1, and 6 examples become only three parts, so that
    ``zip`` silently leaves a GPU out. Here every device always gets a part.

    Args:
        X: the features, at least one dimension.
        y: the labels, as many as ``X`` has examples.
        devices: where the parts go; at most as many as there are examples.

    Returns:
        ``(X_parts, y_parts)``, two lists as long as ``devices``.

    Example:
        >>> X, y = torch.arange(20).reshape(10, 2), torch.arange(10)
        >>> X_parts, y_parts = split_batch(X, y, [torch.device("cpu")] * 4)
        >>> [len(part) for part in y_parts]
        [3, 3, 2, 2]
        >>> if torch.cuda.device_count() >= 2:
        ...     X_parts, y_parts = split_batch(X, y, ["cuda:0", "cuda:1"])
        ...     assert X_parts[1].device == torch.device("cuda:1")
    """
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"X must be a torch.Tensor, got {type(X).__name__}")
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y must be a torch.Tensor, got {type(y).__name__}")
    devs = _check_devices(devices)
    if X.dim() == 0 or y.dim() == 0:
        raise ValueError("X and y must have at least one dimension (the examples)")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have as many examples, got {X.shape[0]} and {y.shape[0]}")
    if X.shape[0] < len(devs):
        raise ValueError(
            f"X has {X.shape[0]} examples, fewer than the {len(devs)} devices: "
            "every device needs at least one"
        )
    X_parts = [part.to(d) for part, d in zip(X.tensor_split(len(devs)), devs, strict=True)]
    y_parts = [part.to(d) for part, d in zip(y.tensor_split(len(devs)), devs, strict=True)]
    return X_parts, y_parts


def get_params(params: Sequence[torch.Tensor], device: torch.device | str) -> list[torch.Tensor]:
    """Copy ``params`` to ``device`` as new leaf tensors that require gradients (D2L's name).

    D2L writes ``p.to(device)``, which returns ``p`` itself when it is already there: two
    "replicas" on the CPU would then be the same tensors and share one gradient. Here each
    call makes a real copy.

    Example:
        >>> params = [torch.ones(2), torch.zeros(3)]
        >>> copies = get_params(params, "cpu")
        >>> copies[0].requires_grad, copies[0] is params[0]
        (True, False)
        >>> if torch.cuda.is_available():
        ...     assert get_params(params, "cuda:0")[1].device.type == "cuda"
    """
    if isinstance(params, torch.Tensor) or not isinstance(params, Sequence):
        raise TypeError("params must be a list of tensors")
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"params[{i}] must be a torch.Tensor, got {type(p).__name__}")
    dev = existing_device(device)
    return [p.detach().to(dev, copy=True).requires_grad_() for p in params]


def allreduce(data: Sequence[torch.Tensor]) -> None:
    """Sum tensors that live on different devices and write the sum into every one, in place.

    Works for any number of tensors, one included. A version of D2L's Chinese edition ended
    with ``data[i] = data[0].to(data[i].device)``, which rebinds the list entry instead of
    writing into the tensor: every GPU but the first kept its own gradient, and the replicas
    drifted apart. Here the sum is computed once (on ``data[0]``'s device) and copied into
    each tensor, so all of them end up bit-for-bit equal.

    Args:
        data: tensors of one shape and dtype, typically the same gradient on each device.

    Example:
        >>> grads = [torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])]
        >>> allreduce(grads)
        >>> grads
        [tensor([11., 22.]), tensor([11., 22.])]
        >>> if torch.cuda.device_count() >= 2:
        ...     g = [torch.ones(3, device="cuda:0"), torch.ones(3, device="cuda:1")]
        ...     allreduce(g)
        ...     assert g[1].tolist() == [2.0, 2.0, 2.0]
    """
    if isinstance(data, torch.Tensor) or not isinstance(data, Sequence):
        raise TypeError("data must be a list of tensors, one per device")
    if len(data) == 0:
        raise ValueError("data must hold at least one tensor")
    for i, t in enumerate(data):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"data[{i}] must be a torch.Tensor, got {type(t).__name__}")
        if t.shape != data[0].shape or t.dtype != data[0].dtype:
            raise ValueError(
                "data must hold tensors of one shape and dtype: data[0] is "
                f"{tuple(data[0].shape)} {data[0].dtype}, data[{i}] is {tuple(t.shape)} {t.dtype}"
            )
    with torch.no_grad():
        total = data[0].clone()
        for t in data[1:]:
            total += t.to(total.device)
        for t in data:
            t.copy_(total)


# --------------------------------------------------------------------------- processes


class LaunchError(RuntimeError):
    """A process started by :func:`launch` failed; ``rank`` says which, the message says why.

    Attributes:
        rank: the rank that failed first.
        child_traceback: the child's formatted traceback (empty if it died without one).

    Example:
        >>> err = LaunchError(1, "ValueError: boom")
        >>> err.rank, str(err)
        (1, 'rank 1 failed: ValueError: boom')
    """

    def __init__(self, rank: int, message: str, child_traceback: str = "") -> None:
        text = f"rank {rank} failed: {message}"
        if child_traceback:
            # The parent's traceback ends in launch(); the cause is in the child's.
            text += f"\n\nTraceback in rank {rank}:\n{child_traceback.rstrip()}"
        super().__init__(text)
        self.rank = rank
        self.child_traceback = child_traceback


def choose_backend(world_size: int) -> str:
    """Return ``"nccl"`` when each of ``world_size`` ranks can have its own GPU, else ``"gloo"``.

    Example:
        >>> choose_backend(1000)  # no machine has 1000 GPUs
        'gloo'
    """
    check_int(world_size, "world_size")
    if torch.cuda.device_count() >= world_size and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def rank_device() -> torch.device:
    """The device of this process in an initialized process group: its GPU under NCCL, else CPU.

    Example:
        >>> rank_device()  # outside a process group: the CPU
        device(type='cpu')
    """
    if dist.is_available() and dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _free_port() -> int:
    # The OS picks a port that is free now; another program could take it before the ranks
    # bind it, which is unlikely enough on a build machine.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(
    rank: int,
    world_size: int,
    worker: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str,
    port: int,
    timeout_s: float,
    result_dir: str,
) -> None:
    out = Path(result_dir)
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        else:
            # Each rank would otherwise start one thread per core: n ranks on n cores would
            # run n*n threads and spend their time fighting over the cores.
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        dist.init_process_group(
            backend,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
            # Binds NCCL to this rank's GPU at once (barrier() would otherwise guess).
            device_id=torch.device("cuda", rank) if backend == "nccl" else None,
        )
        payload = pickle.dumps(worker(rank, world_size, *args))
    except BaseException as err:
        # Written at once, before this process leaves the group: the other ranks often fail
        # only because it left, and the time says which rank failed first.
        (out / f"{rank}.err").write_text(
            f"{time.time_ns()}\x00{type(err).__name__}: {err}\x00{traceback.format_exc()}",
            encoding="utf-8",
        )
        # No destroy_process_group() here: with a peer gone it can hang, and exiting is
        # what tells the parent (and through it the other ranks) to stop.
        raise SystemExit(1) from None
    dist.destroy_process_group()
    (out / f"{rank}.pkl").write_bytes(payload)


def launch(
    worker: Callable[..., Any],
    world_size: int,
    *args: Any,
    backend: str | None = None,
    timeout_s: float = 600.0,
) -> list[Any]:
    """Run ``worker(rank, world_size, *args)`` in ``world_size`` new processes; return results.

    Each process gets ``MASTER_ADDR=127.0.0.1``, a free ``MASTER_PORT``, ``RANK`` and
    ``WORLD_SIZE``, joins a process group (and leaves it when ``worker`` returns), and under
    NCCL uses GPU ``rank``. Processes are started with ``spawn``, so this works from a
    Jupyter notebook as long as ``worker`` is a function defined at the top level of an
    importable module (such as gpukit), not in the notebook; a script must call it under
    ``if __name__ == "__main__":``, as with any ``spawn``. What the ranks print goes to the
    kernel's terminal, not to the page: return values and print them in the caller.

    Args:
        worker: module-level function ``worker(rank, world_size, *args)``; its return value
            must be picklable.
        world_size: number of processes.
        *args: extra arguments for ``worker`` (picklable).
        backend: ``"nccl"``, ``"gloo"``, or ``None`` for :func:`choose_backend`.
        timeout_s: how long a collective may wait for the other ranks.

    Returns:
        The return values, indexed by rank.

    Raises:
        LaunchError: a rank raised or died; the other ranks are stopped.

    Example:
        >>> launch(ring_allreduce_demo, 2, 10)[0]["max_abs_diff"]
        0.0
    """
    if not callable(worker):
        raise TypeError(f"worker must be a function, got {type(worker).__name__}")
    module = getattr(worker, "__module__", None)
    qualname = getattr(worker, "__qualname__", "")
    if module in (None, "__main__") or "<" in qualname or "." in qualname:
        raise TypeError(
            f"worker must be a function defined at the top level of an importable module "
            f"(new processes import it from there), got {module}.{qualname}: define it in "
            "a .py file, not in a notebook or inside another function"
        )
    check_int(world_size, "world_size")
    if backend is None:
        backend = choose_backend(world_size)
    elif backend == "nccl":
        if torch.cuda.device_count() < world_size:
            raise ValueError(
                f"backend 'nccl' needs one GPU per rank: world_size is {world_size}, "
                f"this machine has {torch.cuda.device_count()} GPU(s); use 'gloo' or None"
            )
    elif backend != "gloo":
        raise ValueError(f"backend must be 'nccl', 'gloo' or None, got {backend!r}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise TypeError(f"timeout_s must be a number of seconds, got {type(timeout_s).__name__}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    with tempfile.TemporaryDirectory(prefix="gpukit-launch-") as result_dir:
        context = mp.start_processes(
            _entry,
            args=(world_size, worker, args, backend, _free_port(), timeout_s, result_dir),
            nprocs=world_size,
            join=False,
            start_method="spawn",
        )
        failure: Exception | None = None
        try:
            while not context.join():
                pass
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as err:
            failure = err
        finally:
            # An interrupted caller (Ctrl-C in a notebook) must not leave ranks running.
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
        return _collect(Path(result_dir), world_size, failure)


def _collect(out: Path, world_size: int, failure: Exception | None) -> list[Any]:
    errors = []
    for path in out.glob("*.err"):
        stamp, message, child_tb = path.read_text(encoding="utf-8").split("\x00", 2)
        errors.append((int(stamp), int(path.stem), message.strip(), child_tb))
    if errors:
        _, rank, message, child_tb = min(errors)
        raise LaunchError(rank, message, child_tb)
    if failure is not None:
        rank = getattr(failure, "error_index", -1)
        raise LaunchError(rank, str(failure).strip())
    return [pickle.loads((out / f"{rank}.pkl").read_bytes()) for rank in range(world_size)]


# --------------------------------------------------------------------------- ring all-reduce


def ring_allreduce(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` over all ranks with the ring algorithm, in place; return it.

    Call it on every rank of an initialized process group. The tensor is cut into
    ``world_size`` chunks. In ``world_size - 1`` reduce-scatter steps each rank sends one
    chunk to its right neighbour and adds the chunk coming from its left, so that afterwards
    rank ``r`` holds the full sum of chunk ``(r + 1) % world_size``; ``world_size - 1``
    all-gather steps then pass the finished chunks around the ring. Each rank sends
    ``2 (n - 1) / n`` times the tensor's size, whatever the number of ranks ``n``.

    Example:
        >>> x = torch.ones(3)
        >>> ring_allreduce(x) is x  # outside a process group: nothing to sum with
        True
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    n, rank = dist.get_world_size(), dist.get_rank()
    flat = tensor.detach().reshape(-1).clone()
    chunks = list(flat.tensor_split(n))
    right, left = (rank + 1) % n, (rank - 1) % n
    incoming = torch.empty_like(flat)
    inbox = list(incoming.tensor_split(n))

    def exchange(send_index: int, recv_index: int) -> torch.Tensor:
        # Send and receive as one batch: if every rank sent first and waited, a blocking
        # transport (NCCL in particular) would deadlock the whole ring. A chunk is empty on
        # every rank or on none (same index, same size), so skipping empty ones keeps the
        # sends and receives of neighbours matched.
        ops = []
        if chunks[send_index].numel():
            ops.append(dist.P2POp(dist.isend, chunks[send_index], right))
        if inbox[recv_index].numel():
            ops.append(dist.P2POp(dist.irecv, inbox[recv_index], left))
        for request in dist.batch_isend_irecv(ops) if ops else []:
            request.wait()
        return inbox[recv_index]

    for step in range(n - 1):  # reduce-scatter
        send, recv = (rank - step) % n, (rank - step - 1) % n
        chunks[recv] += exchange(send, recv)
    for step in range(n - 1):  # all-gather
        send, recv = (rank + 1 - step) % n, (rank - step) % n
        chunks[recv].copy_(exchange(send, recv))
    with torch.no_grad():
        tensor.copy_(flat.reshape(tensor.shape))
    return tensor


def ring_allreduce_demo(
    rank: int, world_size: int, numel: int = 1_000_000, repeats: int = 3
) -> dict[str, float]:
    """A :func:`launch` worker: ring all-reduce a random vector and compare with ``all_reduce``.

    Each rank draws ``numel`` numbers from the seed ``rank`` and sums them over the ranks with
    :func:`ring_allreduce` and with ``dist.all_reduce``. Both run once untimed first (NCCL sets
    up its connections on first use, which would otherwise dominate), then ``repeats`` times;
    the times reported are the medians.

    Returns:
        ``rank``, ``max_abs_diff`` (largest difference between the two sums), ``ring_sec``
        and ``all_reduce_sec`` (median seconds of one call on this rank).

    Example:
        >>> results = launch(ring_allreduce_demo, 2, 1000)
        >>> [r["max_abs_diff"] < 1e-5 for r in results]
        [True, True]
    """
    check_int(world_size, "world_size")
    check_int(rank, "rank", None)
    check_int(numel, "numel")
    check_int(repeats, "repeats")
    if not 0 <= rank < world_size:
        raise ValueError(
            f"rank must be between 0 and world_size - 1 = {world_size - 1}, got {rank}"
        )
    device = rank_device()
    x = torch.randn(numel, generator=torch.Generator().manual_seed(rank)).to(device)

    def timed(allreduce_fn: Callable[[torch.Tensor], object]) -> tuple[torch.Tensor, float]:
        allreduce_fn(x.clone())  # warm-up
        times = []
        for _ in range(repeats):
            y = x.clone()
            dist.barrier()  # start together: a collective waits for its slowest rank
            start = time.perf_counter()
            allreduce_fn(y)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
        return y, sorted(times)[len(times) // 2]

    mine, ring_s = timed(ring_allreduce)
    builtin, builtin_s = timed(dist.all_reduce)
    return {
        "rank": float(rank),
        "max_abs_diff": (mine - builtin).abs().max().item(),
        "ring_sec": ring_s,
        "all_reduce_sec": builtin_s,
    }
