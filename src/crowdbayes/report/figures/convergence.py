"""Convergence of any fitted model: its objective per iteration, per-chain traces, R-hat."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._mpl import color, new_figure, styled
from .._results import convergence_traces

__all__ = ["convergence"]


def _panels(model) -> list[tuple[str, object]]:
    panels: list[tuple[str, object]] = [("trace", trace) for trace in convergence_traces(model)]
    curve = model.eta_curve_ if model.tags.judgment == "rankings" else None
    if isinstance(curve, pd.DataFrame) and len(curve) > 1:
        panels.append(("eta", curve))
    rhat = model.rhat()
    if len(rhat):
        panels.append(("rhat", rhat))
    return panels


def _trace(ax, name: str, label: str, values: np.ndarray) -> None:
    if values.ndim == 2:
        for chain, row in enumerate(values):
            ax.plot(np.arange(1, len(row) + 1), row, lw=0.8, color=color(chain), alpha=0.8)
        ax.set_xlabel("recorded draw" if "log-likelihood" in label else "sweep")
        ax.set_title(f"{label}: {len(values)} chains", fontsize=9)
    else:
        x = np.arange(1, len(values) + 1)
        if name == "change_history_":
            ax.semilogy(x, np.maximum(values, 1e-300), color=color(0), lw=1)
        else:
            ax.plot(x, values, color=color(0), lw=1, marker="o" if len(values) <= 30 else None)
            ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_xlabel("iteration")
        ax.set_title(f"{label} per iteration ({len(values)} iterations)", fontsize=9)
    ax.set_ylabel(label.split(" (")[0])
    ax.grid(alpha=0.3)


def _eta(ax, curve: pd.DataFrame, chosen: float | None) -> None:
    ax.semilogx(curve["eta"], curve["lower_bound"], "o-", color=color(1), lw=1, ms=3)
    if chosen is not None:
        ax.axvline(chosen, color="grey", ls="--", lw=1, label=f"chosen η = {chosen:.3g}")
        ax.legend(frameon=False)
    ax.set_xlabel("prior precision η (log scale)")
    ax.set_ylabel("lower bound at convergence")
    ax.set_title("η chosen by the bound", fontsize=9)
    ax.grid(alpha=0.3)


#: up to this many R-hat values are shown one by one, more as a histogram
_NAMED_RHAT = 12


def _rhat(ax, rhat: pd.Series) -> None:
    values = rhat.to_numpy()
    high = max(1.1, float(values.max()) * 1.01)
    if len(values) <= _NAMED_RHAT:
        ax.plot(values, np.arange(len(values)), "o", color=color(2))
        ax.set_yticks(np.arange(len(values)), [str(name)[:24] for name in rhat.index], fontsize=7)
        ax.set_xlim(min(0.99, float(values.min()) - 0.01), high)
        ax.set_ylim(-0.7, len(values) - 0.3)
    else:
        low = min(0.99, float(values.min()))
        ax.hist(values, bins=np.linspace(low, high, 30), color=color(2))
        ax.set_ylabel("quantities")
    ax.axvline(1.01, color="grey", ls="--", lw=1, label="1.01")
    ax.axvline(1.05, color=color(5), ls="--", lw=1, label="1.05")
    ax.set_xlabel("R-hat")
    above = int((values > 1.05).sum())
    ax.set_title(f"R-hat of {len(values)} quantities: max {values.max():.3f}, {above} > 1.05")
    ax.title.set_fontsize(9)
    ax.legend(frameon=False)


@styled
def convergence(model):
    """How the fit converged: the objective per iteration (ELBO, log posterior, bound, or the
    largest change for fixed-point iterations), per-chain traces of samplers, the bound over
    the η grid of Plackett–Luce VI, and the R-hat of every quantity a sampler reports.

    Raises
    ------
    ValueError
        If the model keeps no trace (majority vote, a single-step fit).

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    facts = model.diagnostics()
    panels = _panels(model)
    if not panels:
        raise ValueError(f"{type(model).__name__} keeps no convergence trace")
    figure, axes = new_figure(max(6.0, 3.6 * len(panels) + 0.4), 3.0, ncols=len(panels))
    axes = np.atleast_1d(axes)
    for ax, (kind, content) in zip(axes, panels, strict=True):
        if kind == "trace":
            _trace(ax, *content)
        elif kind == "eta":
            _eta(ax, content, facts.get("eta"))
        else:
            _rhat(ax, content)
    n_iter, converged = facts.get("iterations"), facts.get("converged")
    status = ""
    if n_iter is not None:
        status = f": {n_iter} iterations" + (
            "" if converged is None else (", converged" if converged else ", not converged")
        )
    figure.suptitle(f"Convergence of {type(model).__name__}{status}")
    return figure
