"""Timing code that may run on a GPU: :class:`Timer`, :class:`Benchmark`, :func:`format_seconds`.

CUDA runs asynchronously: a call such as ``y = x @ x`` on a GPU returns as soon as the work is
*queued*, long before it is *done*. D2L's ``Timer`` and ``Benchmark`` read the wall clock right
away, so around GPU work they measure how fast Python queues kernels unless the code inside
synchronizes (D2L's section on asynchronous computation shows both, adding
``torch.cuda.synchronize`` at the end of the block). The classes here keep D2L's names and
methods but wait for the GPU before reading any clock, at the start as well as at the end:

* with ``device=None`` (the default) they use the wall clock (:func:`time.perf_counter`) and
  first synchronize every GPU that PyTorch has started using;
* with a CUDA device they record CUDA events on that device's current stream and wait for the
  stop event, so the time is what the GPU itself measured between the two points.

Every time gpukit prints has the form ``0.1234 sec`` (see :func:`format_seconds`), so the
outputs of executed pages can be compared with times masked by the regex ``\\d+\\.\\d+ sec``.
"""

from __future__ import annotations

import math
import time
from numbers import Real
from types import TracebackType

import torch

from gpukit.devices import existing_device

__all__ = ["Benchmark", "Timer", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """Format a duration the way every printed time in gpukit looks: ``'0.1234 sec'``.

    Args:
        seconds: a finite, non-negative number of seconds.

    Returns:
        The duration with four decimals followed by ``" sec"``.

    Raises:
        TypeError: if ``seconds`` is not a real number.
        ValueError: if ``seconds`` is negative, infinite or NaN.

    Example:
        >>> format_seconds(0.123456)
        '0.1235 sec'
        >>> format_seconds(12)
        '12.0000 sec'
    """
    # bool is an int subclass, but format_seconds(True) is certainly a mistake.
    if isinstance(seconds, bool) or not isinstance(seconds, Real):
        raise TypeError(f"seconds must be a real number such as 0.25, got {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
    return f"{seconds:.4f} sec"


def _check_device(device: object) -> torch.device | None:
    """``None`` or the CPU: wall-clock timing (returns None); a GPU: CUDA events on it."""
    if device is None:
        return None
    dev = existing_device(device)
    return None if dev.type == "cpu" else dev


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
    """Record several running times (D2L's ``Timer``, but correct for GPU work).

    The timer starts when it is created. Each :meth:`stop` records the seconds since the last
    :meth:`start` in :attr:`times`.

    Unlike D2L, which reads the clock while GPU work may still be queued, this timer waits for
    the GPU first (see the module documentation), so its numbers include the GPU's work.

    Args:
        device: ``None`` or a CPU device: wall clock, after synchronizing every GPU in use.
            A CUDA device (``'cuda:0'``, ``torch.device('cuda', 1)``): CUDA events recorded on
            that device's current stream; work on other devices or streams is not covered.

    Attributes:
        times: the recorded durations in seconds, oldest first.

    Example:
        >>> timer = Timer()
        >>> x = torch.ones(100, 100)
        >>> y = x @ x
        >>> elapsed = timer.stop()
        >>> elapsed >= 0 and timer.times == [elapsed]
        True
        >>> if torch.cuda.is_available():
        ...     gpu_timer = Timer(device="cuda:0")
        ...     z = x.cuda() @ x.cuda()
        ...     assert gpu_timer.stop() >= 0
    """

    def __init__(self, device: str | torch.device | None = None) -> None:
        self.device = _check_device(device)
        self.times: list[float] = []
        self._tik = 0.0
        self._start_event: torch.cuda.Event | None = None
        self.start()

    def start(self) -> None:
        """Start (or restart) the timer.

        Example:
            >>> timer = Timer()
            >>> timer.start()
            >>> timer.stop() >= 0
            True
        """
        if self.device is None:
            # Work queued before start() must not be counted in this interval.
            _synchronize_all()
            self._tik = time.perf_counter()
        else:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            self._start_event = event

    def stop(self) -> float:
        """Wait for queued GPU work, record the seconds since :meth:`start`, and return them.

        Example:
            >>> timer = Timer()
            >>> seconds = timer.stop()
            >>> timer.times[-1] == seconds
            True
        """
        if self.device is None:
            _synchronize_all()
            seconds = time.perf_counter() - self._tik
        else:
            assert self._start_event is not None  # start() ran in __init__
            end = torch.cuda.Event(enable_timing=True)
            end.record(torch.cuda.current_stream(self.device))
            end.synchronize()
            seconds = self._start_event.elapsed_time(end) / 1000  # CUDA reports milliseconds
        self.times.append(seconds)
        return seconds

    def _require_times(self, what: str) -> None:
        if not self.times:
            raise RuntimeError(f"Timer.{what}() needs at least one time: call stop() first")

    def avg(self) -> float:
        """Return the average of the recorded times.

        Example:
            >>> timer = Timer()
            >>> timer.times = [1.0, 2.0, 6.0]
            >>> timer.avg()
            3.0
        """
        self._require_times("avg")
        return sum(self.times) / len(self.times)

    def sum(self) -> float:
        """Return the sum of the recorded times.

        Example:
            >>> timer = Timer()
            >>> timer.times = [1.0, 2.0, 6.0]
            >>> timer.sum()
            9.0
        """
        return sum(self.times)

    def cumsum(self) -> list[float]:
        """Return the running totals of the recorded times.

        Example:
            >>> timer = Timer()
            >>> timer.times = [1.0, 2.0, 6.0]
            >>> timer.cumsum()
            [1.0, 3.0, 9.0]
        """
        totals: list[float] = []
        running = 0.0
        for t in self.times:
            running += t
            totals.append(running)
        return totals


class Benchmark:
    """Time a ``with`` block and print ``"<description>: 0.1234 sec"`` (D2L's ``Benchmark``).

    Unlike D2L, the time includes GPU work queued inside the block: the clock is read only
    after the GPU has finished (see :class:`Timer`, which does the measuring).

    Args:
        description: the text printed before the time.
        device: passed to :class:`Timer`.

    Attributes:
        timer: the :class:`Timer` used; ``timer.times[-1]`` is the last measured time.

    Example:
        >>> x = torch.ones(200, 200)
        >>> with Benchmark("matmul"):  # doctest: +ELLIPSIS
        ...     y = x @ x
        matmul: ... sec
        >>> if torch.cuda.is_available():  # doctest: +ELLIPSIS
        ...     with Benchmark("GPU matmul", device="cuda:0"):
        ...         z = x.cuda() @ x.cuda()
        ... else:
        ...     print("GPU matmul: 0.0001 sec")  # what it prints on a GPU
        GPU matmul: ... sec
    """

    def __init__(self, description: str = "Done", device: str | torch.device | None = None):
        if not isinstance(description, str):
            raise TypeError(f"description must be a str, got {type(description).__name__}")
        self.description = description
        self.timer = Timer(device)

    def __enter__(self) -> Benchmark:
        self.timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        seconds = self.timer.stop()
        # A failed block has no meaningful time; printing one would hide the error's output.
        if exc_type is None:
            print(f"{self.description}: {format_seconds(seconds)}")
