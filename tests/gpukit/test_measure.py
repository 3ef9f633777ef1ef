"""Tests of gpukit.measure: results are labelled honestly, arguments are checked."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest
import torch

from gpukit.measure import (
    PEAK_TFLOPS,
    Measurement,
    copy_bandwidth,
    float32_matmul,
    launch_latency,
    matmul_dtypes,
    matmul_throughput,
    peak_tflops,
    time_op,
)


# -- Measurement ----------------------------------------------------------------------------
def test_measurement_text_names_device_time_and_rate():
    m = Measurement(
        device="cpu (2 threads)",
        what="host memory copy, 1 MiB",
        count=4,
        seconds=0.5,
        value=8.4,
        unit="GB/s",
    )
    assert str(m) == "cpu (2 threads): host memory copy, 1 MiB\n  4 in 0.5000 sec -> 8.4 GB/s"
    # A short time in µs: "0.0000 sec" beside a rate read as a contradiction.
    assert str(dataclasses.replace(m, seconds=3.5e-5)).endswith("4 in 35.0 µs -> 8.4 GB/s")


def test_measurement_text_with_peak():
    m = Measurement(
        device="cuda:0 (NVIDIA H200)",
        what="fp32 matmul 8192x8192",
        count=20,
        seconds=0.4,
        value=50.25,
        unit="TFLOP/s",
        peak=67.0,
    )
    assert str(m).endswith(" -> 50.2 TFLOP/s (75% of 67 peak)")


def test_measurement_is_frozen():
    m = Measurement(device="cpu", what="x", count=1, seconds=1.0, value=1.0, unit="GB/s")
    with pytest.raises(AttributeError):
        m.value = 2.0  # type: ignore[misc]


# -- Peaks ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [
        ("NVIDIA H200", "fp32", 67.0),
        ("NVIDIA H200", "bf16", 989.5),
        ("NVIDIA H100 80GB HBM3", "tf32", 494.5),
        ("NVIDIA H100 PCIe", "fp32", 51.0),
        ("NVIDIA H100 PCIe", "bf16", 756.5),
        ("NVIDIA A100-SXM4-80GB", "tf32", 156.0),
        ("NVIDIA A100-PCIE-40GB", "bf16", 312.0),
        ("NVIDIA A100 80GB PCIe", "fp32", 19.5),
        ("Tesla V100-SXM2-16GB", "fp32", 15.7),
        ("Tesla V100-PCIE-32GB", "fp16", 112.0),
        ("NVIDIA GeForce RTX 4090", "bf16", 165.2),
        ("V100 SXM2", "fp32", 15.7),  # a key of PEAK_TFLOPS works too
        ("NVIDIA B200", "bf16", 2250.0),
        ("NVIDIA B300 SXM6 AC", "tf32", 1125.0),
        ("NVIDIA GB200", "bf16", 2500.0),  # not the B200's peak: "GB200" contains "B200"
    ],
)
def test_peak_tflops_known_gpus(name, dtype, expected):
    assert peak_tflops(name, dtype) == expected


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("NVIDIA GB300", "bf16"),  # not listed: no B300 peak for it
        ("NVIDIA H200 NVL", "fp32"),  # other clocks and power: other peaks, not listed
        ("NVIDIA H100 NVL", "bf16"),
        ("NVIDIA GeForce RTX 4090 D", "fp32"),
        ("NVIDIA GeForce RTX 3090", "fp32"),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "bf16"),  # a seventh of the GPU
        ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "tf32"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "fp32"),
        ("Tesla V100-SXM2-16GB", "tf32"),  # no TF32 tensor cores before Ampere
        ("Tesla V100-SXM2-16GB", "bf16"),
        ("Intel(R) Xeon(R) Processor", "fp32"),
    ],
)
def test_peak_tflops_unknown_is_none(name, dtype):
    assert peak_tflops(name, dtype) is None


def test_peak_table_is_consistent():
    for model, peaks in PEAK_TFLOPS.items():
        assert peaks["fp32"] > 0, model
        assert set(peaks) <= {"fp32", "tf32", "bf16", "fp16"}, model
        # Tensor-core formats are never slower than plain fp32 on the same GPU.
        assert all(value >= peaks["fp32"] for value in peaks.values()), model
        assert peak_tflops(model, "fp32") == peaks["fp32"]


@pytest.mark.parametrize(("device", "error"), [(0, TypeError), ("meta", ValueError)])
def test_device_argument_is_checked(device, error):
    with pytest.raises(error, match=r"^device must"):
        launch_latency(device, repeats=1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only message")
def test_cuda_device_without_cuda_is_refused():
    with pytest.raises(ValueError, match="CUDA is not available"):
        matmul_throughput(8, "cuda:0")


def test_default_device_is_try_gpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert launch_latency(repeats=5).device.startswith(expected)


# -- Timing ---------------------------------------------------------------------------------
def test_one_slow_round_does_not_move_the_median():
    calls = []

    def op():
        calls.append(None)
        if len(calls) == 7:  # the 4th of 5 rounds of two calls: another program got the CPU
            time.sleep(0.2)

    total, per_call = time_op(op, "cpu", repeats=10, warmup=1)
    assert len(calls) == 11
    assert total >= 0.2
    assert per_call < 0.05


def test_fewer_calls_than_rounds():
    calls = []
    total, per_call = time_op(lambda: calls.append(1), repeats=3, warmup=0)
    assert len(calls) == 3 and total >= 0 and per_call >= 0


def test_time_op_checks_arguments():
    with pytest.raises(TypeError, match="op"):
        time_op(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="repeats"):
        time_op(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        time_op(lambda: None, warmup=-1)
    with pytest.raises(TypeError, match="device"):
        time_op(lambda: None, device=3)  # type: ignore[arg-type]


@pytest.mark.gpus(1)
def test_time_op_on_gpu_includes_queued_work():
    a = torch.randn(2048, 2048, device="cuda:0")
    total, per_call = time_op(lambda: a @ a, "cuda:0", repeats=5)
    assert per_call > 1e-6 and total >= per_call


# -- Copy bandwidth -------------------------------------------------------------------------
def test_host_memory_copy_on_cpu():
    m = copy_bandwidth(2**16, "cpu", direction="within_device", repeats=3)
    assert m.device.startswith("cpu (")
    assert m.what == "host memory copy, 64.0 KiB (CPU only: no host<->device link)"
    assert m.count == 3 and m.unit == "GB/s" and m.peak is None
    assert m.value > 0


@pytest.mark.parametrize("direction", ["host_to_device", "device_to_host"])
def test_cpu_has_no_host_device_link(direction):
    with pytest.raises(ValueError, match="needs a GPU: the CPU has no host<->device link"):
        copy_bandwidth(1024, "cpu", direction=direction)


def test_pinned_needs_a_gpu():
    with pytest.raises(ValueError, match="pinned"):
        copy_bandwidth(1024, "cpu", direction="within_device", pinned=True)


def test_copy_bandwidth_checks_arguments():
    with pytest.raises(TypeError, match="nbytes"):
        copy_bandwidth(1024.0, "cpu", direction="within_device")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nbytes"):
        copy_bandwidth(True, "cpu", direction="within_device")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nbytes"):
        copy_bandwidth(0, "cpu", direction="within_device")
    with pytest.raises(ValueError, match="repeats"):
        copy_bandwidth(1024, "cpu", direction="within_device", repeats=0)
    with pytest.raises(ValueError, match="direction"):
        copy_bandwidth(1024, "cpu", direction="sideways")
    with pytest.raises(ValueError, match="direction"):
        copy_bandwidth(1024, "cpu", direction=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pinned"):
        copy_bandwidth(1024, "cpu", direction="within_device", pinned=1)  # type: ignore[arg-type]


@pytest.mark.gpus(1)
def test_copy_bandwidth_on_gpu():
    whats = [
        copy_bandwidth(2**20, "cuda:0", direction=direction, pinned=pinned, repeats=2).what
        for direction in ("host_to_device", "device_to_host")
        for pinned in (False, True)
    ]
    assert whats == [
        "host->device copy, pageable memory, 1.0 MiB",
        "host->device copy, pinned memory, 1.0 MiB",
        "device->host copy, pageable memory, 1.0 MiB",
        "device->host copy, pinned memory, 1.0 MiB",
    ]
    m = copy_bandwidth(3000, "cuda:0", direction="within_device", repeats=2)
    assert m.what == "device->device copy (GPU memory), 2.9 KiB" and m.value > 0
    assert m.device.startswith("cuda:0 (")


# -- Launch latency -------------------------------------------------------------------------
@pytest.mark.parametrize("synchronize_each", [False, True])
def test_launch_latency_on_cpu(synchronize_each):
    m = launch_latency("cpu", repeats=50, synchronize_each=synchronize_each)
    assert m.unit == "µs per op" and m.count == 50
    assert "CPU" in m.what
    assert 0 < m.value < m.seconds * 1e6


def test_launch_latency_checks_arguments():
    with pytest.raises(ValueError, match="repeats"):
        launch_latency("cpu", repeats=-1)
    with pytest.raises(TypeError, match="synchronize_each"):
        launch_latency("cpu", synchronize_each="yes")  # type: ignore[arg-type]


@pytest.mark.gpus(1)
def test_launch_latency_on_gpu():
    m = launch_latency("cuda:0", repeats=100, synchronize_each=True)
    assert m.what == "tiny kernel, synchronize after each"
    assert 0 < m.value < 10_000


# -- Matmul throughput ----------------------------------------------------------------------
def test_matmul_on_cpu_reports_gflops_without_peak():
    m = matmul_throughput(64, "cpu", repeats=2)
    assert (m.what, m.unit, m.peak, m.count) == ("fp32 matmul 64x64", "GFLOP/s", None, 2)
    assert math.isfinite(m.value) and m.value > 0


def test_matmul_bf16_runs_on_cpu():
    assert matmul_throughput(32, "cpu", dtype="bf16", repeats=1).what == "bf16 matmul 32x32"


def test_matmul_leaves_rng_and_precision_settings_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    cuda_mode = torch.backends.cuda.matmul.fp32_precision
    cpu_mode = torch.backends.mkldnn.matmul.fp32_precision
    torch.manual_seed(123)
    matmul_throughput(16, "cpu", repeats=1)
    assert torch.equal(torch.rand(3), expected)
    assert torch.backends.cuda.matmul.fp32_precision == cuda_mode
    assert torch.backends.mkldnn.matmul.fp32_precision == cpu_mode


def test_float32_matmul_modes_are_restored_after_an_error():
    before = torch.backends.cuda.matmul.fp32_precision
    with pytest.raises(RuntimeError), float32_matmul("tf32"):
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
        raise RuntimeError("boom")
    assert torch.backends.cuda.matmul.fp32_precision == before


@pytest.fixture
def legacy_precision():
    """Run a test under the reader's float32 settings, and give them back afterwards."""
    saved = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(saved)
    torch.backends.cuda.matmul.fp32_precision = "none"
    torch.backends.mkldnn.matmul.fp32_precision = "none"


