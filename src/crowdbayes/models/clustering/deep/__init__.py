"""Deep generative crowd clustering (PyTorch): SCDC and BayesSCDC of Luo et al. (2018).

Importing this subpackage imports torch; ``import crowdbayes`` alone does not. Both estimators
are imported here, so that importing the subpackage registers them with
:func:`crowdbayes.list_models`.

Modules: :mod:`.scdc` and :mod:`.bayes_scdc` (the estimators), :mod:`._base` (what they
share: parameters, restarts, results, saving the networks), :mod:`._data` (observations and
links on the device), :mod:`._networks` (the MLPs), :mod:`._conjugate` (the Dirichlet and
Normal-inverse-Wishart factors of BayesSCDC), :mod:`.meanfield` (its local mean field) and
:mod:`._cuda_graph` (the local mean field replayed as a CUDA graph).
"""

from ._base import CollapseWarning
from .bayes_scdc import BayesSCDC
from .scdc import SCDC

__all__ = ["BayesSCDC", "CollapseWarning", "SCDC"]
