"""Plots in executed pages: D2L's ``Animator``.

D2L's ``Animator`` redraws with pyplot after every point and calls ``clear_output`` before the
next one, which in an executed page wipes everything else the cell printed. The
:class:`Animator` here shows its figure once, as SVG, and then *updates that one output in
place* (``display(..., display_id=True)``): a cell ends with one image and all its printed lines.
The SVG keeps text as text (searchable, small), has stable ids and no date (re-executing a page
changes nothing that did not change), and a white background: on a dark page, a white card.
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

from gpukit._checks import check_choice, check_int

__all__ = ["Animator", "figure_to_svg"]

# Fixed, so that the ids matplotlib derives from it (clip paths, markers) are the same in every
# run: otherwise every re-execution changes every figure of the site.
_HASHSALT = "gpukit"
_SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": _HASHSALT}
# The browser draws the text with its own fonts. Layout is computed with DejaVu Sans (bundled
# with matplotlib), which is wider than the fallbacks, so the text never overflows its box.
_FONTS = ["DejaVu Sans", "Arial", "Helvetica"]
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_SCALES = ("linear", "log", "symlog", "logit")


def _kernel_display() -> Any | None:
    """IPython's ``display`` in a Jupyter kernel, else ``None`` (a terminal IPython has no
    kernel, and there ``display`` would print a repr; IPython is optional)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    return display if getattr(get_ipython(), "kernel", None) is not None else None


def _pair(value: object, name: str, *, positive: bool = False) -> tuple[float, float] | None:
    if value is None and not positive:
        return None
    accepted = f"{name} must be a sequence of two {'positive ' if positive else ''}numbers"
    pair = isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2
    if not pair or any(isinstance(v, bool) or not isinstance(v, Real) for v in value):
        raise TypeError(f"{accepted}, got {value!r}")
    if positive and not all(v > 0 for v in value):
        raise ValueError(f"{accepted}, got {value!r}")
    return float(value[0]), float(value[1])


def _round_numbers(text: str) -> str:
    # A tenth of a point is far below what a screen shows; the extra digits matplotlib writes
    # account for a good part of a line plot's size.
    def short(match: re.Match[str]) -> str:
        s = f"{float(match.group()):.1f}".rstrip("0").rstrip(".")
        return "0" if s == "-0" else s

    return re.sub(r"-?\d+\.\d+", short, text)


