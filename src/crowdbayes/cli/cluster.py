"""``crowdbayes cluster fit``: crowd clustering from must-link / cannot-link judgments.

crowdbayes cluster fit --links LINKS [--features FILE] [--model links-vb|scdc|bayes-scdc]
                       [--clusters K] --out ASSIGNMENTS [--proba] [--workers-out FILE]
                       [--seed N] [--epochs N] [--device cpu|cuda] [--link-weight W]
                       [--restarts N] [--learning-rate R] [--hidden W,W]
                       [--cluster-head off|on|auto] [--head-balance G] [--save MODEL]
                       [--progress/--no-progress]

LINKS is a ``worker,left,right,label`` table (label 1 = must-link, 0 = cannot-link; CSV, TSV or
Parquet). ``links-vb`` (:class:`~crowdbayes.models.clustering.LinkClustering`, numpy) clusters
the linked items from the links alone. ``scdc`` and ``bayes-scdc`` (Luo et al. 2018; PyTorch,
``pip install 'crowdbayes[deep]'``) also model the items' features and so cluster every item
with features, linked or not; they need ``--features``:

- a table (CSV/TSV/Parquet) with an ``item`` column (the ids used in LINKS) and numeric
  feature columns, one row per item; or
- a ``.npy`` array of shape ``(n_items, ...)`` whose row ``i`` is item ``i``: the ids in LINKS
  are then the integers ``0 … n_items−1``.

ASSIGNMENTS has one row per item: ``item, cluster, probability`` (the posterior probability of
the chosen cluster), and with ``--proba`` also ``p_0 … p_{K−1}``. ``--workers-out`` writes each
worker's estimated sensitivity ``alpha`` and specificity ``beta``. A summary goes to stderr:
the counts, the bound per epoch (per sweep for links-vb) with the epoch whose state was kept,
and per worker α and β with their 90% credible intervals (SCDC: point estimates).

A worker judging the same pair more than once is kept with a warning (``--duplicates keep``, the
default, as for labels); ``drop`` keeps one row per agreeing repeat and drops contradicted
pairs, ``error`` refuses the file. ``--latent-dim`` defaults to 8 or the number of features if
fewer. BayesSCDC warns when a restart collapses (its clusters put most pairs the links call
cannot-link together) and restarts (issue 19).

``--link-weight W`` raises the link likelihood to the power W (default 1, the paper's model):
below 1 for links derived from groupings with ``--cluster-head off`` (every pair of a worker's
sorted task counts as a judgment, which over-counts them: 0.5 on the MNIST-style tasks), above
1 for sparse links that describe a grouping the features do not show (30 for SCDC and BayesSCDC
on the CMU faces by pose). ``--restarts N`` keeps the best objective of N fits.
``--cluster-head on`` (bayes-scdc) computes q(z) with a network over the features that feeds
the link likelihood, as SCDC does: for sparse links (a few per item), with which the paper's
per-item q(z) collapses; ``auto`` turns it on below 10 links per linked item. The head also
lets the features correct a worker no one else checked, on sorted tasks (MNIST, 36 images per
task: ``--cluster-head on --link-weight 1 --head-balance 0.05 --learning-rate 1e-3 --epochs 60
--clusters 50 --hidden 500,500 --decoder bernoulli --batch-size 128``, issue 19); keep
``--head-balance`` small when ``--clusters`` is well above the number of groups, since the
balance term spreads the items over every cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.features import read_features
from ..data.io import read_table, table_writer, write_atomically
from ..data.links import Links
from ._common import CommandError, show_progress
from ._models import (
    TABLES,
    ModelSpec,
    ModelTable,
    Option,
    layer_widths,
    non_negative_float,
    positive_float,
    positive_int,
)
from ._outputs import add_output

_DEEP = (
    "--epochs",
    "--device",
    "--latent-dim",
    "--hidden",
    "--batch-size",
    "--decoder",
    "--link-weight",
    "--restarts",
    "--learning-rate",
)
#: the paper's faces and MNIST settings, and K = 10 for every model on the command line;
#: ``--latent-dim`` defaults to at most the number of features (:func:`_fit_latent_dim`)
_DEEP_DEFAULTS = {"n_clusters": 10, "epochs": 20, "latent_dim": 8}

CLUSTER = ModelTable(
    "cluster",
    [
        ModelSpec(
            "links-vb",
            "crowdbayes.models.clustering:LinkClustering",
            "links only: mean-field variational Bayes, numpy",
            ("--clusters", "--max-iter", "--tol"),
        ),
        ModelSpec(
            "scdc",
            "crowdbayes.models.clustering.deep:SCDC",
            "SCDC: deep generative model of the features + two-coin links (PyTorch)",
            ("--clusters", *_DEEP),
            cli_defaults=_DEEP_DEFAULTS,
        ),
        ModelSpec(
            "bayes-scdc",
            "crowdbayes.models.clustering.deep:BayesSCDC",
            "BayesSCDC: fully Bayesian SCDC, natural-gradient VB (PyTorch)",
            ("--clusters", *_DEEP, "--cluster-head", "--head-balance"),
            cli_defaults=_DEEP_DEFAULTS,
        ),
    ],
    [
        Option(
            "--clusters",
            "n_clusters",
            "K, the number of clusters at most (default 10)",
            positive_int("--clusters"),
        ),
        Option("--max-iter", "max_iter", "sweeps at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
        Option("--epochs", "epochs", "training epochs (default 20)", positive_int("--epochs")),
        Option("--device", "device", "torch device (default cpu)", choices=("cpu", "cuda")),
        Option(
            "--latent-dim",
            "latent_dim",
            "dimension of the latent x (default 8, at most the number of features)",
            positive_int("--latent-dim"),
        ),
        Option(
            "--hidden",
            "hidden",
            "widths of the networks' hidden layers, comma-separated (model default 40,40; "
            "the MNIST benchmarks use 500,500)",
            layer_widths("--hidden"),
            metavar="W,W",
        ),
        Option(
            "--batch-size",
            "batch_size",
            "items per minibatch (model default)",
            positive_int("--batch-size"),
        ),
        Option(
            "--decoder",
            "decoder",
            "p(o | x): gaussian (default) or bernoulli (features in [0, 1])",
            choices=("gaussian", "bernoulli"),
        ),
        Option(
            "--link-weight",
            "link_weight",
            "power W on the link likelihood (default 1; <1 tempers links from sorted tasks "
            "without the cluster head)",
            positive_float("--link-weight"),
        ),
        Option(
            "--restarts",
            "n_init",
            "fits from different starts; the best bound is kept (model default: 3 for "
            "bayes-scdc, 1 for scdc)",
            positive_int("--restarts"),
        ),
        Option(
            "--cluster-head",
            "cluster_head",
            "q(z) from a network over the features that feeds the links: off (default), on, "
            "or auto (on below 10 links per linked item); for sparse links",
            choices=("off", "on", "auto"),
        ),
        Option(
            "--head-balance",
            "head_balance",
            "with the cluster head: weight of the entropy of its mean cluster distribution "
            "(model default 0.5; 0.05 when --clusters is well above the number of groups)",
            non_negative_float("--head-balance"),
        ),
        Option(
            "--learning-rate",
            "learning_rate",
            "Adam rate of the networks (model default: 5e-3 bayes-scdc, 1e-3 scdc; 1e-3 for "
            "large networks on images)",
            positive_float("--learning-rate"),
        ),
    ],
    default="links-vb",
)
TABLES["cluster"] = CLUSTER


def register(commands) -> None:
    """Add the ``cluster`` command to the top-level sub-parsers."""
    cluster = commands.add_parser("cluster", help="cluster items from crowd must/cannot-links")
    actions = cluster.add_subparsers(dest="action", required=True)
    fit = actions.add_parser(
        "fit",
        help="infer each item's cluster and each worker's sensitivity and specificity",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=CLUSTER.epilog(),
    )
    fit.add_argument("--links", required=True, help="worker,left,right,label table (label 0/1)")
    fit.add_argument(
        "--features",
        help="item features (scdc, bayes-scdc): a table with an 'item' column and numeric "
        "columns, or a .npy array whose row i is item i",
    )
    add_output(fit, "--out", "write item,cluster,probability here", required=True)
    fit.add_argument("--proba", action="store_true", help="add every cluster's probability")
    add_output(fit, "--workers-out", "write each worker's alpha/beta estimates here")
    add_output(fit, "--save", "write the fitted model here (.npz, no pickle)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument(
        "--duplicates",
        choices=["error", "keep", "drop"],
        default="keep",
        help="a worker judging the same pair twice: keep every row with a warning (default, "
        "as for labels), drop repeats and contradicted pairs, or refuse",
    )
    fit.add_argument("--worker-column", default="worker")
    fit.add_argument("--left-column", default="left")
    fit.add_argument("--right-column", default="right")
    fit.add_argument("--label-column", default="label")
    fit.add_argument("--item-column", default="item", help="id column of a --features table")
    CLUSTER.add_arguments(fit)
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    fit.set_defaults(handler=_cluster_fit)


# ------------------------------------------------------------------------------ inputs
def _read_links_table(args: argparse.Namespace) -> pd.DataFrame:
    columns = (args.worker_column, args.left_column, args.right_column)
    return read_table(args.links, what="links", id_columns=columns)


def _read_npy(path: str) -> np.ndarray:
    if not Path(path).exists():
        raise FileNotFoundError(f"features: file not found: {path}")
    try:
        values = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ValueError(f"features: {path} is not a numeric .npy array ({err})") from None
    if values.ndim < 2 or len(values) == 0:
        raise ValueError(
            f"features: expected an array of shape (n_items, n_features, ...); got {values.shape}"
        )
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise ValueError(f"features: the array must be numeric; got dtype {values.dtype}")
    values = values.astype(np.float32 if values.dtype == np.float32 else np.float64)
    bad = ~np.isfinite(values.reshape(len(values), -1))
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(
            f"features: {int(bad.any(axis=1).sum())} row(s) hold missing or infinite values "
            f"(first: item {row})"
        )
    return values


def _is_npy(path: str) -> bool:
    """Whether ``path`` names a NumPy ``.npy`` array: by its name, or by its content."""
    if path.lower().endswith(".npy"):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # the table reader names the problem


def _integer_ids(table: pd.DataFrame, columns: tuple[str, str]) -> pd.DataFrame:
    """Ids read as text from a file become integers, to index the rows of a .npy array."""
    table = table.copy()
    for column in columns:
        if column not in table.columns:
            continue  # Links names the missing column
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() | (values != values.round())
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"links: column {column!r} must hold integer row numbers of the .npy features; "
                f"got {table[column].iloc[row]!r} at row {row}"
            )
        table[column] = values.astype(np.int64)
    return table


def _load_links(args: argparse.Namespace, deep: bool) -> Links:
    table = _read_links_table(args)
    names = dict(
        worker=args.worker_column,
        left=args.left_column,
        right=args.right_column,
        label=args.label_column,
        duplicates=args.duplicates,
    )
    if not deep:
        return Links(table, **names)
    if _is_npy(args.features):
        features = _read_npy(args.features)
        table = _integer_ids(table, (args.left_column, args.right_column))
        return Links(table, features, **names)
    features = read_features(
        args.features, id_column=args.item_column, what="features", also="a .npy array"
    )
    return Links(table, features, **names)


# ------------------------------------------------------------------------------ models
def _check_options(args: argparse.Namespace) -> bool:
    """Whether the model is a deep one; refuses --features where it does not apply."""
    deep = args.model != "links-vb"
    if not deep and args.features is not None:
        raise CommandError(
            "--features is used by --model scdc or bayes-scdc; links-vb clusters from the "
            "links alone"
        )
    if deep and args.features is None:
        raise CommandError(
            f"--model {args.model} needs --features: the items' features (a table with an "
            "'item' column, or a .npy array)"
        )
    return deep


def _import_torch(model: str):
    """PyTorch, imported only for the deep models so that links-vb never needs it."""
    try:
        import torch
    except ImportError:
        raise CommandError(
            f"--model {model} needs PyTorch: pip install 'crowdbayes[deep]' (or use --model "
            "links-vb)"
        ) from None
    return torch


def _make_model(args: argparse.Namespace, progress: bool):
    model = CLUSTER.make(args, random_state=args.seed, progress=progress)
    if (
        getattr(model, "device", None) == "cuda"
        and not _import_torch(args.model).cuda.is_available()
    ):
        raise CommandError("--device cuda: PyTorch sees no CUDA device here; use --device cpu")
    return model


def _fit(model, links: Links):
    if links.observations is None:
        return model.fit(links)
    try:
        return model.fit(links.observations, links=links, item_ids=links.item_ids)
    except RuntimeError as err:  # torch's errors (device, memory) as one line
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CommandError(f"{type(model).__name__} failed: {first}") from err


# ------------------------------------------------------------------------------ outputs
def assignment_table(model, with_proba: bool = False) -> pd.DataFrame:
    """``cluster, probability`` (and ``p_<k>`` with ``with_proba``) per item, indexed by item.

    ``probability`` is the posterior probability of the assigned cluster.
    """
    assignments = model.assignments_
    proba = model.predict_proba().reindex(assignments.index)
    position = proba.columns.get_indexer(assignments.to_numpy())
    if (position < 0).any():
        raise ValueError("the model's assignments name clusters missing from predict_proba()")
    chosen = proba.to_numpy()[np.arange(len(proba)), position]
    table = pd.DataFrame(
        {"cluster": assignments.to_numpy(), "probability": chosen},
        index=pd.Index(assignments.index, name="item"),
    )
    if with_proba:
        columns = proba.copy()
        columns.columns = [f"p_{c}" for c in proba.columns]
        table = table.join(columns)
    return table


def _fit_to_links(model, links: Links, args: argparse.Namespace, deep: bool) -> None:
    """The settings a new model takes from the data before ``cluster fit`` (and ``report
    cluster``) fit it: a deep model's latent size (:func:`_fit_latent_dim`)."""
    if deep:
        _fit_latent_dim(model, links, args)


