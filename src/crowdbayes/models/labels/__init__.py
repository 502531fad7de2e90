"""Label aggregation: majority vote and its weighted variants (Wawa, Zero-Based Skill, gold
majority vote), Dawid–Skene (EM, VB), GLAD, MACE, KOS, M-MSR, hierarchical annotation (Gibbs)."""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "labels",
        "mv",
        "crowdbayes.models.labels.majority_vote:MajorityVote",
        "majority vote (seeded random ties)",
    ),
    ModelEntry(
        "labels",
        "auto",
        "crowdbayes.models.labels.auto:AutoLabelModel",
        "the model that best predicts held-out labels (majority vote, one-coin, Dawid-Skene, "
        "Bayesian Dawid-Skene), chosen per data set without gold",
    ),
    ModelEntry(
        "labels",
        "ds",
        "crowdbayes.models.labels.dawid_skene:DawidSkene",
        "Dawid-Skene, EM",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "bayes-ds",
        "crowdbayes.models.labels.bayesian_dawid_skene:BayesianDawidSkene",
        "Bayesian Dawid-Skene, variational Bayes",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "community-ds",
        "crowdbayes.models.labels.community:CommunityDawidSkene",
        "community Dawid-Skene, learnt community priors (most accurate overall)",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "ordinal-ds",
        "crowdbayes.models.labels.ordinal:OrdinalDawidSkene",
        "ordinal Dawid-Skene for ordered grades (needs --ordered), EM",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "crowd-classifier",
        "crowdbayes.models.labels.crowd_classifier:CrowdClassifier",
        "classifier of task features trained with Dawid-Skene workers (needs --features), "
        "EM; consensus and quality scores",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "hierarchical",
        "crowdbayes.models.labels.hierarchical:HierarchicalAnnotation",
        "hierarchical annotation model, Gibbs",
        ("--chains", "--warmup", "--samples", "--hyperprior"),
    ),
    ModelEntry(
        "labels",
        "glad",
        "crowdbayes.models.labels.glad:GLAD",
        "GLAD: worker ability and task difficulty, EM",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "mace",
        "crowdbayes.models.labels.mace:MACE",
        "MACE: per-worker spamming probability, EM or variational Bayes",
        ("--max-iter", "--tol", "--variational"),
    ),
    ModelEntry(
        "labels",
        "kos",
        "crowdbayes.models.labels.kos:KOS",
        "Karger-Oh-Shah message passing (two classes only)",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "mmsr",
        "crowdbayes.models.labels.mmsr:MMSR",
        "M-MSR: one-coin skills by robust rank-one completion",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "wawa",
        "crowdbayes.models.labels.wawa:Wawa",
        "vote weighted by agreement with the majority",
    ),
    ModelEntry(
        "labels",
        "zbs",
        "crowdbayes.models.labels.zero_based_skill:ZeroBasedSkill",
        "zero-based skill: iteratively weighted vote",
        ("--max-iter", "--tol"),
    ),
    ModelEntry(
        "labels",
        "gold-mv",
        "crowdbayes.models.labels.gold_majority_vote:GoldMajorityVote",
        "vote weighted by accuracy on the --gold tasks (needs --gold)",
    ),
    ModelEntry(
        "values",
        "bias-noise",
        "crowdbayes.models.labels.continuous:ContinuousAggregation",
        "true value per task, bias and noise per worker (Gaussian or Student-t), VB",
        ("--noise", "--df", "--max-iter", "--tol", "--bounds"),
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    "._base": ("LabelModel",),
    ".auto": ("AutoLabelModel", "held_out_label_scores"),
    ".bayesian_dawid_skene": ("BayesianDawidSkene",),
    ".community": ("CommunityDawidSkene",),
    ".continuous": ("ContinuousAggregation",),
    ".crowd_classifier": ("CrowdClassifier",),
    ".dawid_skene": ("DawidSkene",),
    ".glad": ("GLAD",),
    ".gold_majority_vote": ("GoldMajorityVote",),
    ".hierarchical": ("HierarchicalAnnotation",),
    ".kos": ("KOS",),
    ".mace": ("MACE",),
    ".majority_vote": ("MajorityVote",),
    ".mmsr": ("MMSR",),
    ".ordinal": ("OrdinalDawidSkene",),
    ".statistics": ("LabelIds", "StatsLabelModel"),
    ".wawa": ("Wawa",),
    ".zero_based_skill": ("ZeroBasedSkill",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
