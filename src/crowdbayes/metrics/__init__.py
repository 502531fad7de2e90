"""Scores for inferred results against gold standards and simulated truth."""

from .agreement import (
    agreement_table,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    worker_agreement,
)
from .clustering import (
    adjusted_mutual_info,
    adjusted_rand_index,
    contingency_table,
    link_worker_accuracy,
    misgrouped_items,
    mutual_information,
    normalized_mutual_info,
    per_task_nmi,
    unsupervised_accuracy,
)
from .labels import (
    accuracy,
    brier_score,
    log_loss,
    mean_absolute_error,
    worker_recovery_error,
)
from .ranking import (
    kendall_tau,
    pairwise_accuracy,
    pairwise_auc,
    rankings_to_pairs,
    top_k_metric,
)

__all__ = [
    "agreement_table",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "worker_agreement",
    "adjusted_mutual_info",
    "adjusted_rand_index",
    "contingency_table",
    "link_worker_accuracy",
    "per_task_nmi",
    "misgrouped_items",
    "mutual_information",
    "normalized_mutual_info",
    "unsupervised_accuracy",
    "accuracy",
    "brier_score",
    "kendall_tau",
    "log_loss",
    "mean_absolute_error",
    "pairwise_accuracy",
    "pairwise_auc",
    "rankings_to_pairs",
    "top_k_metric",
    "worker_recovery_error",
]
