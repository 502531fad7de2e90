"""Brute-force helper for the clustering tests: every set partition of a small list."""

from __future__ import annotations


def set_partitions(items):
    """All partitions of a list (as lists of blocks), by recursion on the first element."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in set_partitions(rest):
        for i in range(len(smaller)):
            yield smaller[:i] + [[first] + smaller[i]] + smaller[i + 1 :]
        yield [[first]] + smaller
