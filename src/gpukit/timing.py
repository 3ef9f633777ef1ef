"""Timing code that may run on a GPU: :class:`Timer`, :class:`Benchmark`, :func:`format_seconds`.

``y = x @ x`` on a GPU returns as soon as the work is *queued*. D2L's ``Timer`` and
``Benchmark`` read the wall clock right away, so around GPU work they time how fast Python
queues kernels unless the code synchronizes. These keep D2L's names but wait for the GPU
before reading any clock, at the start and at the end: with ``device=None`` they synchronize
every GPU PyTorch has used, then read the wall clock; with a CUDA device they record CUDA
events on its current stream (the GPU's time between the two, idle gaps included).
"""

from __future__ import annotations

import itertools
import statistics
import time

import torch

from gpukit._checks import check_number, check_type
from gpukit.devices import existing_device

__all__ = ["Benchmark", "Timer", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """Format a duration the way gpukit prints every time (tests mask ``\\d+\\.\\d+ sec``).

    Example:
        >>> format_seconds(0.123456)
        '0.1235 sec'
    """
    return f"{check_number(seconds, 'seconds', zero=True):.4f} sec"


def _synchronize_all() -> None:
    # Only GPUs this process has used can have queued work. Synchronizing any other one would
    # create a CUDA context on it (hundreds of MiB), on every GPU of the machine and in every
    # DDP process; and a CPU-only timing must not pay for (and be distorted by) CUDA start-up.
    # The allocator's statistics are read without touching a GPU.
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        current = torch.cuda.current_device()
        for i in range(torch.cuda.device_count()):
            if i == current or torch.cuda.memory_reserved(i) > 0:
                torch.cuda.synchronize(i)


class Timer:
    """Record several running times (D2L's ``Timer``, but waiting for the GPU; see above).

    The timer starts when it is created; each :meth:`stop` appends the seconds since the last
    :meth:`start` to ``times``. ``device``: ``None`` or the CPU for the wall clock, a CUDA
    device for CUDA events on its current stream (not covering other devices or streams).

    Example:
        >>> timer = Timer()
        >>> y = torch.ones(100, 100) @ torch.ones(100, 100)
        >>> timer.stop() == timer.times[-1]
        True
        >>> if torch.cuda.is_available():
        ...     gpu_timer = Timer(device="cuda:0")
        ...     z = torch.ones(100, 100, device="cuda:0").sum()
        ...     assert gpu_timer.stop() >= 0
    """

    def __init__(self, device: str | torch.device | None = None) -> None:
        dev = None if device is None else existing_device(device)
        self.device = dev if dev is not None and dev.type == "cuda" else None
        self.times: list[float] = []
        self.start()

    def start(self) -> None:
        """Start (or restart) the timer."""
        if self.device is None:
            _synchronize_all()  # work queued before start() must not count
            self._tik = time.perf_counter()
        else:
            self._start_event = torch.cuda.Event(enable_timing=True)
            self._start_event.record(torch.cuda.current_stream(self.device))

    def stop(self) -> float:
        """Wait for queued GPU work, record the seconds since :meth:`start`, and return them."""
        if self.device is None:
            _synchronize_all()
            seconds = time.perf_counter() - self._tik
        else:
            end = torch.cuda.Event(enable_timing=True)
            end.record(torch.cuda.current_stream(self.device))
            end.synchronize()
            seconds = self._start_event.elapsed_time(end) / 1000  # CUDA reports milliseconds
        self.times.append(seconds)
        return seconds

    def avg(self) -> float:
        """Return the average of the recorded times (an error before the first :meth:`stop`)."""
        return statistics.fmean(self.times)

    def sum(self) -> float:
        """Return the sum of the recorded times.

        Example:
            >>> timer = Timer()
            >>> timer.times = [1.0, 2.0, 6.0]
            >>> timer.avg(), timer.sum()
            (3.0, 9.0)
        """
        return sum(self.times)

    def cumsum(self) -> list[float]:
        """Return the accumulated time after each recorded time (D2L's ``Timer.cumsum``).

        D2L plots these against the work done so far, e.g. examples seen after each epoch.

        Example:
            >>> timer = Timer()
            >>> timer.times = [1.0, 2.0, 6.0]
            >>> timer.cumsum()
            [1.0, 3.0, 9.0]
        """
        return list(itertools.accumulate(self.times))


class Benchmark:
    """Time a ``with`` block and print ``"<description>: 0.1234 sec"`` (D2L's ``Benchmark``).

    Unlike D2L's, the time includes GPU work queued inside the block: a :class:`Timer` (``timer``,
    made with ``device``) measures it. A block that raises prints nothing.

    Example:
        >>> with Benchmark("matmul"):  # doctest: +ELLIPSIS
        ...     y = torch.ones(200, 200) @ torch.ones(200, 200)
        matmul: ... sec
    """

    def __init__(self, description: str = "Done", device: str | torch.device | None = None):
        check_type(description, "description", str, "a str")
        self.description = description
        self.timer = Timer(device)

    def __enter__(self) -> Benchmark:
        self.timer.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        seconds = self.timer.stop()
        if exc_type is None:  # a failed block has no meaningful time
            print(f"{self.description}: {format_seconds(seconds)}")
