"""The machine and the workloads in the build's language (gpukit_site.ext.provenance, about.py),
with the Chinese catalog the site ships (conf/locales), from gpukit's data and phrases."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from babel.messages.pofile import read_po

import gpukit

CATALOG = Path(__file__).resolve().parents[1] / "conf/locales/zh_CN/LC_MESSAGES/sphinx.po"


@pytest.fixture(scope="module")
def chinese() -> Callable[[str], str]:
    """The Chinese catalog as a translation function (a msgid it lacks stays English)."""
    with CATALOG.open("rb") as po:
        messages = read_po(po)
    return lambda text: m.string if (m := messages.get(text)) and m.string else text


def english(text: str) -> str:
    return text


@pytest.fixture
def cpu_machine() -> gpukit.MachineInfo:
    return gpukit.MachineInfo(
        gpus=(),
        cuda=None,
        cores=2,
        cpu_model="AMD EPYC 7B13",
        cpu_kernels="AVX2",
        kernel_settings={"ONEDNN_MAX_CPU_ISA": "SSE41"},
    )


def test_a_cpu_machine_in_chinese(cpu_machine: gpukit.MachineInfo, chinese) -> None:
    english = "CPU only, 2 cores (AMD EPYC 7B13, AVX2 kernels, ONEDNN_MAX_CPU_ISA=SSE41)"
    assert str(cpu_machine) == english
    assert cpu_machine.describe(translate=chinese) == (
        "仅 CPU，2 核（AMD EPYC 7B13，AVX2 核函数，ONEDNN_MAX_CPU_ISA=SSE41）"
    )


def test_a_one_core_machine_in_both_languages(cpu_machine, chinese) -> None:
    one_core = dataclasses.replace(cpu_machine, cores=1)
    assert str(one_core).startswith("CPU only, 1 core (")
    assert one_core.describe(translate=chinese).startswith("仅 CPU，1 核（")


def test_this_cpu_machine_with_its_kernel_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")
    monkeypatch.delenv("MKL_ENABLE_INSTRUCTIONS", raising=False)
    machine = gpukit.machine_info()
    assert machine.gpus == () and machine.cores == os.cpu_count()
    assert machine.cpu_kernels == torch.backends.cpu.get_cpu_capability()
    assert machine.kernel_settings == {"ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert gpukit.describe_machine() == str(machine)
    assert str(machine).startswith(f"CPU only, {os.cpu_count()} core")
    assert str(machine).endswith("kernels, ONEDNN_MAX_CPU_ISA=SSE41)")


def test_a_gpu_machine_in_chinese(monkeypatch: pytest.MonkeyPatch, chinese) -> None:
    names = ["NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(names))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: names[i])
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    machine = gpukit.machine_info()
    assert machine.gpus == (("NVIDIA H200", 2), ("NVIDIA H100 80GB HBM3", 1))
    assert gpukit.describe_machine() == "2 x NVIDIA H200 + 1 x NVIDIA H100 80GB HBM3 (CUDA 13.0)"
    assert machine.describe(translate=chinese) == (
        "2 块 NVIDIA H200 + 1 块 NVIDIA H100 80GB HBM3（CUDA 13.0）"
    )


@pytest.mark.parametrize("name", ["quick", "full"])
def test_the_workloads_in_chinese(name: str, chinese) -> None:
    profile = gpukit.PROFILES[name]
    for workload in (profile.lenet, profile.resnet):
        assert workload.describe(translate=english) == workload.describe()
    text = profile.resnet.describe(translate=chinese)
    n_train = profile.resnet.n_train or 60_000
    assert text.startswith(f"ResNet-18：{n_train:,} 张训练图像 / "), text
    assert f"批量 {profile.resnet.batch_size}，" in text and text.endswith(" 轮")
    assert "（预热 + 余弦衰减）" in text and "training" not in text and "epochs" not in text
    if profile.resnet.resize is not None:  # the quick profile's smaller images
        side = profile.resnet.resize
        assert f"张测试图像（{side} × {side} 像素），" in text, text