def _reader_settings(start: str) -> None:
    if start == "high":  # what the hardware page recommends for TF32
        torch.set_float32_matmul_precision("high")
    elif start == "new API only":  # mixes the APIs: PyTorch refuses to read the legacy flag
        torch.backends.cuda.matmul.fp32_precision = "tf32"


def _backend_modes() -> tuple[str, str]:
    return torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision


@pytest.mark.parametrize("start", ["default", "high", "new API only"])
@pytest.mark.parametrize("dtype", ["fp32", "tf32"])
@pytest.mark.usefixtures("legacy_precision")
def test_float32_matmul_settings_agree_inside_and_come_back(start, dtype):
    # cuBLAS reads the legacy flag for float32 matmuls and Inductor when it compiles: inside,
    # it must be readable (the two APIs agree) and mean the format measured (issue 166387).
    _reader_settings(start)
    before = _backend_modes()
    with float32_matmul(dtype):
        assert torch.backends.cuda.matmul.allow_tf32 == (dtype == "tf32")
        assert torch.get_float32_matmul_precision() == ("high" if dtype == "tf32" else "highest")
    assert _backend_modes() == before
    if start != "new API only":
        assert torch.backends.cuda.matmul.allow_tf32 == (start == "high")


@pytest.mark.usefixtures("legacy_precision")
def test_matmul_after_set_float32_matmul_precision_leaves_it_readable():
    torch.set_float32_matmul_precision("high")
    matmul_throughput(16, "cpu", repeats=1)
    assert torch.get_float32_matmul_precision() == "high"
    assert torch.backends.cuda.matmul.allow_tf32  # what Inductor reads on a GPU


