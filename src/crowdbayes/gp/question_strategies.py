"""The names of the ways to value a question (:mod:`.questions`), in a module that imports
nothing: the command line lists them as choices before it needs NumPy."""

__all__ = ["PAIR_QUESTION_VALUES", "INFORMATION_VALUED"]

PAIR_QUESTION_VALUES = ("information", "power", "mixed", "uncertainty", "random")
#: the strategies that value a question by its information gain (they differ in the order)
INFORMATION_VALUED = ("information", "power", "mixed")
