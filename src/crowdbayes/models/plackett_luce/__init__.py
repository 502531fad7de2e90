"""Plackett–Luce models for rankings and top choices.

With item features (s_i = exp(θᵀx_i)): :class:`PlackettLuceVI` (Gaussian posterior over θ by
variational inference, Guo et al. 2019) and :class:`PlackettLuceMAP` (the conditional-logit MAP
estimate). Without features (one score per item): :class:`PlackettLuceMM` (Hunter's MM with a
Gamma prior) and :class:`PlackettLuceGibbs` (Caron & Doucet's Gibbs sampler).
"""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "rank",
        "pl-vi",
        "crowdbayes.models.plackett_luce.vi:PlackettLuceVI",
        "Plackett-Luce with features, Gaussian posterior by variational inference",
        ("--eta", "--method", "--item-effects", "--max-iter", "--tol"),
        {"eta": "auto", "item_effects": "auto"},
    ),
    ModelEntry(
        "rank",
        "pl-map",
        "crowdbayes.models.plackett_luce.map:PlackettLuceMAP",
        "Plackett-Luce with features, MAP (conditional logit)",
        ("--eta", "--max-iter", "--tol"),
    ),
    ModelEntry(
        "rank",
        "pl-mm",
        "crowdbayes.models.plackett_luce.featureless:PlackettLuceMM",
        "Plackett-Luce without features, Hunter's MM (ML or Gamma-prior MAP)",
        ("--shape", "--rate", "--max-iter", "--tol"),
    ),
    ModelEntry(
        "rank",
        "pl-gibbs",
        "crowdbayes.models.plackett_luce.featureless:PlackettLuceGibbs",
        "Plackett-Luce without features, Caron-Doucet Gibbs sampler",
        ("--shape", "--rate", "--samples"),
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    "._base": ("FeatureModel", "ItemScoreModel", "PlackettLuceModel"),
    ".featureless": ("PlackettLuceGibbs", "PlackettLuceMM"),
    ".map": ("PlackettLuceMAP",),
    ".vi": ("PlackettLuceVI", "variational_bound_fit"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
