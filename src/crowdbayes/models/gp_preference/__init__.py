"""Gaussian-process preference learning: GP utilities over item features from pairwise
comparisons.

- :class:`GPPreferenceEP` — the model of Chu & Ghahramani (2005) by expectation propagation;
- :class:`GPPL`, :class:`GPPLVI`, :class:`GPPLLaplace` — GPPL (Simpson & Gurevych, 2018,
  2020) by SVI with inducing points, full-batch VI and the Laplace approximation;
- :class:`CrowdGPPL` — consensus plus personal preferences of each worker (2020).

The estimators say what the model is; how it is fitted is an inference strategy of the GP
engine they are given (:mod:`crowdbayes.gp`: ``EP``, ``Laplace``, ``VI``, ``SVI``), where the
likelihood, the posteriors and the inference algorithms live.
"""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the options of the models fitted by stochastic variational inference on the command line
_SVI = ("--inducing", "--batch-size", "--max-iter", "--tol", "--lengthscale", "--ties")
#: the options of the models of small data on the command line
_SMALL = ("--max-iter", "--tol", "--lengthscale", "--ties")

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "prefs",
        "gppl",
        "crowdbayes.models.gp_preference.gppl:GPPL",
        "GPPL by stochastic variational inference with inducing points",
        _SVI,
    ),
    ModelEntry(
        "prefs",
        "crowdgppl",
        "crowdbayes.models.gp_preference.crowd:CrowdGPPL",
        "crowdGPPL: consensus plus personal preferences of each worker (SVI)",
        ("--components", *_SVI),
    ),
    ModelEntry(
        "prefs",
        "gppl-vi",
        "crowdbayes.models.gp_preference.gppl:GPPLVI",
        "GPPL by full-batch variational inference (small data)",
        _SMALL,
    ),
    ModelEntry(
        "prefs",
        "gppl-laplace",
        "crowdbayes.models.gp_preference.gppl:GPPLLaplace",
        "GPPL by the Laplace approximation (small data)",
        _SMALL,
    ),
    ModelEntry(
        "prefs",
        "ep",
        "crowdbayes.models.gp_preference.ep:GPPreferenceEP",
        "GP preference learning by expectation propagation (small data)",
        _SMALL,
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    ".crowd": ("CrowdGPPL",),
    ".ep": ("GPPreferenceEP",),
    ".gppl": ("GPPL", "GPPLVI", "GPPLLaplace"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
