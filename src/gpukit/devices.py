"""Which devices this machine has, how to ask for one safely, and how to name them.

The helpers keep D2L's names (``cpu``, ``gpu``, ``num_gpus``, ``try_gpu``, ``try_all_gpus``) so
that ``import gpukit as d2l`` runs D2L code, with one deliberate difference: apart from
``gpu(i)``, which only names a device, nothing here hands back a device that does not exist,
so the same code runs on a laptop without a GPU, on one GPU and on many.

Within gpukit (not in ``__all__``, not for pages): ``device_or_gpu`` and ``existing_devices``,
the checks of a device argument and of a list of them that the other modules share.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gpukit._checks import check_int, check_type

__all__ = [
    "MachineInfo",
    "cpu",
    "describe_device",
    "describe_devices",
    "describe_machine",
    "device_report",
    "existing_device",
    "gpu",
    "machine_info",
    "num_gpus",
    "replicas",
    "try_all_gpus",
    "try_gpu",
]

# Environment variables that lower the instruction set of oneDNN's and MKL's CPU kernels (ATen's
# own choice, ATEN_CPU_CAPABILITY, shows in torch.backends.cpu.get_cpu_capability()).
KERNEL_SETTINGS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def _check_index(i: object) -> int:
    return check_int(i, "i", 0, "a GPU index such as 0 or 1: GPUs are numbered from 0")


def cpu() -> torch.device:
    """Return the CPU device.

    Example:
        >>> cpu()
        device(type='cpu')
    """
    return torch.device("cpu")


def gpu(i: int = 0) -> torch.device:
    """Return GPU ``i`` as a device, whether or not it exists (:func:`try_gpu` checks).

    Example:
        >>> gpu(1)
        device(type='cuda', index=1)
    """
    return torch.device("cuda", _check_index(i))


def num_gpus() -> int:
    """Return how many CUDA GPUs PyTorch can use (0 on a CPU-only machine).

    Example:
        >>> num_gpus() == torch.cuda.device_count()
        True
    """
    return torch.cuda.device_count()


def try_gpu(i: int = 0) -> torch.device:
    """Return GPU ``i`` if it exists, otherwise the CPU.

    Example:
        >>> try_gpu(1000)  # no machine has 1001 GPUs
        device(type='cpu')
    """
    return torch.device("cuda", i) if _check_index(i) < num_gpus() else cpu()


def try_all_gpus() -> list[torch.device]:
    """Return every GPU, or ``[cpu()]`` when there is none (never an empty list).

    Example:
        >>> len(try_all_gpus()) == max(num_gpus(), 1)
        True
    """
    return [torch.device("cuda", i) for i in range(num_gpus())] or [cpu()]


def replicas(n: int) -> list[torch.device]:
    """Return ``n`` devices for code written for ``n`` GPUs: real GPUs first, then CPU copies.

    A page that wants two GPUs still runs its code with one GPU (``[cuda:0, cpu]``) or none
    (``[cpu, cpu]``); :func:`describe_devices` says which it got.

    Example:
        >>> if num_gpus() == 0:
        ...     print(replicas(2))
        [device(type='cpu'), device(type='cpu')]
    """
    check_int(n, "n", 1, "how many devices")
    gpus = [torch.device("cuda", i) for i in range(min(n, num_gpus()))]
    return gpus + [cpu()] * (n - len(gpus))


def existing_device(device: object) -> torch.device:
    """Return ``device`` as a ``torch.device`` if it is the CPU or a GPU this machine has.

    This is the check of every ``device`` argument of gpukit. ``'cuda'`` becomes the current
    GPU with its index, so that devices compare equal.

    Example:
        >>> existing_device("cpu")
        device(type='cpu')
    """
    check_type(device, "device", str | torch.device, "a str such as 'cuda:0' or a torch.device")
    try:
        dev = torch.device(device)  # type: ignore[arg-type]
    except RuntimeError as err:
        raise ValueError(f"device must name a device such as 'cpu' or 'cuda:0': {err}") from None
    if dev.type == "cpu":
        return cpu()
    if dev.type != "cuda":
        raise ValueError(f"device must be a CPU or a CUDA device, got {dev}")
    if not torch.cuda.is_available():
        raise ValueError(f"device is {dev}, but CUDA is not available on this machine")
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= num_gpus():
        raise ValueError(f"device is {dev}, but this machine has {num_gpus()} GPU(s)")
    return torch.device("cuda", index)


def device_or_gpu(device: object) -> torch.device:
    """``device`` checked by :func:`existing_device`; ``None``: :func:`try_gpu`."""
    return try_gpu() if device is None else existing_device(device)


def existing_devices(devices: object) -> list[torch.device]:
    """The check of every list of devices: each an :func:`existing_device`; one may repeat."""
    if isinstance(devices, str | torch.device) or not isinstance(devices, Sequence):
        raise TypeError("devices must be a list of devices, e.g. [torch.device('cpu')]")
    if not devices:
        raise ValueError("devices must not be empty")
    return [existing_device(d) for d in devices]


def describe_devices(devices: list[torch.device]) -> str:
    """Say which devices a computation really used.

    Example:
        >>> describe_devices([cpu(), cpu()])
        '2 devices: cpu, cpu (CPU replicas standing in for GPUs)'
    """
    if not isinstance(devices, list | tuple) or not devices:
        raise ValueError("devices must be a non-empty list of torch.device")
    if not all(isinstance(d, torch.device) for d in devices):
        raise TypeError("devices must contain only torch.device objects")
    text = f"{len(devices)} device{'s' if len(devices) > 1 else ''}: "
    text += ", ".join(str(d) for d in devices)
    if len(devices) > 1 and any(d.type == "cpu" for d in devices):
        text += " (CPU replicas standing in for GPUs)"
    return text


def _cpu_model() -> str:
    """The processor's name as the operating system reports it, e.g. ``'AMD EPYC 7B13'``."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        cpuinfo = ""
    found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    return " ".join(found.group(1).split()) if found else platform.processor() or "unknown CPU"


