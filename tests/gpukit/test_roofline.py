"""Tests of gpukit.roofline: the model's arithmetic, the measured roof's bookkeeping, the plot."""

from __future__ import annotations

import time

import pytest

from gpukit import roofline
from gpukit.measure import PEAK_TFLOPS, Measurement
from gpukit.plotting import figure_to_svg
from gpukit.roofline import (
    HBM_TBPS,
    OpPoint,
    Roofline,
    arithmetic_intensity,
    datasheet_roofline,
    matmul_cost,
    measure_point,
    measured_roofline,
    mfu,
    plot_roofline,
)


def test_roof_is_the_lower_of_memory_and_compute():
    roof = Roofline("toy", bandwidth=2e9, peak_flops=8e9)
    assert roof.ridge_point == 4.0
    assert roof.attainable(1.0) == 2e9  # memory-bound: bandwidth x intensity
    assert roof.attainable(4.0) == 8e9
    assert roof.attainable(100.0) == 8e9  # compute-bound: the peak
    assert roof.bound(3.99) == "memory"
    assert roof.bound(4.0) == "compute"


def test_matmul_cost_counts_a_multiply_and_an_add_per_term():
    m = 2
    n = 3
    k = 5
    flops, nbytes = matmul_cost(m, n, k)
    assert flops == 2 * m * n * k == 60
    assert nbytes == 4 * (m * k + k * n + m * n)
    # larger products reuse each byte more often: the intensity grows with n
    small, large = (arithmetic_intensity(*matmul_cost(s, s, s)) for s in (64, 4096))
    assert large == pytest.approx(64 * small)


@pytest.mark.parametrize("model", sorted(HBM_TBPS))
def test_datasheet_roofs_come_from_the_two_tables(model):
    roof = datasheet_roofline(model, "bf16")
    assert roof.bandwidth == HBM_TBPS[model] * 1e12
    assert roof.peak_flops == PEAK_TFLOPS[model]["bf16"] * 1e12
    # every data-center GPU listed is memory-bound for an fp32 elementwise add
    assert roof.bound(arithmetic_intensity(1, 12)) == "memory"


def test_newer_gpus_have_higher_ridge_points_in_bf16():
    ridges = [datasheet_roofline(m, "bf16").ridge_point for m in ("H200 SXM", "B200")]
    assert ridges == sorted(ridges)


def one_second(what: str, value: float, unit: str) -> Measurement:
    """A measurement of one operation that took a second on the CPU."""
    return Measurement(device="cpu", what=what, count=1, seconds=1.0, value=value, unit=unit)


def fake_measurements(monkeypatch, *, gbps: float, rate: float, unit: str) -> None:
    copy = one_second("copy", gbps, "GB/s")
    product = one_second("matmul", rate, unit)
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: copy)
    monkeypatch.setattr(roofline, "matmul_throughput", lambda *a, **k: product)


def test_measured_bandwidth_counts_bytes_read_and_written(monkeypatch):
    fake_measurements(monkeypatch, gbps=10.0, rate=100.0, unit="GFLOP/s")
    roof = measured_roofline("cpu")
    assert roof.bandwidth == 2 * 10.0 * 1e9  # a copy reads and writes each byte
    assert roof.peak_flops == 100.0 * 1e9
    assert roof.name == "cpu fp32 (measured)"


def test_measured_flops_in_tflops_are_scaled(monkeypatch):
    fake_measurements(monkeypatch, gbps=1000.0, rate=500.0, unit="TFLOP/s")
    assert measured_roofline("cpu", dtype="fp32").peak_flops == 500.0 * 1e12


