"""Scores for inferred results against gold standards and simulated truth.

Each metric is imported from its module on first use (PEP 562), so that scoring labels does
not import the agreement, clustering and ranking modules.
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".agreement": (
            "agreement_table",
            "cohen_kappa",
            "fleiss_kappa",
            "krippendorff_alpha",
            "worker_agreement",
        ),
        ".clustering": (
            "adjusted_mutual_info",
            "adjusted_rand_index",
            "contingency_table",
            "link_worker_accuracy",
            "per_task_nmi",
            "misgrouped_items",
            "mutual_information",
            "normalized_mutual_info",
            "unsupervised_accuracy",
        ),
        ".labels": (
            "accuracy",
            "brier_score",
            "log_loss",
            "mean_absolute_error",
            "worker_recovery_error",
        ),
        ".ranking": (
            "kendall_tau",
            "pairwise_accuracy",
            "pairwise_auc",
            "rankings_to_pairs",
            "top_k_metric",
        ),
    },
)
