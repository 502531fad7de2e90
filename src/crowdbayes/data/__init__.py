"""Data containers: validated once, integer-encoded once."""

from .comparisons import Comparisons, as_comparisons
from .labels import Labels, as_labels
from .links import Links, as_links
from .rankings import Rankings, as_rankings
from .values import Values, as_values

__all__ = [
    "Labels",
    "as_labels",
    "Rankings",
    "as_rankings",
    "Comparisons",
    "as_comparisons",
    "Links",
    "as_links",
    "Values",
    "as_values",
]