def test_measured_roof_takes_the_best_run(monkeypatch):
    rates = iter([40.0, 90.0, 60.0, 70.0])  # GFLOP/s of successive matmul runs
    gbps = iter([3.0, 5.0, 4.0])
    monkeypatch.setattr(
        roofline,
        "matmul_throughput",
        lambda *a, **k: one_second("matmul", next(rates), "GFLOP/s"),
    )
    monkeypatch.setattr(
        roofline,
        "copy_bandwidth",
        lambda *a, **k: one_second("copy", next(gbps), "GB/s"),
    )
    roof = measured_roofline("cpu", matmul_sizes=(64, 128), tries=2)
    assert roof.peak_flops == 90.0 * 1e9
    assert roof.bandwidth == 2 * 5.0 * 1e9


def test_measured_roofline_on_this_cpu():
    roof = measured_roofline("cpu", copy_bytes=2**20, matmul_sizes=[64], repeats=2)
    assert roof.bandwidth > 0 and roof.peak_flops > 0


def test_measure_point_times_the_operation():
    point = measure_point("sleep", lambda: time.sleep(0.01), flops=1e6, nbytes=1e3, repeats=2)
    assert point.seconds >= 0.01
    assert point.intensity == 1e3
    assert point.flops_per_second == pytest.approx(1e6 / point.seconds)


def test_share_of_roof():
    point = OpPoint("add", flops=1e6, nbytes=1.2e7, seconds=1e-3)  # 1 GFLOP/s at 1/12 FLOP/B
    roof = Roofline("toy", bandwidth=24e9, peak_flops=1e12)  # allows 2 GFLOP/s there
    assert point.share_of_roof(roof) == pytest.approx(0.5)


def test_mfu_is_achieved_over_peak():
    assert mfu(5e14, 2.0, 1e15) == 0.25
    assert mfu(0.0, 1.0, 1e15) == 0.0


def test_plot_names_roofs_and_points_and_is_reproducible():
    roofs = [datasheet_roofline("H200 SXM"), Roofline("this cpu", 2e10, 1e11)]
    points = [OpPoint("softmax", 5e6, 8e6, 1e-3), OpPoint("matmul 512", 2.7e8, 3.1e6, 1e-2)]
    fig = plot_roofline(roofs, points, marks={"add (marked)": 1 / 12})
    svg = figure_to_svg(fig)
    for text in (
        "H200 SXM bf16",
        "this cpu",
        "softmax",
        "matmul 512",
        "add (marked)",
        "(FLOP/byte)",
    ):
        assert f"{text}</text>" in svg
    assert svg == figure_to_svg(plot_roofline(roofs, points, marks={"add (marked)": 1 / 12}))


def test_plot_labels_are_horizontal_and_never_overlap():
    # The gpu-execution page's case: two GELUs at almost the same point, and marks a few
    # percent apart on the intensity axis. Their labels once printed over each other, and the
    # marks' labels stood on end in 7-point grey.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    roofs = [datasheet_roofline(m) for m in ("H100 SXM", "H200 SXM", "B200")]
    points = [
        OpPoint("GELU", 1e7, 1.6e7, 2e-3),
        OpPoint("GELU fused", 1e7, 1.5e7, 1.9e-3),
        OpPoint("GELU+GELU", 2e7, 3.2e7, 4e-3),
    ]
    marks = {"GELU": 0.6, "GELU fused": 0.65, "softmax": 0.5, "conv 3x3": 140, "matmul": 160}
    fig = plot_roofline(roofs, points, marks=marks)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    labels = [t for t in fig.axes[0].texts if t.get_text()]
    assert len(labels) == len(points) + len(marks)
    assert all(label.get_rotation() == 0 for label in labels)
    boxes = [label.get_window_extent(renderer) for label in labels]
    boxes.append(fig.axes[0].get_legend().get_window_extent(renderer))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)


def test_plot_x_range_covers_points_and_ridges():
    fig = plot_roofline([Roofline("r", 1e9, 1e12)], [OpPoint("tiny", 1, 1e4, 1.0)])
    lo, hi = fig.axes[0].get_xlim()
    assert lo <= 1e-4 and hi >= 1e3
