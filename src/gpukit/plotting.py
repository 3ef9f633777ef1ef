"""Plots for executed pages: :class:`Animator` and D2L's small matplotlib helpers.

D2L's ``Animator`` redraws the figure after every point and calls
``IPython.display.clear_output(wait=True)`` before the next one. In a page executed by
Jupyter that has two bad effects: it wipes everything else the cell printed (the epoch
lines, the final accuracy), and the executed notebook may keep several frames. The
:class:`Animator` here shows its figure once, as SVG, and then *updates that one output in
place* (``display(..., display_id=True)`` and ``handle.update(...)``), so a cell ends with
exactly one image per animator and all of its printed lines.

The SVG it writes keeps text as text (``svg.fonttype='none'``: searchable, selectable, small),
has stable ids and no date (so re-executing a page changes nothing that did not change), and
has an opaque white background, so that on a dark page it reads as a white card.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from numbers import Real
from typing import Any

import matplotlib
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gpukit._checks import check_int

__all__ = ["Animator", "set_axes", "set_figsize", "use_svg_display"]

# Fixed so that the ids matplotlib derives from it (clip paths, markers) are the same in
# every run: otherwise every re-execution changes every figure of the site.
_HASHSALT = "gpukit"
_SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": _HASHSALT}
# The browser draws the text with its own fonts. Layout is computed with DejaVu Sans (bundled
# with matplotlib), which is wider than the fallbacks, so the text never overflows its box.
_FONTS = ["DejaVu Sans", "Arial", "Helvetica"]
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_SCALES = ("linear", "log", "symlog", "logit")


def _kernel_display() -> Any | None:
    """Return IPython's ``display`` when running in a Jupyter kernel, else ``None``."""
    # IPython is not a dependency of gpukit: scripts and tests run without it.
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    # A terminal IPython has no kernel; there, display() would only print an object's repr.
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    return display


def _check_pair(value: object, name: str, *, positive: bool = False) -> tuple[float, float]:
    accepted = "two positive numbers" if positive else "two numbers"
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(f"{name} must be a sequence of {accepted}, got {value!r}")
    a, b = value
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, Real):
            raise TypeError(f"{name} must be a sequence of {accepted}, got {value!r}")
        if positive and not v > 0:
            raise ValueError(f"{name} must be a sequence of {accepted}, got {value!r}")
    return float(a), float(b)


