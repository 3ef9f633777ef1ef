"""Tests of gpukit.plotting: the data an Animator keeps, its SVG, and its notebook output."""

from __future__ import annotations

import hashlib
import io
import math
import re
import sys
import warnings
import xml.etree.ElementTree as ET

import matplotlib
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.path import Path

from gpukit.plotting import Animator, figure_to_svg

LEGEND = ["train loss", "train acc", "test acc"]


def d2l_training_plot(epochs: int = 10, points_per_epoch: int = 5) -> Animator:
    """The plot of D2L's train_ch6: train loss/acc several times per epoch, test acc after."""
    animator = Animator(xlabel="epoch", xlim=[1, epochs], legend=LEGEND)
    for epoch in range(epochs):
        for i in range(points_per_epoch):
            x = epoch + (i + 1) / points_per_epoch
            # Slightly irregular values, as real training curves are.
            loss = 0.3 + 1.5 * math.exp(-x / 2) + 0.02 * math.sin(7 * x)
            acc = 0.9 - 0.5 * math.exp(-x / 2) + 0.01 * math.cos(5 * x)
            animator.add(x, (loss, acc, None))
        animator.add(epoch + 1, (None, None, 0.88 - 0.5 * math.exp(-(epoch + 1) / 2)))
    return animator


# ---------------------------------------------------------------- data kept


def test_add_keeps_points_and_skips_none():
    animator = Animator(legend=["a", "b"])
    animator.add(1, (0.5, None))
    animator.add(2, (0.4, 0.7))
    animator.add([3, 4], [torch.tensor(0.25), 0.6])
    assert animator.X == [[1.0, 2.0, 3.0], [2.0, 4.0]]
    assert animator.Y == [[0.5, 0.4, 0.25], [0.7, 0.6]]
    lines = animator.axes[0].get_lines()
    assert [list(line.get_xdata()) for line in lines] == animator.X


def test_add_single_value():
    animator = Animator()
    animator.add(0, 1.5)
    animator.add(1, 2)
    assert animator.Y == [[1.5, 2.0]]


