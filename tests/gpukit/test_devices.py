"""gpukit.devices and gpukit.profiles: what the pages ask about the machine."""

from __future__ import annotations

import pytest
import torch

import gpukit
from gpukit import devices


def test_try_all_gpus_is_never_empty() -> None:
    expected = [gpukit.gpu(i) for i in range(gpukit.num_gpus())] or [gpukit.cpu()]
    assert gpukit.try_all_gpus() == expected


def test_try_gpu_falls_back_to_the_cpu_for_a_missing_gpu() -> None:
    assert gpukit.try_gpu(gpukit.num_gpus()) == gpukit.cpu()


def test_without_gpus_everything_lands_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert gpukit.try_gpu() == gpukit.cpu()
    assert gpukit.try_all_gpus() == [gpukit.cpu()]
    assert gpukit.replicas(3) == [gpukit.cpu()] * 3
    assert gpukit.describe_machine().startswith("CPU only, ")


def test_a_cpu_machine_is_named_by_what_changes_its_results(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(devices.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("MKL_ENABLE_INSTRUCTIONS", raising=False)
    kernels = torch.backends.cpu.get_cpu_capability()
    model = gpukit.machine_info().cpu_model  # /proc/cpuinfo's name, e.g. "AMD EPYC 7B13"
    assert model and model != "unknown CPU"
    assert gpukit.describe_machine() == f"CPU only, 2 cores ({model}, {kernels} kernels)"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")
    assert gpukit.describe_machine().endswith(f"{kernels} kernels, ONEDNN_MAX_CPU_ISA=SSE41)")


def test_with_two_gpus_replicas_take_real_gpus_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert gpukit.try_gpu(1) == gpukit.gpu(1)
    assert gpukit.replicas(3) == [gpukit.gpu(0), gpukit.gpu(1), gpukit.cpu()]
    assert gpukit.describe_devices(gpukit.replicas(2)) == "2 devices: cuda:0, cuda:1"


def test_a_machine_with_different_gpus_names_each_model(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["NVIDIA A100-SXM4-40GB", "Tesla T4", "NVIDIA A100-SXM4-40GB"]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: names[i])
    assert gpukit.describe_machine().startswith("2 x NVIDIA A100-SXM4-40GB + 1 x Tesla T4 (CUDA ")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H200")
    assert gpukit.describe_machine().startswith("3 x NVIDIA H200 (CUDA ")


def test_describe_devices_says_when_cpu_replicas_stand_in() -> None:
    text = gpukit.describe_devices([gpukit.cpu(), gpukit.cpu()])
    assert "CPU replicas standing in for GPUs" in text


def test_describe_device_names_the_cpu_and_its_threads() -> None:
    text = gpukit.describe_device("cpu")
    assert text.startswith("cpu: ") and f"{torch.get_num_threads()} PyTorch thread" in text


def test_device_report_without_nvidia_smi_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda name: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    report = gpukit.device_report()
    assert report.startswith("no GPU: CPU only") and "\n" not in report
    assert "not found" not in report


def test_existing_device_rejects_devices_the_machine_lacks(monkeypatch) -> None:
    assert gpukit.existing_device("cpu") == gpukit.cpu()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device is cuda:0, but CUDA is not available"):
        gpukit.existing_device("cuda:0")
    with pytest.raises(ValueError, match="device must be a CPU or a CUDA device"):
        gpukit.existing_device("meta")


@pytest.mark.parametrize("name", ["quick", "full"])
def test_profile_comes_from_the_environment(monkeypatch, name: str) -> None:
    monkeypatch.setenv("GPUKIT_PROFILE", name)
    assert gpukit.current_profile().name == name


def test_unknown_profile_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUKIT_PROFILE", "fast")
    with pytest.raises(ValueError, match=r"GPUKIT_PROFILE must be one of \['full', 'quick'\]"):
        gpukit.current_profile()


def test_default_profile_follows_the_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUKIT_PROFILE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpukit.current_profile().name == "quick"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert gpukit.current_profile().name == "full"