def _fit_latent_dim(model, links: Links, args: argparse.Namespace) -> None:
    """Without ``--latent-dim``, a latent space no larger than the features (a latent x of 8
    dimensions over 2 features has 6 dimensions of noise, in which the mixture's components
    overlap and one takes every item: pinwheel, issue 19)."""
    if args.latent_dim is not None:
        return
    n_features = int(np.prod(links.observations.shape[1:]))
    model.latent_dim = max(1, min(int(model.latent_dim), n_features))


def _interval_rows(workers: pd.DataFrame, limit: int = 10) -> list[str]:
    have = {"alpha_lower", "alpha_upper", "beta_lower", "beta_upper"} <= set(workers.columns)
    rows = []
    for worker, row in workers.head(limit).iterrows():
        if have:
            rows.append(
                f"  {worker}: alpha {row['alpha']:.3f} [{row['alpha_lower']:.3f}, "
                f"{row['alpha_upper']:.3f}], beta {row['beta']:.3f} [{row['beta_lower']:.3f}, "
                f"{row['beta_upper']:.3f}], {int(row['n_links'])} links"
            )
        else:
            rows.append(
                f"  {worker}: alpha {row['alpha']:.3f}, beta {row['beta']:.3f} (point "
                f"estimates), {int(row['n_links'])} links"
            )
    if len(workers) > limit:
        rows.append(f"  … {len(workers) - limit} more workers (--workers-out writes them all)")
    return rows


