"""Data containers: validated once, integer-encoded once.

The containers are imported on first use (PEP 562), so that importing one of them, or this
package, does not import the others.
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".labels": ("Labels", "as_labels"),
        ".rankings": ("Rankings", "as_rankings"),
        ".comparisons": ("Comparisons", "as_comparisons"),
        ".links": ("Links", "as_links"),
        ".values": ("Values", "as_values"),
        ".battles": ("Battles", "as_battles"),
    },
)
