"""Deep generative crowd clustering (PyTorch): SCDC and BayesSCDC of Luo et al. (2018).

Importing this subpackage imports torch; ``import crowdbayes`` alone does not. Both estimators
are imported here, so that importing the subpackage registers them with
:func:`crowdbayes.list_models`.

Modules: :mod:`.scdc` and :mod:`.bayes_scdc` (the estimators), :mod:`._base` (what they
share: parameters, restarts, results, saving the networks), :mod:`._data` (observations and
links on the device), :mod:`._networks` (the MLPs), :mod:`._conjugate` (the Dirichlet and
Normal-inverse-Wishart factors of BayesSCDC), :mod:`.meanfield` (its local mean field),
:mod:`._init` (the starting values of its global factors), :mod:`._head` (its cluster head and
the rule of ``cluster_head="auto"``), :mod:`._workers` (its workers' Beta factors) and
:mod:`._cuda_graph` (the local mean field replayed as a CUDA graph). The discussion of
BayesSCDC's settings and measurements is ``docs/models/bayes_scdc.md``.
"""

try:
    import torch  # noqa: F401
except ImportError as error:  # say which extra provides it
    raise ImportError(
        "SCDC and BayesSCDC need torch (PyTorch): pip install 'crowdbayes[deep]'"
    ) from error

from ._base import CollapseWarning
from .bayes_scdc import BayesSCDC
from .scdc import SCDC

__all__ = ["BayesSCDC", "CollapseWarning", "SCDC"]
