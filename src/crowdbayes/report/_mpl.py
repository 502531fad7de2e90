"""matplotlib, imported only when a figure is drawn (the ``plot`` extra).

Figures are built as :class:`matplotlib.figure.Figure` objects directly, never through pyplot:
no global state, no GUI backend, nothing left open; they are drawn to PNG by the Agg canvas
(:func:`png_bytes`) and show in Jupyter as they are.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any

__all__ = [
    "COLORS",
    "color",
    "interval_rows",
    "log_axis",
    "new_figure",
    "png_bytes",
    "require_matplotlib",
    "styled",
]

#: a colour-blind-safe palette (Okabe & Ito 2008), then matplotlib's tab20 for more classes
COLORS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
)
_STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
}


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or an ImportError saying how to install it."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(
            "figures and reports need matplotlib: pip install 'crowdbayes[plot]'"
        ) from err
    return matplotlib


def styled(draw: Callable) -> Callable:
    """Run a figure function inside the report's style (fonts, spines) and check that
    matplotlib is there first."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        matplotlib = require_matplotlib()
        with matplotlib.rc_context(_STYLE):
            return draw(*args, **kwargs)

    return wrapper


def new_figure(width: float, height: float, **subplots: Any) -> tuple[Any, Any]:
    """A Figure (constrained layout) and its axes from ``Figure.subplots(**subplots)``."""
    require_matplotlib()
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.subplots(**subplots)


def color(index: int) -> str:
    """The ``index``-th colour of the palette (cycling through tab20 beyond it)."""
    if index < len(COLORS):
        return COLORS[index]
    from matplotlib import colormaps

    return colormaps["tab20"](index % 20)


def interval_rows(
    ax: Any, mean: Any, lower: Any = None, upper: Any = None, *, tint: str, bars: str | None = None
) -> None:
    """One row per value, bottom to top: a dot at ``mean`` and, when given, a horizontal bar
    from ``lower`` to ``upper`` (a forest plot)."""
    import numpy as np

    mean = np.asarray(mean, dtype=np.float64)
    rows = np.arange(len(mean))
    if lower is not None and upper is not None:
        below = np.clip(mean - np.asarray(lower, dtype=np.float64), 0, None)
        above = np.clip(np.asarray(upper, dtype=np.float64) - mean, 0, None)
        ax.errorbar(mean, rows, xerr=[below, above], fmt="none", ecolor=bars or tint, lw=1.2)
    ax.plot(mean, rows, "o", color=tint, ms=3.5)
    ax.set_ylim(-0.7, len(mean) - 0.3)


def log_axis(ax: Any, which: str = "x") -> None:
    """A log-scaled axis labelled with plain numbers (1, 10, 100), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def png_bytes(figure: Any, dpi: int = 100) -> bytes:
    """The figure drawn as PNG."""
    matplotlib = require_matplotlib()
    buffer = io.BytesIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