def fit_summary(model) -> list[str]:
    """The lines of the fit's summary after the one-line count: the bound's trace (deep models:
    per epoch, with the epoch kept; links-vb: per sweep) and each worker's α and β with their
    credible intervals where the model has them."""
    lines = []
    history = getattr(model, "history_", None) or getattr(model, "elbo_history_", None)
    history = list(history or [])
    if history:
        shown = history if len(history) <= 12 else history[:4] + [None] + history[-7:]
        trace = ", ".join("…" if value is None else f"{value:.5g}" for value in shown)
        what = "epoch" if hasattr(model, "best_epoch_") else "iteration"
        lines.append(f"bound per {what} ({len(history)}): {trace}")
        if hasattr(model, "best_epoch_"):
            lines.append(
                f"kept: the state after epoch {model.best_epoch_ + 1} (bound "
                f"{history[model.best_epoch_]:.5g}); restarts run {model.n_restarts_}, "
                f"collapsed {model.collapsed_restarts_}"
            )
    workers = getattr(model, "workers_", None)
    if workers is not None and len(workers):
        level = getattr(model, "credible_level", None)
        head = f"workers ({int(round(100 * level))}% intervals)" if level else "workers"
        lines.append(f"{head}:")
        lines += _interval_rows(workers)
    return lines


