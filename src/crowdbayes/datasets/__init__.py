"""Label sets on disk (``CROWDBAYES_DATA`` and the bundled RTE set), choice and preference sets
(``CROWDBAYES_DATA/prefs``), sentence embeddings of item texts, and seeded simulators."""

from .clustering import (
    REAL_ALPHA_PRIOR,
    REAL_BETA_PRIOR,
    FaceImages,
    MNISTImages,
    SemicrowdMNIST,
    SyntheticLinks,
    load_cmu_faces,
    load_mnist_test,
    load_mnist_train_labels,
    load_semicrowd_mnist,
    make_pinwheel,
    simulate_link_tasks,
    simulate_pair_links,
    task_groupings,
)
from .embeddings import CACHE_ENV_VAR, cache_dir, embed_texts
from .loaders import DATA_ENV_VAR, LabelDataset, data_root, list_datasets, load_labels
from .prefs import (
    CarChoiceDataset,
    UKPConvArgDataset,
    load_car_choice,
    load_ukpconvarg,
    load_ukpconvarg_features,
    text_statistics,
)
from .synthetic import SyntheticLabels, simulate_labels
from .synthetic_crowd import simulate_crowd_labels
from .synthetic_values import SyntheticValues, simulate_values

__all__ = [
    "REAL_ALPHA_PRIOR",
    "REAL_BETA_PRIOR",
    "FaceImages",
    "MNISTImages",
    "SemicrowdMNIST",
    "SyntheticLinks",
    "load_cmu_faces",
    "load_mnist_test",
    "load_mnist_train_labels",
    "load_semicrowd_mnist",
    "make_pinwheel",
    "simulate_link_tasks",
    "simulate_pair_links",
    "task_groupings",
    "CACHE_ENV_VAR",
    "DATA_ENV_VAR",
    "CarChoiceDataset",
    "LabelDataset",
    "SyntheticLabels",
    "SyntheticValues",
    "simulate_values",
    "simulate_crowd_labels",
    "UKPConvArgDataset",
    "cache_dir",
    "data_root",
    "embed_texts",
    "list_datasets",
    "load_car_choice",
    "load_labels",
    "load_ukpconvarg",
    "load_ukpconvarg_features",
    "simulate_labels",
    "text_statistics",
]
