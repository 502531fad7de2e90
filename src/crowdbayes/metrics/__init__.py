"""Scores for inferred results against gold standards and simulated truth."""

from .labels import accuracy, brier_score, log_loss, worker_recovery_error

__all__ = ["accuracy", "brier_score", "log_loss", "worker_recovery_error"]
