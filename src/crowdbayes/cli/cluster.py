"""``crowdbayes cluster fit``: crowd clustering from must-link / cannot-link judgments.

crowdbayes cluster fit LINKS [--features FILE] [--model links-vb|scdc|bayes-scdc]
                       [--clusters K] [-o ASSIGNMENTS] [--proba] [--workers-out FILE]
                       [--seed N] [--epochs N] [--device cpu|cuda] [--link-weight W]
                       [--restarts N] [--learning-rate R] [--hidden W,W]
                       [--cluster-head off|on|auto] [--head-balance G] [--save-model MODEL]
                       [--progress/--no-progress] [--quiet]
crowdbayes cluster next LINKS --n N [--candidates PAIRS] [--per-item M] [--confidence P]
                        [the model options of fit] [-o NEXT]

LINKS is a ``worker,left,right,label`` table (label 1 = must-link, 0 = cannot-link; CSV, TSV or
Parquet). ``links-vb`` (:class:`~crowdbayes.models.clustering.LinkClustering`, numpy) clusters
the linked items from the links alone. ``scdc`` and ``bayes-scdc`` (Luo et al. 2018; PyTorch,
``pip install 'crowdbayes[deep]'``) also model the items' features and so cluster every item
with features, linked or not; they need ``--features``:

- a table (CSV/TSV/Parquet) with an ``item`` column (the ids used in LINKS) and numeric
  feature columns, one row per item; or
- a ``.npy`` array of shape ``(n_items, ...)`` whose row ``i`` is item ``i``: the ids in LINKS
  are then the integers ``0 … n_items−1``.

ASSIGNMENTS (``-o``; stdout without it) has one row per item: ``item, cluster, probability``
(the posterior probability of the chosen cluster), and with ``--proba`` also ``p_0 …
p_{K−1}``. ``--workers-out`` writes each worker's estimated sensitivity ``alpha`` and
specificity ``beta``. The summary (stdout with ``-o``, else stderr): the counts, the bound per
epoch (per sweep for links-vb) with the epoch whose state was kept, and per worker α and β
with their 90% credible intervals (SCDC: point estimates).

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

``cluster next`` fits the model to LINKS and writes the N item pairs most worth asking about
next (:func:`crowdbayes.active.links.suggest_links`): by the expected reduction in the entropy
of the pair's cluster assignments — the mutual information between the answer and the two
items' clusters under the fitted q(z) and the crowd's link-weighted sensitivity and
specificity (BALD, Houlsby et al. 2011). Each item appears at most ``--per-item`` times
(default 1) in the batch while enough pairs remain; pairs with an item that has no link yet
come first (coverage): ``--items`` lists every item to cluster, those with no link yet
included. Candidates: the ``left,right`` table ``--candidates`` (its items must be items of
LINKS, of ``--items`` or, with ``--features``, items with features), or every pair of those
items (a seeded sample of 50,000 when there are more). NEXT has ``left, right, score`` (nats),
``p_same`` (the posterior probability that the two share a cluster) and ``unlinked``; add a
``worker`` and a ``label`` column and append it to LINKS for the next round.
"""

from __future__ import annotations

import argparse

from ._models import (
    TABLES,
    ModelTable,
    Option,
    layer_widths,
    non_negative_float,
    open_unit,
    positive_float,
    positive_int,
)
from ._outputs import add_output
from ._parser import Parser, add_normalize_option
from ._record import Family, Inputs, add_escape_formulas, say, write_results

__all__ = ["CLUSTER", "FAMILY", "register"]

