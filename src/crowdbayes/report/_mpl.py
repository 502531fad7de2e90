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
    "count_axis",
    "count_bins",
    "spread_axis",
    "interval_rows",
    "label_bars",
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
    ax.plot(mean, rows, "o", color=tint, ms=3.5, clip_on=False)
    ax.set_ylim(-0.7, len(mean) - 0.3)


def log_axis(ax: Any, which: str = "x") -> None:
    """A log-scaled axis labelled with plain numbers (1, 10, 100), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


#: values spanning less than this ratio are drawn on a linear axis, wider ones on a log axis
WIDE = 10.0


def _wide(values: Any) -> bool:
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    values = values[values > 0]
    return values.size > 0 and values.max() / values.min() >= WIDE


def spread_axis(ax: Any, values: Any, which: str = "x") -> bool:
    """A log axis (:func:`log_axis`) for positive ``values`` spanning an order of magnitude
    or more, else a linear one with whole-number ticks (a log axis within one decade has no
    labelled tick); True when log."""
    if _wide(values):
        log_axis(ax, which)
        return True
    from matplotlib.ticker import MaxNLocator

    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    return False


def count_bins(values: Any, n_bins: int = 40) -> Any:
    """Histogram edges for whole-number counts: one bin per count while they fit in
    ``n_bins``, else ``n_bins`` bins (equal on a log scale when the counts are wide: see
    :func:`spread_axis`)."""
    import numpy as np

    low, high = int(np.min(values)), int(np.max(values))
    if _wide(values):
        return np.geomspace(max(low, 1) * 0.9, high * 1.1, n_bins + 1)
    if high - low + 1 <= n_bins:
        return np.arange(low - 0.5, high + 1.5)
    return np.linspace(low - 0.5, high + 0.5, n_bins + 1)


def count_axis(ax: Any, highest: float) -> None:
    """A linear axis of counts from 0 (y): whole-number ticks, labelled with thousands
    separators, with room above the highest bar for its count (:func:`label_bars`)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.set_ylim(0, max(float(highest), 1.0) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=2))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def label_bars(ax: Any, centres: Any, counts: Any) -> None:
    """Each bar's count written above it (bars of 0 left bare), so that a bar of a few items
    beside one of thousands still shows its number."""
    for x, n in zip(centres, counts, strict=True):
        if n > 0:
            ax.annotate(
                f"{int(n):,}",
                (x, n),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=6,
                rotation=90 if len(counts) > 12 else 0,
            )


def png_bytes(figure: Any, dpi: int = 100) -> bytes:
    """The figure drawn as PNG."""
    matplotlib = require_matplotlib()
    buffer = io.BytesIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
