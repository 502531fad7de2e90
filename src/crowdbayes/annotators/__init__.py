"""Worker noise models shared across task types.

A worker's behaviour on a task with true class ``k`` is a row ``θ[j, k, :]`` of a confusion matrix
(probabilities of each observed label). The label models combine these rows with the sparse
count matrix of :class:`crowdbayes.Labels`; the pieces here are the shared maths.

The names are imported from their modules on first use (PEP 562).
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".confusion": (
            "full_confusion_log_prior",
            "one_coin_log_prior",
            "confusion_statistics",
            "full_confusion_map",
            "label_log_likelihood",
            "one_coin_map",
        ),
    },
)
