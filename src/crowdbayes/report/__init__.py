"""Look before reading numbers: figures of fitted models and a self-contained HTML report.

Needs matplotlib (``pip install 'crowdbayes[plot]'``); ``import crowdbayes`` never imports it,
and this package imports it only when a figure is drawn.

- :func:`build` (``crowdbayes.report.build(model, data, eval_gold=...)``) returns a
  :class:`Report`: one HTML page with the data summary, the agreement statistics of class
  labels, the model's results and figures, its scores against gold labels and the most
  uncertain items, figures inlined as PNG (the page opens offline and makes no network
  request); ``report.save("report.html")`` writes it atomically. The command line is
  ``crowdbayes report labels|rank|prefs|leaderboard|cluster ... --out report.html``.
- :mod:`crowdbayes.report.figures`: each figure on its own, as a matplotlib Figure.
"""

from . import figures
from ._build import Report, build

__all__ = ["Report", "build", "figures"]