@pytest.mark.gpus(1)
@pytest.mark.usefixtures("legacy_precision")
def test_torch_compile_works_after_measuring_every_dtype():
    torch.set_float32_matmul_precision("high")
    for dtype in matmul_dtypes("cuda:0"):
        matmul_throughput(256, "cuda:0", dtype=dtype, repeats=2)
    x = torch.randn(64, 64, device="cuda:0")
    compiled = torch.compile(lambda a: torch.relu(a @ a + 1))
    # TF32 in both: equal up to its 10-bit mantissa
    torch.testing.assert_close(compiled(x), torch.relu(x @ x + 1), atol=0.05, rtol=0.01)


def test_matmul_checks_arguments():
    with pytest.raises(ValueError, match=r"tf32' .* needs a CUDA device"):
        matmul_throughput(8, "cpu", dtype="tf32")
    with pytest.raises(ValueError, match="dtype"):
        matmul_throughput(8, "cpu", dtype="float32")
    with pytest.raises(ValueError, match="dtype"):
        matmul_throughput(8, "cpu", dtype=torch.float32)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n must"):
        matmul_throughput(8.0, "cpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n must"):
        matmul_throughput(0, "cpu")
    with pytest.raises(ValueError, match="repeats"):
        matmul_throughput(8, "cpu", repeats=0)


def test_matmul_dtypes_cpu():
    assert matmul_dtypes("cpu") == ["fp32"]


@pytest.mark.gpus(1)
def test_matmul_on_gpu_every_dtype():
    for dtype in matmul_dtypes("cuda:0"):
        m = matmul_throughput(256, "cuda:0", dtype=dtype, repeats=2)
        assert m.unit == "TFLOP/s" and m.value > 0
        assert m.peak == peak_tflops(torch.cuda.get_device_name(0), dtype)