def _cluster_fit(args: argparse.Namespace) -> None:
    deep = _check_options(args)
    if deep:
        _import_torch(args.model)  # fail fast, before reading the data
    model = _make_model(args, show_progress(args.progress))
    links = _load_links(args, deep)
    _fit_to_links(model, links, args, deep)
    start = time.perf_counter()
    _fit(model, links)
    seconds = time.perf_counter() - start
    table = assignment_table(model, args.proba)
    outputs = [(args.out, table_writer(table))]
    if args.workers_out:
        workers = model.workers_.rename_axis("worker")
        outputs.append((args.workers_out, table_writer(workers)))
    if args.save:
        outputs.append((args.save, model.save))
    write_atomically(outputs)
    sizes = table["cluster"].value_counts()
    unlinked = len(table) - len(links.linked_codes)
    extra = f" ({unlinked} without links)" if unlinked > 0 else ""
    print(
        f"{type(model).__name__}: {links.n_links} links ({int(links.labels.sum())} must-link) "
        f"by {links.n_workers} workers; {len(table)} items clustered{extra}; "
        f"{model.n_clusters_used_} of {model.n_clusters} clusters used "
        f"(sizes {', '.join(map(str, sizes))}); fit in {seconds:.2f} s",
        file=sys.stderr,
    )
    for line in fit_summary(model):
        print(line, file=sys.stderr)
    if getattr(args, "head_balance", None) is not None and not model.uses_cluster_head_:
        print(
            "note: --head-balance had no effect: the fit did not use the cluster head "
            f"(--cluster-head {model.cluster_head}; auto uses it below 10 links per linked item)",
            file=sys.stderr,
        )
    written = ", ".join(path for path in (args.out, args.workers_out, args.save) if path)
    print(f"wrote {written}", file=sys.stderr)
