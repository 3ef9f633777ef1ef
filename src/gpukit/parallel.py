"""Data parallelism by hand (D2L's :func:`split_batch`, :func:`get_params`, :func:`allreduce`,
for any list of devices, ``[cpu(), cpu()]`` included), and processes for ``torch.distributed``:
:func:`launch` starts one per rank; :func:`ring_allreduce` is the ring algorithm of the
parameter-server page, checked against ``dist.all_reduce`` by :func:`ring_allreduce_demo`.

Within gpukit (not in ``__all__``, not for pages), for the modules that start processes:
``rank_device`` (a rank's device), ``checked_backend`` (a backend argument, checked) and
``launch_checked`` (:func:`launch` once its arguments are checked).
"""

from __future__ import annotations

import datetime
import gc
import os
import pickle
import signal
import socket
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gpukit._checks import check_choice, check_int, check_number, check_tensors, check_type
from gpukit.devices import existing_device, existing_devices
from gpukit.timing import Timer

__all__ = [
    "allreduce",
    "choose_backend",
    "get_params",
    "launch",
    "ring_allreduce",
    "ring_allreduce_demo",
    "ring_allreduce_sweep",
    "split_batch",
    "threads_per_rank",
    "time_collective",
]


def split_batch(
    X: torch.Tensor, y: torch.Tensor, devices: Sequence[torch.device | str]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Split ``X`` and ``y`` along dimension 0 into one part per device, moved there.

    Part sizes differ by at most one, and a device may be listed twice (two CPU replicas).
    D2L uses ``nn.parallel.scatter``, which takes GPUs only and cuts like ``torch.chunk``:
    6 examples for 4 GPUs become three parts, and ``zip`` silently leaves a GPU out.

    Example:
        >>> X, y = torch.arange(20).reshape(10, 2), torch.arange(10)
        >>> X_parts, y_parts = split_batch(X, y, [torch.device("cpu")] * 4)
        >>> [len(part) for part in y_parts]
        [3, 3, 2, 2]
    """
    check_type(X, "X", torch.Tensor, "a torch.Tensor")
    check_type(y, "y", torch.Tensor, "a torch.Tensor")
    devs = existing_devices(devices)
    if X.dim() == 0 or y.dim() == 0:
        raise ValueError("X and y must have at least one dimension (the examples)")
    if len(X) != len(y):
        raise ValueError(f"y must have as many examples as X, got {len(y)} and {len(X)}")
    if len(X) < len(devs):
        raise ValueError(f"X has {len(X)} examples, fewer than the {len(devs)} devices")
    return (
        [part.to(d) for part, d in zip(X.tensor_split(len(devs)), devs, strict=True)],
        [part.to(d) for part, d in zip(y.tensor_split(len(devs)), devs, strict=True)],
    )


def get_params(params: Sequence[torch.Tensor], device: torch.device | str) -> list[torch.Tensor]:
    """Copy ``params`` to ``device`` as new tensors that require gradients: one replica.

    Each call makes a real copy. D2L's ``p.to(device)`` returns ``p`` itself when it is
    already on ``device``, so two "replicas" on the CPU would be one tensor with one gradient.

    Example:
        >>> params = [torch.ones(2)]
        >>> get_params(params, "cpu")[0] is params[0], get_params(params, "cpu")[0].requires_grad
        (False, True)
    """
    params = check_tensors(params, "params")
    dev = existing_device(device)
    return [p.detach().to(dev, copy=True).requires_grad_() for p in params]


def allreduce(data: Sequence[torch.Tensor]) -> None:
    """Sum tensors that live on different devices and write the sum into each one, in place.

    The sum is built on the first tensor's device and copied into every tensor, so all of them
    end up bit-for-bit equal. Rebinding the list entries instead (``data[i] = data[0].to(...)``,
    as several editions of D2L do) would leave every tensor but the first as it was.

    Example:
        >>> grads = [torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])]
        >>> allreduce(grads)
        >>> grads
        [tensor([11., 22.]), tensor([11., 22.])]
    """
    data = check_tensors(data, "data")
    if not data:
        raise ValueError("data must hold at least one tensor")
    for i, t in enumerate(data):
        if t.shape != data[0].shape or t.dtype != data[0].dtype:
            raise ValueError(
                f"data must hold tensors of one shape and dtype: data[0] is "
                f"{tuple(data[0].shape)} {data[0].dtype}, data[{i}] is {tuple(t.shape)} {t.dtype}"
            )
    with torch.no_grad():
        total = data[0].clone()
        for t in data[1:]:
            total += t.to(total.device)
        for t in data:
            t.copy_(total)


def choose_backend(world_size: int) -> str:
    """Return ``"nccl"`` when each of ``world_size`` ranks can have its own GPU, else ``"gloo"``.

    Example:
        >>> choose_backend(1000)  # no machine has 1000 GPUs
        'gloo'
    """
    nccl = torch.cuda.device_count() >= check_int(world_size, "world_size")
    return "nccl" if nccl and dist.is_nccl_available() else "gloo"


def checked_backend(backend: object, world_size: int) -> str:
    """``backend``, or for ``None`` the one :func:`choose_backend` picks, if it can run."""
    if backend is None:
        return choose_backend(world_size)
    check_choice(backend, "backend", ("nccl", "gloo"))
    if backend == "nccl" and torch.cuda.device_count() < world_size:
        raise ValueError(
            f"backend 'nccl' needs one GPU per rank: world_size is {world_size}, "
            f"this machine has {torch.cuda.device_count()} GPU(s); use 'gloo' or None"
        )
    return backend  # type: ignore[return-value]


def threads_per_rank(world_size: int) -> int:
    """The PyTorch threads :func:`launch` gives each of ``world_size`` ranks on a CPU: an equal
    share of the cores, at least one. Each rank would otherwise start one thread per core, and
    n ranks on n cores would run n * n threads that spend their time fighting over the cores.

    Example:
        >>> import os
        >>> threads_per_rank(1) == (os.cpu_count() or 1)
        True
        >>> threads_per_rank(10_000)  # more ranks than cores: one thread each
        1
    """
    return max(1, (os.cpu_count() or 1) // check_int(world_size, "world_size"))


def rank_device() -> torch.device:
    """The device of this process in a process group: its GPU under NCCL, else the CPU."""
    if dist.is_available() and dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _capture_output(path: Path) -> None:
    """Send this process's standard output and error, Python's and C's alike, to ``path``.

    The file descriptors 1 and 2 themselves are replaced, so that what C++ writes (NCCL's and
    gloo's messages, a watchdog's abort, a segmentation fault's last words) lands there too;
    Python's streams flush at every line, so a rank that dies abruptly still leaves its lines.
    """
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if stream is not None:
            stream.flush()
        os.dup2(log, fd)
    os.close(log)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115


def _tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` characters of a rank's captured output ("" if it wrote nothing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").rstrip()
    except FileNotFoundError:
        return ""
    return text if len(text) <= limit else "...\n" + text[-limit:]


def _outputs(out: Path, world_size: int, ranks: Sequence[int] | None = None) -> str:
    """The captured output of ``ranks`` (all by default), each under a heading, for an error."""
    parts = []
    for rank in range(world_size) if ranks is None else ranks:
        text = _tail(out / f"{rank}.log")
        parts.append(f"--- output of rank {rank} ---\n{text or '(nothing)'}")
    return "\n\n".join(parts)


def _entry(
    rank: int,
    world_size: int,
    worker: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str,
    port: int,
    timeout_s: float,
    out: Path,
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    _capture_output(out / f"{rank}.log")
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        else:
            torch.set_num_threads(threads_per_rank(world_size))
        dist.init_process_group(
            backend,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
            # Binds NCCL to this rank's GPU at once (barrier() would otherwise guess).
            device_id=torch.device("cuda", rank) if backend == "nccl" else None,
        )
        payload = pickle.dumps(worker(rank, world_size, *args))
        _leave_group()
    except BaseException as err:
        # Written at once, before this process leaves the group: the other ranks often fail
        # only because it left, and the time says which rank failed first.
        (out / f"{rank}.err").write_text(
            f"{time.time_ns():020d}\x00rank {rank} failed: {type(err).__name__}: {err}\n\n"
            f"Traceback in rank {rank}:\n{traceback.format_exc().rstrip()}",
            encoding="utf-8",
        )
        # No destroy_process_group() here: with a peer gone it can hang, and exiting is
        # what tells the parent (and through it the other ranks) to stop.
        raise SystemExit(1) from None
    (out / f"{rank}.pkl").write_bytes(payload)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown: it destroys C++ objects (process groups kept alive by
    # a leftover reference, gloo's and the profiler's threads) in an order of its own, and a
    # thread destroyed while still joinable aborts the process ("terminate called without an
    # active exception"), a failure after the work was done. Everything is written by now.
    os._exit(0)


def _leave_group() -> None:
    """Leave the process group once every rank is done with it, and with nothing holding it."""
    # No rank closes its connections while another still finishes a collective with it.
    dist.barrier()
    # Modules that hold the group (FSDP's and DTensor's state sits in reference cycles) are
    # freed now, while Python is whole, not at exit.
    gc.collect()
    dist.destroy_process_group()


def launch(
    worker: Callable[..., Any],
    world_size: int,
    *args: Any,
    backend: str | None = None,
    timeout_s: float = 600.0,
    run_timeout_s: float | None = None,
) -> list[Any]:
    """Run ``worker(rank, world_size, *args)`` in ``world_size`` new processes; return the
    (picklable) return values, indexed by rank.

    Each process joins a process group (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK`` and
    ``WORLD_SIZE`` are set) with ``backend`` (``None``: :func:`choose_backend`), under NCCL on
    GPU ``rank``; a collective waits ``timeout_s`` for the other ranks. The processes are
    *spawned*, so ``worker`` must be defined in an importable module (such as gpukit), not in a
    notebook, and a script must call ``launch`` under ``if __name__ == "__main__":``.

    What a rank writes to its standard output and error, from Python or from C++ (NCCL, gloo),
    is captured in a file: return values are the way to send results back. If a rank fails, the
    others are stopped and a ``RuntimeError`` gives its traceback and its output, also when it
    died without a Python exception (a crash, an abort, ``os._exit``). If the whole run takes
    longer than ``run_timeout_s`` seconds (``None``: no limit), the ranks are stopped and the
    ``RuntimeError`` shows every rank's output: a hang fails instead of waiting.

    Example:
        >>> launch(ring_allreduce_demo, 2, 10, run_timeout_s=300)[0]["max_abs_diff"]
        0.0
    """
    if not callable(worker):
        raise TypeError(f"worker must be a function, got {type(worker).__name__}")
    module = getattr(worker, "__module__", None)
    name = getattr(worker, "__qualname__", "")
    if module in (None, "__main__") or "<" in name or "." in name:
        raise TypeError(
            "worker must be a function defined at the top level of an importable module (new "
            f"processes import it from there), got {module}.{name}: define it in a .py file, "
            "not in a notebook or inside another function"
        )
    check_int(world_size, "world_size")
    backend = checked_backend(backend, world_size)
    check_number(timeout_s, "timeout_s")
    if run_timeout_s is not None:
        check_number(run_timeout_s, "run_timeout_s")
    return launch_checked(
        worker,
        world_size=world_size,
        args=args,
        backend=backend,
        timeout_s=timeout_s,
        run_timeout_s=run_timeout_s,
    )


def launch_checked(
    worker: Callable[..., Any],
    *,
    world_size: int,
    args: tuple[Any, ...],
    backend: str,
    timeout_s: float = 600.0,
    run_timeout_s: float | None = None,
) -> list[Any]:
    """:func:`launch` with its arguments already checked."""
    with tempfile.TemporaryDirectory(prefix="gpukit-launch-") as result_dir:
        out = Path(result_dir)
        with socket.socket() as s:  # a port free now, and most likely still free then
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        job = (world_size, worker, args, backend, port, timeout_s, out)
        start = time.monotonic()
        # Not torch's elastic launcher (torch.distributed.launcher.api.elastic_launch): it
        # returns each rank's value too, but its LaunchConfig has no limit on a run's time, so
        # a hung rank would hold the caller until the collective's own timeout.
        context = mp.start_processes(_entry, job, world_size, join=False, start_method="spawn")
        failure: Exception | None = None
        hung = False
        try:
            # The parent's watchdog: join() returns False when its short wait runs out.
            while not context.join(timeout=0.2):
                if run_timeout_s is not None and time.monotonic() - start > run_timeout_s:
                    hung = True
                    break
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as err:
            failure = err
        finally:  # an interrupted caller (Ctrl-C in a notebook) must not leave ranks running
            _stop(context.processes)
        return _results(out, context.processes, failure, run_timeout_s if hung else None)


def _results(
    out: Path, processes: Sequence[Any], failure: Exception | None, hung_after_s: float | None
) -> list[Any]:
    """The ranks' return values, or a ``RuntimeError`` naming what went wrong, with output."""
    world_size = len(processes)
    # A rank that died without a Python exception (os._exit, a crash, an abort): no .err file
    # and an exit code other than the 0 of success and the SIGTERM/SIGKILL of _stop. It is
    # named first: the other ranks' errors are usually its consequences (a peer went away).
    stopped = (0, -signal.SIGTERM, -signal.SIGKILL)
    crashed = [
        rank
        for rank, process in enumerate(processes)
        if process.exitcode not in stopped and not (out / f"{rank}.err").exists()
    ]
    parts = [
        f"rank {rank} died without a Python exception ({_exit_reason(processes[rank].exitcode)})"
        f"\n\n{_outputs(out, world_size, [rank])}"
        for rank in crashed
    ]
    errors = sorted(path.read_text(encoding="utf-8") for path in out.glob("*.err"))
    if errors:  # the rank whose Python exception came first, with its traceback and output
        message = errors[0].split("\x00", 1)[1]
        rank = int(message.split()[1])
        parts.append(f"{message}\n\n{_outputs(out, world_size, [rank])}")
    if parts:
        raise RuntimeError("\n\n".join(parts))
    if failure is not None:  # cannot happen unless a rank vanished without a trace
        raise RuntimeError(f"a rank failed: {failure}\n\n{_outputs(out, world_size)}")
    if hung_after_s is not None:
        raise RuntimeError(
            f"the {world_size} ranks did not finish within run_timeout_s={hung_after_s:g} s "
            "and were stopped: a rank waits for a collective that another never reaches, or "
            f"the work is slower than the limit\n\n{_outputs(out, world_size)}"
        )
    return [pickle.loads((out / f"{rank}.pkl").read_bytes()) for rank in range(world_size)]


def _exit_reason(exitcode: int | None) -> str:
    """``exit code 3`` or ``signal SIGSEGV``, from a process's ``exitcode``."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def _stop(processes: Sequence[Any]) -> None:
    """Terminate the ranks still running, and wait until they are gone (their files complete)."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(5)
        if process.is_alive():  # SIGTERM ignored or blocked in C: no more waiting
            process.kill()
            process.join(5)


def ring_allreduce(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` over all ranks with the ring algorithm, in place; return it.

    Call it on every rank of a process group. The tensor is cut into ``n = world_size``
    chunks. In ``n - 1`` reduce-scatter steps each rank sends one chunk to its right neighbour
    and adds the chunk coming from its left, so that afterwards rank ``r`` holds the full sum
    of chunk ``(r + 1) % n``; ``n - 1`` all-gather steps then pass the finished chunks around
    the ring. Each rank sends ``2 (n - 1) / n`` times the tensor's size, whatever ``n``.

    Example:
        >>> x = torch.ones(3)
        >>> ring_allreduce(x) is x  # outside a process group: nothing to sum with
        True
    """
    check_type(tensor, "tensor", torch.Tensor, "a torch.Tensor")
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    n = dist.get_world_size()
    rank = dist.get_rank()
    flat = tensor.detach().reshape(-1).clone()
    chunks = list(flat.tensor_split(n))
    inbox = list(torch.empty_like(flat).tensor_split(n))
    right, left = (rank + 1) % n, (rank - 1) % n

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


def time_collective(fn: Callable[[], Any], repeats: int) -> tuple[Any, list[float]]:
    """Call ``fn``, which runs collectives, once untimed, then ``repeats`` times, each call
    started together on every rank; return its last result and each timed call's seconds.

    A collective waits for its slowest rank, so a rank that started early would time that
    wait: a barrier lines the ranks up before each call, and :class:`~gpukit.timing.Timer`
    reads the clock after the GPU has finished. Call it on every rank of the process group.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function to call, got {type(fn).__name__}")
    check_int(repeats, "repeats")
    out = fn()  # warm-up: NCCL connects, kernels load, on first use
    timer = Timer()
    for _ in range(repeats):
        dist.barrier()
        timer.start()
        out = fn()
        timer.stop()
    return out, timer.times


def ring_allreduce_demo(
    rank: int, world_size: int, numel: int = 1_000_000, repeats: int = 3
) -> dict[str, float]:
    """A :func:`launch` worker: ring all-reduce a random vector and compare with ``all_reduce``.

    Each rank sums ``numel`` numbers drawn from the seed ``rank`` over the ranks with both,
    once untimed (NCCL connects on first use), then ``repeats`` times. Returns ``rank``,
    ``max_abs_diff`` between the two sums, and the median seconds of a call on this rank,
    ``ring_sec`` and ``all_reduce_sec``.

    Example:
        >>> [r["max_abs_diff"] < 1e-5 for r in launch(ring_allreduce_demo, 2, 1000)]
        [True, True]
    """
    check_int(numel, "numel")
    check_int(repeats, "repeats")
    device = rank_device()
    x = torch.randn(numel, generator=torch.Generator().manual_seed(rank)).to(device)

    def timed(allreduce_fn: Callable[[torch.Tensor], object]) -> tuple[torch.Tensor, float]:
        allreduce_fn(x.clone())  # warm-up
        timer = Timer()  # the wall clock, after waiting for the GPU
        for _ in range(repeats):
            y = x.clone()
            dist.barrier()  # start together: a collective waits for its slowest rank
            timer.start()
            allreduce_fn(y)
            timer.stop()
        return y, statistics.median(timer.times)

    mine, ring_s = timed(ring_allreduce)
    builtin, builtin_s = timed(dist.all_reduce)
    return {
        "rank": float(rank),
        "max_abs_diff": (mine - builtin).abs().max().item(),
        "ring_sec": ring_s,
        "all_reduce_sec": builtin_s,
    }


def ring_allreduce_sweep(
    rank: int, world_size: int, sizes: Sequence[int], repeats: int = 3
) -> dict[int, dict[str, float]]:
    """A :func:`launch` worker: :func:`ring_allreduce_demo` for each of ``sizes``, in one group.

    Starting the processes and joining a group takes seconds (each process imports torch),
    more than the measurements; one group for all sizes pays that once. Returns this rank's
    report of :func:`ring_allreduce_demo` for each size, by size.

    Example:
        >>> reports = launch(ring_allreduce_sweep, 2, [10, 1000])
        >>> [sorted(r) for r in reports]
        [[10, 1000], [10, 1000]]
        >>> all(r[n]["max_abs_diff"] < 1e-5 for r in reports for n in r)
        True
    """
    if isinstance(sizes, str) or not isinstance(sizes, Sequence):
        raise TypeError(f"sizes must be a sequence of ints, got {type(sizes).__name__}")
    if not sizes:
        raise ValueError("sizes must hold at least one size")
    for numel in sizes:
        check_int(numel, "sizes[i]")
    check_int(repeats, "repeats")
    return {numel: ring_allreduce_demo(rank, world_size, numel, repeats) for numel in sizes}
