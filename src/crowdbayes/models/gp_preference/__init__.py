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

from .crowd import CrowdGPPL
from .ep import GPPreferenceEP
from .gppl import GPPL, GPPLVI, GPPLLaplace

__all__ = ["GPPreferenceEP", "GPPL", "GPPLVI", "GPPLLaplace", "CrowdGPPL"]