def _cores() -> str:
    cores = os.cpu_count() or 1
    return f"{cores} core{'s' if cores != 1 else ''}"


def describe_device(device: str | torch.device | None = None) -> str:
    """Say in one line which device measurements run on (``None``: :func:`try_gpu`): a GPU's
    name, memory, compute capability and streaming multiprocessors (SMs); the CPU's model, cores
    and PyTorch's threads.

    Example:
        >>> describe_device("cpu").startswith("cpu: ")
        True
    """
    dev = device_or_gpu(device)
    if dev.type == "cpu":
        return f"cpu: {_cpu_model()}, {_cores()}, {torch.get_num_threads()} PyTorch thread(s)"
    props = torch.cuda.get_device_properties(dev)
    return (
        f"{dev}: {props.name}, {props.total_memory / 2**30:.1f} GiB, compute capability "
        f"{props.major}.{props.minor}, {props.multi_processor_count} SMs"
    )


@dataclass(frozen=True)
class MachineInfo:
    """This machine's compute devices, as :func:`machine_info` finds them.

    Attributes:
        gpus: ``(model, count)`` for each GPU model, in device order; empty without a GPU.
        cuda: the CUDA version PyTorch was built with (``None`` for a CPU-only PyTorch).
        cores: the CPU's logical cores.
        cpu_model: the processor's name, e.g. ``"AMD EPYC 7B13"``.
        cpu_kernels: the instruction set of ATen's CPU kernels, e.g. ``"AVX2"``.
        kernel_settings: the environment's settings that lower oneDNN's and MKL's kernels,
            e.g. ``{"ONEDNN_MAX_CPU_ISA": "SSE41"}``.

    Example:
        >>> info = MachineInfo(gpus=(("NVIDIA H200", 2),), cuda="13.0", cores=64,
        ...                    cpu_model="x", cpu_kernels="AVX512")
        >>> print(info)
        2 x NVIDIA H200 (CUDA 13.0)
        >>> print(MachineInfo(gpus=(), cuda=None, cores=2, cpu_model="AMD EPYC 7B13",
        ...                   cpu_kernels="AVX2", kernel_settings={"ONEDNN_MAX_CPU_ISA": "SSE41"}))
        CPU only, 2 cores (AMD EPYC 7B13, AVX2 kernels, ONEDNN_MAX_CPU_ISA=SSE41)
    """

    gpus: tuple[tuple[str, int], ...]
    cuda: str | None
    cores: int
    cpu_model: str
    cpu_kernels: str
    kernel_settings: dict[str, str] = field(default_factory=dict)

    def describe(self, translate: Callable[[str], str] = str) -> str:
        """The machine in one phrase; ``translate`` maps each English phrase to the reader's
        language (the site's build passes its gettext). Names and settings stay as they are."""
        if self.gpus:
            gpus = " + ".join(
                translate("{n} x {name}").format(n=count, name=name) for name, count in self.gpus
            )
            return translate("{gpus} (CUDA {cuda})").format(gpus=gpus, cuda=self.cuda)
        details = [self.cpu_model, translate("{isa} kernels").format(isa=self.cpu_kernels)]
        details += [f"{name}={value}" for name, value in self.kernel_settings.items()]
        template = (
            "CPU only, {cores} cores ({details})"
            if self.cores != 1
            else ("CPU only, {cores} core ({details})")
        )
        return translate(template).format(cores=self.cores, details=translate(", ").join(details))

    def __str__(self) -> str:
        return self.describe()


def machine_info() -> MachineInfo:
    """This machine's compute devices as data: GPU models and CUDA, or what changes a CPU's
    results (the same training ends at other accuracies under other kernels).

    Example:
        >>> info = machine_info()
        >>> len(info.gpus) > 0 if num_gpus() else info.cores >= 1
        True
    """
    n = num_gpus()
    return MachineInfo(
        gpus=tuple(Counter(torch.cuda.get_device_name(i) for i in range(n)).items()),
        cuda=torch.version.cuda,
        cores=os.cpu_count() or 1,
        cpu_model=_cpu_model(),
        cpu_kernels=torch.backends.cpu.get_cpu_capability(),
        kernel_settings={name: os.environ[name] for name in KERNEL_SETTINGS if name in os.environ},
    )


def describe_machine() -> str:
    """Name this machine's compute devices in one phrase, e.g. ``"2 x NVIDIA H200 (CUDA 13.0)"``:
    :func:`machine_info`'s sentence, for pages.

    Without a GPU it names what changes a CPU's results: ``"CPU only, 2 cores (AMD EPYC 7B13,
    AVX2 kernels)"``, plus any setting such as ``ONEDNN_MAX_CPU_ISA=SSE41``.

    Example:
        >>> text = describe_machine()
        >>> text.startswith("CPU only") if num_gpus() == 0 else "CUDA" in text
        True
    """
    return machine_info().describe()


def device_report() -> str:
    """Describe the devices: ``nvidia-smi``'s output where it runs, else one line.

    Example:
        >>> report = device_report()
        >>> "GPU" in report or "NVIDIA" in report
        True
    """
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        done = subprocess.run([smi], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0:
            return done.stdout.rstrip()
    prefix = "no GPU" if num_gpus() == 0 else "no nvidia-smi"
    return f"{prefix}: {describe_machine()}, torch {torch.__version__}"