def _check_optional_str(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be None or a str, got {type(value).__name__}")


def _check_scale(value: object, name: str) -> None:
    if value not in _SCALES:
        raise ValueError(f"{name} must be one of {list(_SCALES)}, got {value!r}")


def _check_legend(legend: object) -> list[str]:
    if legend is None:
        return []
    if (
        isinstance(legend, str)
        or not isinstance(legend, Sequence)
        or not all(isinstance(s, str) for s in legend)
    ):
        raise TypeError(f"legend must be None or a sequence of str, got {legend!r}")
    return list(legend)


def set_axes(
    axes: Axes,
    xlabel: str | None,
    ylabel: str | None,
    xlim: Sequence[float] | None,
    ylim: Sequence[float] | None,
    xscale: str,
    yscale: str,
    legend: Sequence[str] | None,
) -> None:
    """Set the labels, limits, scales and legend of matplotlib axes, and draw a grid (D2L).

    Example:
        >>> from matplotlib.figure import Figure
        >>> ax = Figure().subplots()
        >>> _ = ax.plot([1, 2, 3], [3, 1, 2])
        >>> set_axes(ax, "epoch", "loss", [1, 3], None, "linear", "log", ["train"])
        >>> ax.get_xlabel(), [float(v) for v in ax.get_xlim()], ax.get_yscale()
        ('epoch', [1.0, 3.0], 'log')
    """
    if not isinstance(axes, Axes):
        raise TypeError(f"axes must be matplotlib Axes, got {type(axes).__name__}")
    _check_optional_str(xlabel, "xlabel")
    _check_optional_str(ylabel, "ylabel")
    _check_scale(xscale, "xscale")
    _check_scale(yscale, "yscale")
    labels = _check_legend(legend)
    if xlabel is not None:
        axes.set_xlabel(xlabel)
    if ylabel is not None:
        axes.set_ylabel(ylabel)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    if xlim is not None:
        axes.set_xlim(_check_pair(xlim, "xlim"))
    if ylim is not None:
        axes.set_ylim(_check_pair(ylim, "ylim"))
    if labels:
        axes.legend(labels)
    axes.grid()


def use_svg_display() -> None:
    """Make pyplot figures on a page SVG with real text, stable ids and a white background.

    In a Jupyter kernel this switches the inline backend to SVG (as D2L's function does);
    anywhere it sets the matplotlib settings that :class:`Animator` uses for its own figures.

    Example:
        >>> use_svg_display()
        >>> matplotlib.rcParams["svg.fonttype"]
        'none'
    """
    matplotlib.rcParams.update(_SVG_RC)
    matplotlib.rcParams["figure.facecolor"] = "white"
    if _kernel_display() is not None:
        try:
            from matplotlib_inline.backend_inline import set_matplotlib_formats
        except ImportError:
            return
        set_matplotlib_formats("svg", metadata={"Date": None})


def set_figsize(figsize: Sequence[float] = (3.5, 2.5)) -> None:
    """Use SVG display and set the default size of new pyplot figures, in inches (D2L).

    Example:
        >>> set_figsize((4, 3))
        >>> matplotlib.rcParams["figure.figsize"]
        [4.0, 3.0]
    """
    size = _check_pair(figsize, "figsize", positive=True)
    use_svg_display()
    matplotlib.rcParams["figure.figsize"] = list(size)


def _round_numbers(text: str) -> str:
    # A tenth of a point is far below what a screen shows; the extra digits matplotlib
    # writes account for a good part of a line plot's size.
    def short(match: re.Match[str]) -> str:
        s = f"{float(match.group()):.1f}".rstrip("0").rstrip(".")
        return "0" if s == "-0" else s

    return re.sub(r"-?\d+\.\d+", short, text)


def _compact_path(match: re.Match[str]) -> str:
    d = _round_numbers(match.group(1))
    d = re.sub(r"\s+", " ", d).strip()
    d = re.sub(r" ?([MLCQZz]) ?", r"\1", d)
    return f' d="{d}"'


def _compact_svg(svg: str) -> str:
    """Shrink matplotlib's SVG without changing what it draws."""
    svg = re.sub(r' d="([^"]*)"', _compact_path, svg)
    svg = re.sub(
        r' (x|y|width|height|transform)="([^"]*)"',
        lambda m: f' {m.group(1)}="{_round_numbers(m.group(2))}"',
        svg,
    )
    svg = re.sub(r' transform="rotate\(-?0 [^)]*\)"', "", svg)
    # matplotlib names every group (figure_1, line2d_7, ...); only ids used by a reference
    # such as url(#p1a2b) or xlink:href="#m3c4d" must stay.
    used = set(re.findall(r"#([\w.-]+)", svg))
    svg = re.sub(r' id="([^"]*)"', lambda m: m.group(0) if m.group(1) in used else "", svg)
    svg = re.sub(r"\n\s+", "\n", svg)
    leaf = r"<path[^>]*/>|<use[^>]*/>|<text[^>]*>[^<]*</text>"
    while True:
        unwrapped = re.sub(rf"<g>\s*({leaf})\s*</g>", r"\1", svg)
        if unwrapped == svg:
            break
        svg = unwrapped
    # One CSS rule instead of the same font list on every text element.
    families = set(re.findall(r"font-family: ([^;\"]*);? ?", svg))
    if len(families) == 1:
        family = families.pop()
        svg = re.sub(r"font-family: [^;\"]*;? ?", "", svg)
        svg = svg.replace("</style>", f"\ntext{{font-family: {family}}}</style>", 1)
    return svg


def _as_value(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.item())
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{name} must hold numbers (or None to skip a line), got {value!r}")


class Animator:
    """Plot data that arrives point by point, e.g. the loss and accuracy of each epoch (D2L).

    Each :meth:`add` appends one point to every line and redraws. In a Jupyter kernel the
    figure is shown on the first :meth:`add` and then updated in place, so an executed page
    keeps one SVG per animator and every line the cell printed. Elsewhere nothing is shown;
    the figure is :attr:`fig` and :meth:`to_svg` renders it.

    Args:
        xlabel, ylabel: axis labels.
        legend: one name per line.
        xlim, ylim: ``(low, high)`` axis limits.
        xscale, yscale: ``'linear'``, ``'log'``, ``'symlog'`` or ``'logit'``.
        fmts: matplotlib format strings, one per line (so at most ``len(fmts)`` lines).
        nrows, ncols: subplot grid; the lines are drawn in the first subplot.
        figsize: figure size in inches.

    Attributes:
        fig: the matplotlib figure (not registered with pyplot, so the inline backend never
            shows an extra PNG copy of it).
        axes: the subplots, as a list.

    Example:
        >>> animator = Animator(xlabel="epoch", xlim=[1, 3], legend=["train loss", "test acc"])
        >>> for epoch in range(1, 4):
        ...     animator.add(epoch, (1 / epoch, 0.5 + epoch / 10))
        >>> animator.X
        [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
        >>> "<text" in animator.to_svg()
        True
    """

    def __init__(
        self,
        xlabel: str | None = None,
        ylabel: str | None = None,
        legend: Sequence[str] | None = None,
        xlim: Sequence[float] | None = None,
        ylim: Sequence[float] | None = None,
        xscale: str = "linear",
        yscale: str = "linear",
        fmts: Sequence[str] = ("-", "m--", "g-.", "r:"),
        nrows: int = 1,
        ncols: int = 1,
        figsize: Sequence[float] = (3.5, 2.5),
    ) -> None:
        _check_optional_str(xlabel, "xlabel")
        _check_optional_str(ylabel, "ylabel")
        self._legend = _check_legend(legend)
        self._xlim = None if xlim is None else _check_pair(xlim, "xlim")
        self._ylim = None if ylim is None else _check_pair(ylim, "ylim")
        _check_scale(xscale, "xscale")
        _check_scale(yscale, "yscale")
        if (
            isinstance(fmts, str)
            or not isinstance(fmts, Sequence)
            or not fmts
            or not all(isinstance(f, str) for f in fmts)
        ):
            raise TypeError(f"fmts must be a non-empty sequence of format strings, got {fmts!r}")
        for name, n in (("nrows", nrows), ("ncols", ncols)):
            check_int(n, name)
        size = _check_pair(figsize, "figsize", positive=True)
        self._labels = (xlabel, ylabel)
        self._scales = (xscale, yscale)
        self.fmts = tuple(fmts)
        self.fig = Figure(figsize=size, facecolor="white")
        self.axes: list[Axes] = list(self.fig.subplots(nrows, ncols, squeeze=False).flat)
        self.X: list[list[float]] | None = None
        self.Y: list[list[float]] | None = None
        self._handle: Any = None

    def config_axes(self) -> None:
        """Apply the labels, limits, scales, legend and grid to the first subplot."""
        set_axes(self.axes[0], *self._labels, self._xlim, self._ylim, *self._scales, self._legend)

    def add(self, x: float | Sequence[float], y: float | Sequence[float | None]) -> None:
        """Append a point to each line and redraw (and, in a kernel, update the shown figure).

        Args:
            x: the x value shared by all lines, or one per line.
            y: one value per line (a single number for a one-line plot); ``None`` adds no
                point to that line, e.g. a test accuracy known only at the end of an epoch.

        Example:
            >>> animator = Animator(legend=["train", "test"])
            >>> animator.add(0.5, (0.9, None))
            >>> animator.add(1, (0.8, 0.7))
            >>> animator.Y
            [[0.9, 0.8], [0.7]]
        """
        ys = list(y) if isinstance(y, Sequence) and not isinstance(y, str) else [y]
        n = len(ys)
        xs = list(x) if isinstance(x, Sequence) and not isinstance(x, str) else [x] * n
        if len(xs) != n:
            raise ValueError(f"x must be one number or {n} numbers (one per y), got {len(xs)}")
        if n == 0:
            raise ValueError("y must hold at least one value")
        if n > len(self.fmts):
            raise ValueError(
                f"y has {n} values but fmts has only {len(self.fmts)} formats, one per line"
            )
        if self.X is not None and len(self.X) != n:
            raise ValueError(f"y must have {len(self.X)} values, as in the first add(), got {n}")
        points = [
            (_as_value(a, f"x[{i}]"), _as_value(b, f"y[{i}]"))
            for i, (a, b) in enumerate(zip(xs, ys, strict=True))
        ]
        if self.X is None or self.Y is None:
            self.X = [[] for _ in range(n)]
            self.Y = [[] for _ in range(n)]
        for i, (a, b) in enumerate(points):
            if a is not None and b is not None:
                self.X[i].append(a)
                self.Y[i].append(b)
        ax = self.axes[0]
        ax.cla()
        for xs_i, ys_i, fmt in zip(self.X, self.Y, self.fmts, strict=False):
            ax.plot(xs_i, ys_i, fmt)
        self.config_axes()
        self._show()

    def to_svg(self) -> str:
        """Render the figure as a compact SVG document (text kept as text).

        Example:
            >>> animator = Animator(xlabel="epoch")
            >>> animator.add(1, 0.5)
            >>> svg = animator.to_svg()
            >>> svg.startswith("<?xml") and "epoch</text>" in svg
            True
        """
        buffer = io.StringIO()
        with matplotlib.rc_context({**_SVG_RC, "font.sans-serif": _FONTS}):
            # A tight box keeps the axis labels inside the picture.
            self.fig.savefig(
                buffer,
                format="svg",
                metadata=_NO_METADATA,
                facecolor="white",
                bbox_inches="tight",
            )
        return _compact_svg(buffer.getvalue())

    def _show(self) -> None:
        display = _kernel_display()
        if display is None:
            return
        from IPython.display import SVG

        image = SVG(data=self.to_svg())
        if self._handle is None:
            self._handle = display(image, display_id=True)
        else:
            self._handle.update(image)
