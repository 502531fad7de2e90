"""Data containers: validated once, integer-encoded once."""

from .labels import Labels, as_labels

__all__ = ["Labels", "as_labels"]
