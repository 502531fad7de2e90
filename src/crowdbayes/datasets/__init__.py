"""Label sets on disk (``CROWDBAYES_DATA`` and the bundled RTE set), choice and preference sets
(``CROWDBAYES_DATA/prefs``), small bundled samples of every kind of judgment (:mod:`.samples`),
the list of every set that can be loaded (:func:`list_all`), sentence embeddings of item
texts, and seeded simulators.

The loaders are imported from their modules on first use (PEP 562): loading a label set does
not import the clustering or preference loaders.
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".clustering": (
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
        ),
        ".catalogue": ("SHARED_SETS", "list_all"),
        ".samples": ("SAMPLES", "copy_sample", "sample_path", "write_samples"),
        ".embeddings": ("CACHE_ENV_VAR", "cache_dir", "embed_texts"),
        ".loaders": ("DATA_ENV_VAR", "LabelDataset", "data_root", "list_datasets", "load_labels"),
        ".prefs": (
            "CarChoiceDataset",
            "UKPConvArgDataset",
            "load_car_choice",
            "load_ukpconvarg",
            "load_ukpconvarg_features",
            "text_statistics",
        ),
        ".synthetic": ("SyntheticLabels", "simulate_labels"),
        ".synthetic_values": ("SyntheticValues", "simulate_values"),
        ".synthetic_crowd": ("simulate_crowd_labels",),
    },
)
