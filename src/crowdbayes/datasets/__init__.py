"""Label sets on disk (``CROWDBAYES_DATA`` and the bundled RTE set) and seeded simulators."""

from .loaders import DATA_ENV_VAR, LabelDataset, data_root, list_datasets, load_labels
from .synthetic import SyntheticLabels, simulate_labels

__all__ = [
    "DATA_ENV_VAR",
    "LabelDataset",
    "SyntheticLabels",
    "data_root",
    "list_datasets",
    "load_labels",
    "simulate_labels",
]
