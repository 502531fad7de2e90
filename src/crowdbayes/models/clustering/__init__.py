"""Crowd clustering from pairwise must-link / cannot-link judgments.

Every model is imported on first use: ``LinkClustering`` (links only, numpy), and ``SCDC`` and
``BayesSCDC`` (PyTorch, the ``crowdbayes[deep]`` extra), which live in
:mod:`crowdbayes.models.clustering.deep`; ``import crowdbayes`` never imports torch.

Modules: :mod:`.link_clustering` (the estimator), :mod:`.link_graph` (the signed link graph in
the order of the sweeps), :mod:`.link_vb` (the VB as sums over links, the interface that
:mod:`crowdbayes.distributed` maps over partitions), :mod:`.link_search` (the hard-partition
searches that start and polish the VB), :mod:`.deep` (SCDC, BayesSCDC).
"""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the options of the deep models on the command line
_DEEP = (
    "--clusters",
    "--epochs",
    "--device",
    "--latent-dim",
    "--hidden",
    "--batch-size",
    "--decoder",
    "--link-weight",
    "--restarts",
    "--learning-rate",
)
#: the paper's faces and MNIST settings, and K = 10 for every model on the command line;
#: ``--latent-dim`` defaults to at most the number of features (``cluster fit``)
_DEEP_DEFAULTS = {"n_clusters": 10, "epochs": 20, "latent_dim": 8}

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "cluster",
        "links-vb",
        "crowdbayes.models.clustering.link_clustering:LinkClustering",
        "links only: mean-field variational Bayes, numpy",
        ("--clusters", "--max-iter", "--tol"),
    ),
    ModelEntry(
        "cluster",
        "scdc",
        "crowdbayes.models.clustering.deep.scdc:SCDC",
        "SCDC: deep generative model of the features + two-coin links (PyTorch)",
        _DEEP,
        _DEEP_DEFAULTS,
    ),
    ModelEntry(
        "cluster",
        "bayes-scdc",
        "crowdbayes.models.clustering.deep.bayes_scdc:BayesSCDC",
        "BayesSCDC: fully Bayesian SCDC, natural-gradient VB (PyTorch)",
        (*_DEEP, "--cluster-head", "--head-balance"),
        _DEEP_DEFAULTS,
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    ".link_clustering": ("LinkClustering",),
    ".deep": ("SCDC", "BayesSCDC"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