def _compact_svg(svg: str) -> str:
    """Shrink matplotlib's SVG without changing what it draws."""

    def path(match: re.Match[str]) -> str:
        d = re.sub(r"\s+", " ", _round_numbers(match.group(1))).strip()
        d = re.sub(r" ?([MLCQZz]) ?", r"\1", d)
        return f' d="{d}"'

    svg = re.sub(r' d="([^"]*)"', path, svg)
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
    while (unwrapped := re.sub(rf"<g>\s*({leaf})\s*</g>", r"\1", svg)) != svg:
        svg = unwrapped
    # One CSS rule instead of the same font list on every text element.
    families = set(re.findall(r"font-family: ([^;\"]*);? ?", svg))
    if len(families) == 1:
        svg = re.sub(r"font-family: [^;\"]*;? ?", "", svg)
        svg = svg.replace("</style>", f"\ntext{{font-family: {families.pop()}}}</style>", 1)
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

    Each :meth:`add` appends one point to every line and redraws (shown only in a Jupyter
    kernel). The arguments are D2L's: ``fmts`` holds one matplotlib format per line, the lines
    are drawn in the first subplot of the ``nrows`` x ``ncols`` grid, ``figsize`` is in inches.
    ``fig`` is the figure (unknown to pyplot, which so never shows a PNG copy of it).

    Example:
        >>> animator = Animator(xlabel="epoch", xlim=[1, 3], legend=["train loss", "test acc"])
        >>> for epoch in range(1, 4):
        ...     animator.add(epoch, (1 / epoch, 0.5 + epoch / 10 if epoch > 1 else None))
        >>> animator.X
        [[1.0, 2.0, 3.0], [2.0, 3.0]]
        >>> "epoch</text>" in animator.to_svg()
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
        check_choice(xscale, "xscale", _SCALES)
        check_choice(yscale, "yscale", _SCALES)
        if legend is not None and (
            isinstance(legend, str)
            or not isinstance(legend, Sequence)
            or not all(isinstance(s, str) for s in legend)
        ):
            raise TypeError(f"legend must be None or a sequence of str, got {legend!r}")
        limits = _pair(xlim, "xlim"), _pair(ylim, "ylim")
        self._axes_args = (xlabel, ylabel, *limits, xscale, yscale, list(legend or []))
        if isinstance(fmts, str) or not isinstance(fmts, Sequence) or not fmts:
            raise TypeError(f"fmts must be a non-empty sequence of format strings, got {fmts!r}")
        check_int(nrows, "nrows")
        check_int(ncols, "ncols")
        self.fmts = tuple(fmts)
        self.fig = Figure(figsize=_pair(figsize, "figsize", positive=True), facecolor="white")
        self.axes: list[Axes] = list(self.fig.subplots(nrows, ncols, squeeze=False).flat)
        self.X: list[list[float]] | None = None
        self.Y: list[list[float]] | None = None
        self._handle: Any = None

    def add(self, x: float | Sequence[float], y: float | Sequence[float | None]) -> None:
        """Append a point to each line and redraw.

        ``x`` is shared by all lines or given per line; ``y`` holds one value per line (a
        number for a one-line plot), ``None`` adding no point to that line, e.g. a test
        accuracy known only at the end of an epoch (see the example above).
        """
        ys = list(y) if isinstance(y, Sequence) and not isinstance(y, str) else [y]
        n = len(ys)
        xs = list(x) if isinstance(x, Sequence) and not isinstance(x, str) else [x] * n
        if n == 0:
            raise ValueError("y must hold at least one value")
        if len(xs) != n:
            raise ValueError(f"x must be one number or {n} numbers (one per y), got {len(xs)}")
        if n > len(self.fmts):
            raise ValueError(f"y has {n} values, but fmts has only {len(self.fmts)} formats")
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
        xlabel, ylabel, xlim, ylim, xscale, yscale, legend = self._axes_args  # D2L's set_axes
        ax.set(xlabel=xlabel or "", ylabel=ylabel or "", xscale=xscale, yscale=yscale)
        if xlim is not None:  # D2L's [1, num_epochs] is empty for one epoch: widened
            ax.set_xlim(xlim if xlim[0] != xlim[1] else (xlim[0] - 0.5, xlim[1] + 0.5))
        if ylim is not None:
            ax.set_ylim(ylim)
        if legend:
            ax.legend(legend)
        ax.grid()
        if (display := _kernel_display()) is not None:
            from IPython.display import SVG

            image = SVG(data=self.to_svg())
            if self._handle is None:
                self._handle = display(image, display_id=True)
            else:
                self._handle.update(image)

    def to_svg(self) -> str:
        """Render the figure as a compact SVG document, text kept as text."""
        return figure_to_svg(self.fig)


def figure_to_svg(fig: Figure) -> str:
    """Render a matplotlib figure as a compact SVG document, as :class:`Animator` does.

    Text stays text, ids are stable and there is no date: rendering the same figure twice
    gives the same document. The background is white (a white card on a dark page).

    Example:
        >>> from matplotlib.figure import Figure
        >>> fig = Figure()
        >>> _ = fig.subplots().set_xlabel("time")
        >>> svg = figure_to_svg(fig)
        >>> svg.startswith("<?xml") and "time</text>" in svg and svg == figure_to_svg(fig)
        True
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.StringIO()
    with matplotlib.rc_context({**_SVG_RC, "font.sans-serif": _FONTS}):
        # A tight box keeps the axis labels inside the picture.
        fig.savefig(
            buffer, format="svg", metadata=_NO_METADATA, facecolor="white", bbox_inches="tight"
        )
    return _compact_svg(buffer.getvalue())