def test_axes_configuration_survives_redraws():
    animator = Animator(
        xlabel="epoch", ylabel="loss", xlim=[1, 5], ylim=(0.1, 10), yscale="log", legend=["l"]
    )
    animator.add(1, 1.0)
    animator.add(2, 0.5)
    ax = animator.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_yscale()) == ("epoch", "loss", "log")
    assert [float(v) for v in ax.get_xlim()] == [1.0, 5.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["l"]


def test_one_epoch_range_is_widened_without_a_warning():
    animator = Animator(xlabel="epoch", xlim=[1, 1])  # D2L's [1, num_epochs] for one epoch
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns about identical limits
        animator.add(1, 0.5)
    assert [float(v) for v in animator.axes[0].get_xlim()] == [0.5, 1.5]


def test_subplot_grid():
    animator = Animator(nrows=2, ncols=3)
    assert len(animator.axes) == 6
    animator.add(1, 1)
    assert len(animator.axes[0].get_lines()) == 1 and not animator.axes[1].get_lines()


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"legend": "train"}, TypeError, "legend must be None or a sequence of str"),
        ({"xlim": [1]}, TypeError, "xlim must be a sequence of two numbers"),
        ({"ylim": "ab"}, TypeError, "ylim must be"),
        ({"xscale": "linear!"}, ValueError, r"xscale must be one of \['linear'"),
        ({"fmts": ()}, TypeError, "fmts must be a non-empty sequence"),
        ({"fmts": "-"}, TypeError, "fmts must be"),
        ({"nrows": 0}, ValueError, "nrows must be >= 1"),
        ({"ncols": 1.0}, TypeError, "ncols must be an int"),
        ({"figsize": (3, 0)}, ValueError, "figsize must be a sequence of two positive numbers"),
    ],
)
def test_constructor_errors(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        Animator(**kwargs)


def test_add_errors():
    animator = Animator(fmts=("-", "r:"))
    with pytest.raises(ValueError, match="fmts has only 2 formats"):
        animator.add(1, (1, 2, 3))
    with pytest.raises(ValueError, match=r"x must be one number or 2 numbers"):
        animator.add([1, 2, 3], (1, 2))
    with pytest.raises(ValueError, match="at least one value"):
        animator.add(1, [])
    with pytest.raises(TypeError, match=r"y\[1\] must hold numbers"):
        animator.add(1, (1, "2"))
    animator.add(1, (1, 2))
    with pytest.raises(ValueError, match=r"y must have 2 values, as in the first add\(\)"):
        animator.add(2, 3)
    assert animator.Y == [[1.0], [2.0]]


def test_axes_arguments_are_checked():
    with pytest.raises(ValueError, match="yscale must be one of"):
        Animator(yscale="loglog")
    with pytest.raises(TypeError, match="legend must be None or a sequence of str"):
        Animator(legend="train")


# ---------------------------------------------------------------- SVG


@pytest.fixture(scope="module")
def training_plot() -> Animator:
    return d2l_training_plot()


@pytest.fixture(scope="module")
def svg(training_plot: Animator) -> str:
    return training_plot.to_svg()


def test_svg_of_a_training_plot_is_small(svg):
    assert len(svg.encode()) <= 8 * 1024, len(svg.encode())


def test_svg_keeps_text_as_text(svg):
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert {"epoch", *LEGEND} <= set(texts)
    assert "<text" in svg and "glyph" not in svg  # fonttype 'none': no glyph outlines


def test_svg_is_reproducible_and_undated(svg):
    assert d2l_training_plot().to_svg() == svg  # another figure: same ids, same bytes
    assert "<metadata" not in svg and "dc:date" not in svg


def test_svg_is_valid_with_every_reference_defined(svg):
    root = ET.fromstring(svg.encode())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ids = set(re.findall(r' id="([^"]+)"', svg))
    references = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', svg))
    assert references and references <= ids


def test_svg_background_is_opaque_white(svg):
    first_shape = re.search(r"<path [^>]*/>", svg).group(0)
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    w = round(float(width))
    h = round(float(height))
    assert f'd="M0 {h}L{w} {h}L{w} 0L0 0z"' in first_shape  # covers the whole figure
    assert "fill: #ffffff" in first_shape and "opacity" not in first_shape


def elements(svg: str) -> dict[str, int]:
    return {tag: len(re.findall(rf"<{tag}[ >]", svg)) for tag in ("path", "use", "text")}


def test_compaction_keeps_every_element_and_text(training_plot, svg):
    compact = svg
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, as figure_to_svg
        training_plot.fig.savefig(buffer, format="svg", facecolor="white", bbox_inches="tight")
    raw = buffer.getvalue()
    assert elements(compact) == elements(raw)
    text = r"<text[^>]*>([^<]*)</text>"
    assert re.findall(text, compact) == re.findall(text, raw)
    assert len(compact) < 0.7 * len(raw)


def test_rounding_keeps_a_tenth_of_a_point():
    # A marker's path is written in points around its centre, untouched by the figure's
    # layout: this one is "M 57.612345 -41.46 L -0.04 -3" in matplotlib's SVG (y points down).
    fig = Figure()
    marker = Path([(1.1522469, 0.8292), (-0.0008, 0.06)])  # scaled by markersize / 2 / 1.152
    fig.subplots().plot([0], [0], marker=marker, markersize=115.22469, linestyle="none")
    paths = re.findall(r'<path id="m\w+" d="([^"]*)"', figure_to_svg(fig))
    assert "M57.6 -41.5L0 -3" in paths


# ---------------------------------------------------------------- display


class FakeHandle:
    def __init__(self) -> None:
        self.updates: list[object] = []

    def update(self, obj: object) -> None:
        self.updates.append(obj)


class TerminalShell:
    """IPython in a terminal: a shell without a kernel, where display() would print a repr."""


class KernelShell:
    kernel = object()


@pytest.mark.parametrize("shell", [None, TerminalShell()], ids=["python", "ipython"])
def test_outside_a_kernel_nothing_is_displayed(monkeypatch, shell):
    try:
        import IPython
        import IPython.display
    except ImportError:  # IPython is optional: without it there is nothing to display with
        pass
    else:

        def display(*args, **kwargs):
            raise AssertionError("displayed outside a Jupyter kernel")

        monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
        monkeypatch.setattr(IPython.display, "display", display)
    Animator().add(1, 1)


def test_in_a_kernel_one_display_then_updates(monkeypatch):
    ipython = pytest.importorskip("IPython")
    display_module = pytest.importorskip("IPython.display")
    shown: list[tuple[object, object]] = []
    handle = FakeHandle()

    def fake_display(obj, display_id=None):
        shown.append((obj, display_id))
        return handle

    monkeypatch.setattr(ipython, "get_ipython", KernelShell)
    monkeypatch.setattr(display_module, "display", fake_display)
    animator = Animator(legend=["a"])
    for x in range(4):
        animator.add(x, x * x)
    assert len(shown) == 1 and shown[0][1] is True
    assert len(handle.updates) == 3
    assert all(isinstance(o, display_module.SVG) for o in [shown[0][0], *handle.updates])
    assert handle.updates[-1].data == display_module.SVG(data=animator.to_svg()).data


def test_animator_figure_is_not_a_pyplot_figure():
    plt = pytest.importorskip("matplotlib.pyplot")
    before = plt.get_fignums()
    Animator().add(1, 1)
    assert plt.get_fignums() == before


# ---------------------------------------------------------------- a real executed notebook

NOTEBOOK_CELLS = [
    # pyplot loads the inline backend, as on most pages: it must add no PNG of its own.
    "import matplotlib.pyplot as plt\nimport gpukit as d2l",
    """\
animator = d2l.Animator(xlabel="epoch", xlim=[1, 10], legend=["train loss", "test acc"])
print("start")
for epoch in range(10):
    animator.add(epoch + 1, (1 / (epoch + 1), 0.5 + epoch / 25))
    print(f"epoch {epoch + 1} done")
print("finished")""",
    """\
import hashlib
from IPython.display import SVG
print(len(animator.X[0]), hashlib.sha256(SVG(data=animator.to_svg()).data.encode()).hexdigest())
""",
]


def test_executed_notebook_keeps_one_svg_and_every_printed_line():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    # The kernel must run this interpreter, where gpukit is installed.
    client.kernel_manager_class = nbclient_kernel_manager(sys.executable)
    client.execute()

    outputs = notebook.cells[1].outputs
    images = [o for o in outputs if o.output_type in ("display_data", "execute_result")]
    assert len(images) == 1
    assert set(images[0].data) == {"image/svg+xml", "text/plain"}
    printed = "".join(o.text for o in outputs if o.output_type == "stream")
    expected = ["start", *(f"epoch {i} done" for i in range(1, 11)), "finished"]
    assert printed.splitlines() == expected
    # The one image is the final frame, not the first.
    # A print() is several writes, which the kernel may send as several stream outputs.
    printed = "".join(o.text for o in notebook.cells[2].outputs if o.output_type == "stream")
    count, digest = printed.split()
    svg = images[0].data["image/svg+xml"]
    assert count == "10"
    assert hashlib.sha256(svg.encode()).hexdigest() == digest
    assert notebook.cells[0].outputs == []  # importing pyplot shows nothing (no empty PNG)


def nbclient_kernel_manager(python: str):
    from jupyter_client.manager import KernelManager

    class ThisPythonKernelManager(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return [python, "-m", "ipykernel_launcher", "-f", self.connection_file]

    return ThisPythonKernelManager