CLUSTER = ModelTable(
    "cluster",
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


# ------------------------------------------------------------------------------ options
def add_input_options(parser: Parser) -> None:
    add_normalize_option(parser)
    parser.add_argument(
        "--features",
        help="item features (scdc, bayes-scdc): a table with an 'item' column and numeric "
        "columns, or a .npy array whose row i is item i",
    )
    parser.add_argument(
        "--duplicates",
        choices=["error", "keep", "drop"],
        default="keep",
        help="a worker judging the same pair twice: keep every row with a warning (default, "
        "as for labels), drop repeats and contradicted pairs, or refuse",
    )
    parser.add_argument("--worker-column", default="worker")
    parser.add_argument("--left-column", default="left")
    parser.add_argument("--right-column", default="right")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--item-column", default="item", help="id column of a --features table")


def add_fit_options(parser: Parser) -> None:
    parser.add_argument("--proba", action="store_true", help="add every cluster's probability")


# ------------------------------------------------------------------------------ inputs
def read(args: argparse.Namespace, model) -> Inputs:
    """The links, with the items' observations for a model of features."""
    from ..data.features import read_features
    from ..data.io import read_table_rows
    from ..data.links import Links
    from ._inputs import integer_ids, is_npy, read_npy

    names = dict(
        worker=args.worker_column,
        left=args.left_column,
        right=args.right_column,
        label=args.label_column,
        duplicates=args.duplicates,
    )
    table = args.input  # read by Links, whose messages then name the file's lines
    if args.features is None:
        features = None
    elif is_npy(args.features):
        features = read_npy(args.features)
        columns = (args.worker_column, args.left_column, args.right_column)
        table, rows = read_table_rows(args.input, what="links", id_columns=columns)
        table = integer_ids(table, (args.left_column, args.right_column), rows)
    else:
        features = read_features(
            args.features, id_column=args.item_column, what="features", also="a .npy array"
        )
    return Inputs(Links(table, features, normalize=args.normalize, **names), str(args.input))


# ------------------------------------------------------------------------------ fit
def fit(model, inputs: Inputs, args: argparse.Namespace):
    """Fit ``model`` to the links, a model of features with a latent space no larger than
    the features unless ``--latent-dim`` is given (:func:`fit_latent_dim`)."""
    if model.tags.features != "none" and args.latent_dim is None:
        fit_latent_dim(model, inputs.data)
    return model.fit(inputs.data)


def fit_latent_dim(model, links) -> None:
    """A latent space no larger than the features (a latent x of 8 dimensions over 2
    features has 6 dimensions of noise, in which the mixture's components overlap and one
    takes every item: pinwheel, issue 19)."""
    from math import prod

    n_features = prod(links.observations.shape[1:])
    model.latent_dim = max(1, min(int(model.latent_dim), n_features))


# ------------------------------------------------------------------------------ summary
def _interval_rows(workers, limit: int = 10) -> list[str]:
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
    """The lines of the fit's summary after the one-line count: the bound's trace (per epoch,
    with the epoch kept, for models trained in epochs; per sweep for links-vb) and each
    worker's α and β with their credible intervals where the model has them."""
    lines = []
    traces = model.convergence_traces()
    if traces:
        history = list(traces[0][2])
        shown = history if len(history) <= 12 else history[:4] + [None] + history[-7:]
        trace = ", ".join("…" if value is None else f"{value:.5g}" for value in shown)
        what = "iteration" if model.best_epoch_ is None else "epoch"
        lines.append(f"bound per {what} ({len(history)}): {trace}")
        if model.best_epoch_ is not None:
            lines.append(
                f"kept: the state after epoch {model.best_epoch_ + 1} (bound "
                f"{history[model.best_epoch_]:.5g}); restarts run {model.n_restarts_}, "
                f"collapsed {model.collapsed_restarts_}"
            )
    workers = model.workers_
    if workers is not None and len(workers):
        level = model.credible_level_
        head = f"workers ({int(round(100 * level))}% intervals)" if level else "workers"
        lines.append(f"{head}:")
        lines += _interval_rows(workers)
    return lines


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    links = inputs.data
    sizes = table["cluster"].value_counts()
    unlinked = len(table) - len(links.linked_codes)
    extra = f" ({unlinked} without links)" if unlinked > 0 else ""
    lines = [
        f"{type(model).__name__}: {links.n_links} links ({int(links.labels.sum())} must-link) "
        f"by {links.n_workers} workers; {len(table)} items clustered{extra}; "
        f"{model.n_clusters_used_} of {model.n_clusters} clusters used "
        f"(sizes {', '.join(map(str, sizes))}); fit in {seconds:.2f} s",
        *fit_summary(model),
    ]
    if args.head_balance is not None and not model.uses_cluster_head_:
        lines.append(
            "note: --head-balance had no effect: the fit did not use the cluster head "
            f"(--cluster-head {model.cluster_head}; auto uses it below 10 links per linked item)"
        )
    return lines


# ------------------------------------------------------------------------------ next
def add_next_verb(actions) -> None:
    """``cluster next``: which item pairs to ask about next."""
    verb = FAMILY._verb_parser(
        actions, "next", "which item pairs to ask about next (fits the model first)", epilog=True
    )
    FAMILY.add_fit_arguments(verb)
    verb.add_argument("--n", required=True, help="how many pairs to suggest")
    verb.add_argument(
        "--candidates", metavar="PAIRS", help="candidate pairs: a left,right table (default: all)"
    )
    verb.add_argument(
        "--items",
        help="every item to cluster, linked or not yet: a table with an 'item' column (items "
        "without links come first)",
    )
    verb.add_argument(
        "--per-item",
        default="1",
        help="how often one item may appear in the batch before the cap rises (default 1)",
    )
    verb.add_argument(
        "--confidence",
        help="a pair whose same-cluster probability (or its complement) reaches this "
        "(above 0.5, below 1) is decided and never suggested",
    )
    add_output(verb, "--out", "write the pairs here (default: stdout)", short="-o")
    add_escape_formulas(verb)
    verb.set_defaults(handler=run_next)


def run_next(args: argparse.Namespace) -> None:
    """``cluster next``: fit, then write the pairs worth asking about."""
    import pandas as pd

    from ..active.links import candidate_codes, suggest_links
    from ._common import CommandError
    from ._inputs import id_column, ids_like, read_columns

    n = positive_int("--n")(args.n)
    per_item = positive_int("--per-item")(args.per_item)
    confidence = None if args.confidence is None else open_unit("--confidence")(args.confidence)
    if confidence is not None and confidence <= 0.5:
        raise CommandError(f"--confidence must lie in (0.5, 1); got {args.confidence}")
    model = FAMILY.make_model(args)
    inputs = FAMILY.read(args, model)
    known, items = inputs.data.item_ids, None
    if args.items is not None:
        items = pd.Index(ids_like(id_column(args.items, args.item_column, "items"), known))
        known = known.append(items).unique()
    candidates = None
    if args.candidates is not None:
        columns = (args.left_column, args.right_column)
        table = read_columns(args.candidates, "candidates", columns, ids=columns)
        candidates = pd.DataFrame(
            {
                "left": ids_like(table[args.left_column], known),
                "right": ids_like(table[args.right_column], known),
            }
        )
        candidate_codes(candidates, known)  # refused before the fit
    model = fit(model, inputs, args)
    pairs = suggest_links(
        model,
        inputs.data,
        n,
        candidates=candidates,
        items=items,
        per_item=per_item,
        confidence=confidence,
        random_state=args.seed,
    )
    if len(pairs) == 0:
        raise CommandError(
            f"nothing left to ask: every candidate is decided at --confidence {args.confidence}"
        )
    write_results(args, pairs, index=False)
    links = inputs.data
    say(
        args,
        [
            f"{type(model).__name__}: {links.n_links} links of {links.n_items} items; wrote "
            f"{len(pairs)} pair(s) to {args.out or 'stdout'} (information "
            f"{pairs['score'].sum():.3g} nats in all; {int((pairs['unlinked'] > 0).sum())} "
            "with an item not linked yet)"
        ],
    )


FAMILY = Family(
    name="cluster",
    judgment="links",
    help="cluster items from crowd must/cannot-links",
    table=CLUSTER,
    input_metavar="LINKS",
    input_help="worker,left,right,label table (label 1 = must-link, 0 = cannot-link)",
    add_input_options=add_input_options,
    read=read,
    item_table=lambda model, args: model.item_table(with_proba=getattr(args, "proba", False)),
    summary=summary,
    fit=fit,
    worker_table=lambda model: model.workers_.rename_axis("worker").reset_index(),
    add_fit_options=add_fit_options,
    input_alias="--links",
    more_verbs=add_next_verb,
)


def register(commands) -> None:
    """Add the ``cluster`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
