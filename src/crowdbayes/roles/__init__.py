"""The role of a model: one base per kind of judgment, between the estimator contract
(:class:`crowdbayes.base.Estimator`) and the model families.

Each role fixes, once, the results a fitted model of that kind holds and the methods that read
them — the same names, the same argument order and the same index conventions whatever the
family — so that the command line, the report and the user never need to know which model they
hold:

==================  ==========================  ================================================
role                judgment (``tags``)         models
==================  ==========================  ================================================
LabelAggregator     ``labels``: class labels    majority vote, Dawid–Skene and their kin
ValueAggregator     ``values``: numbers         ContinuousAggregation
RankingModel        ``rankings``                the Plackett–Luce models
PairwiseScorer      ``pairs``: comparisons      Bradley–Terry, Crowd-BT, the GP preference
                                                models, CommunityPreferences
Clusterer           ``links``                   LinkClustering, SCDC, BayesSCDC
==================  ==========================  ================================================

:class:`QuestionAsker` is the part of the roles that can say what to ask next
(``suggest``); :class:`PairQuestions` is the one implementation of it for pairwise
comparisons, shared by every pairwise family.
"""

from ..base import register_restore
from ._state_checks import restore as _restore_checked
from .clusters import Clusterer
from .items import ItemScorer, PairwiseScorer, RankingModel
from .labels import LabelAggregator
from .pair_questions import PairQuestions
from .questions import QuestionAsker
from .values import ValueAggregator

# every model class derives from a role, so a model file's class is restored only after this
# has run: the checks of what each role's results must look like apply to every load
register_restore(_restore_checked)

__all__ = [
    "Clusterer",
    "ItemScorer",
    "LabelAggregator",
    "PairQuestions",
    "PairwiseScorer",
    "QuestionAsker",
    "RankingModel",
    "ValueAggregator",
]
