"""Fixture outputs for checking that a refactoring leaves every model's results unchanged.

Each fixture fits one model on one small problem (the real data sets where issue 15 names them:
RTE for the label models, car choice for Plackett–Luce, one UKPConvArg fold for GPPL, simulated
communities, pinwheel for the deep models) and records every public fitted attribute (names
ending in ``_``) and a few predictions, flattened to numeric arrays.

    # before the change: record
    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/contract/contract_fixtures.py \\
        --record /tmp/fixtures_before
    # after it: record again and compare (exit status 1 if any value differs by more than --atol)
    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/contract/contract_fixtures.py \\
        --record /tmp/fixtures_after --compare /tmp/fixtures_before --output REPORT.md

``--only NAME ...`` runs a subset (``--group labels_sets|values|cli|models`` a group). Only
public names are used, so the script runs unchanged on both sides of a refactoring.

Groups (issue 39 extended the first one):

- ``models``: one small problem per model (the fixtures of issue 15);
- ``labels_sets``: every label model at its defaults on every shared label set (the
  hierarchical Gibbs model with short chains; KOS on the binary sets; GoldMajorityVote given
  the gold of a seeded half; OrdinalDawidSkene on S_Adult's ordered grades; CrowdClassifier
  on simulated features), every fitted attribute;
- ``values``: ContinuousAggregation (Gaussian and Student-t noise) on simulated answers;
- ``cli``: each command-line command on small inputs, every output file it writes (read
  back as tables; model files through the predictions of a later command). The commands use
  the spellings of the first command line (``--save``, ``cluster fit --links``), which the
  new one accepts for a release.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import write_markdown_report  # noqa: E402

Flat = dict[str, np.ndarray]


# ------------------------------------------------------------------------------- flattening
def flatten(value, prefix: str, out: Flat, depth: int = 0) -> None:
    """Numeric content of ``value`` under ``prefix`` (index labels as strings)."""
    if depth > 3 or value is None or callable(value) and not hasattr(value, "__dict__"):
        return
    if isinstance(value, (pd.Series, pd.DataFrame)):
        frame = value.to_frame() if isinstance(value, pd.Series) else value
        out[prefix + ".index"] = np.array([str(v) for v in frame.index])
        out[prefix + ".columns"] = np.array([str(v) for v in frame.columns])
        for j, column in enumerate(frame.columns):
            flatten(frame.iloc[:, j].to_numpy(), f"{prefix}[{column}]", out, depth + 1)
    elif isinstance(value, pd.Index):
        out[prefix] = np.array([str(v) for v in value])
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            out[prefix] = value.astype(np.float64)
        elif value.dtype.kind in "USO":
            try:
                out[prefix] = value.astype(np.float64)
            except (TypeError, ValueError):
                out[prefix] = np.array([str(v) for v in value.ravel()])
    elif isinstance(value, (bool, int, float, np.number, np.bool_)):
        out[prefix] = np.array(float(value))
    elif isinstance(value, str):
        out[prefix] = np.array(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}", out, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            flatten(item, f"{prefix}[{i}]", out, depth + 1)
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("crowdbayes"):
        for key, item in vars(value).items():
            flatten(item, f"{prefix}.{key}", out, depth + 1)


def fitted_attributes(model) -> Flat:
    """Every public fitted attribute (``name_``) of ``model``, flattened."""
    out: Flat = {}
    for name in sorted(dir(model)):
        if name.startswith("_") or not name.endswith("_") or name.endswith("__"):
            continue
        try:
            value = getattr(model, name)
        except Exception:  # noqa: BLE001 - a property that does not apply to this fit
            continue
        if hasattr(value, "state_dict"):  # torch modules: their parameters
            value = {k: v.detach().cpu().numpy() for k, v in value.state_dict().items()}
        flatten(value, name, out)
    return out


# ------------------------------------------------------------------------------- fixtures
def labels_fixtures() -> dict[str, Callable[[], Flat]]:
    from crowdbayes import (
        BayesianDawidSkene,
        CommunityDawidSkene,
        DawidSkene,
        HierarchicalAnnotation,
        MajorityVote,
    )
    from crowdbayes.datasets import load_labels

    def run(make) -> Callable[[], Flat]:
        def fixture() -> Flat:
            model = make().fit(load_labels("rte").labels)
            return fitted_attributes(model)

        return fixture

    return {
        "rte_mv": run(lambda: MajorityVote()),
        "rte_ds": run(lambda: DawidSkene()),
        "rte_ds_one_coin": run(lambda: DawidSkene(one_coin=True)),
        "rte_bayes_ds": run(lambda: BayesianDawidSkene()),
        "rte_community_ds": run(lambda: CommunityDawidSkene()),
        "rte_hierarchical": run(lambda: HierarchicalAnnotation(random_state=0)),
    }


def car_rankings():
    from crowdbayes import Rankings
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    queries = data.rankings["query"].unique()[:1500]
    table = data.rankings[data.rankings["query"].isin(queries)]
    items = data.items.loc[table["item"].unique()]
    items = (items - items.mean()) / items.std().replace(0.0, 1.0)
    return Rankings(table, items), items


def rank_fixtures() -> dict[str, Callable[[], Flat]]:
    from crowdbayes import (
        PlackettLuceGibbs,
        PlackettLuceMAP,
        PlackettLuceMM,
        PlackettLuceVI,
        Rankings,
    )

    def feature_model(make) -> Callable[[], Flat]:
        def fixture() -> Flat:
            rankings, items = car_rankings()
            model = make().fit(rankings)
            out = fitted_attributes(model)
            flatten(model.score(items.iloc[:50]), "score", out)
            flatten(model.rank(items.iloc[:30], random_state=0), "rank", out)
            return out

        return fixture

    def item_model(make) -> Callable[[], Flat]:
        def fixture() -> Flat:
            rng = np.random.default_rng(0)
            strength = rng.normal(size=40)
            left = rng.integers(40, size=1500)
            right = (left + rng.integers(1, 40, size=1500)) % 40
            wins = rng.random(1500) < 1 / (1 + np.exp(strength[right] - strength[left]))
            ids = np.array([f"i{k}" for k in range(40)])
            pairs = pd.DataFrame(
                {
                    "left": ids[left],
                    "right": ids[right],
                    "label": np.where(wins, ids[left], ids[right]),
                }
            )
            model = make().fit(Rankings.from_pairs(pairs))
            out = fitted_attributes(model)
            flatten(model.score(), "score", out)
            return out

        return fixture

    return {
        "car_pl_vi": feature_model(lambda: PlackettLuceVI(max_iter=60)),
        "car_pl_vi_gaussian": feature_model(
            lambda: PlackettLuceVI(eta=1.0, method="gaussian", max_iter=60)
        ),
        "car_pl_map": feature_model(lambda: PlackettLuceMAP()),
        "pairs_pl_mm": item_model(lambda: PlackettLuceMM()),
        "pairs_pl_gibbs": item_model(lambda: PlackettLuceGibbs(random_state=0)),
    }


def ukp_fold():
    from crowdbayes.datasets.prefs import load_ukpconvarg

    data = load_ukpconvarg("strict", embed=True)
    topic = sorted(data.pairs["topic"].unique())[0]
    pairs, features = data.pairs, data.features
    train = pairs[pairs["topic"] != topic][["left", "right", "label"]].reset_index(drop=True)
    test = pairs[pairs["topic"] == topic]
    return train, test, features


def prefs_fixtures() -> dict[str, Callable[[], Flat]]:
    from crowdbayes import GPPL, GPPLVI, CrowdGPPL, GPPreferenceEP
    from crowdbayes.models.communities import simulate_community_preferences
    from crowdbayes.models.gp_preference import GPPLLaplace

    def gppl_fold() -> Flat:
        train, test, features = ukp_fold()
        model = GPPL(random_state=0).fit(train, features)
        out = fitted_attributes(model)
        flatten(model.predict_proba(test["left"], test["right"]), "p_test", out)
        return out

    def small(make, crowd: bool = False) -> Callable[[], Flat]:
        def fixture() -> Flat:
            sim = simulate_community_preferences(
                n_users=12, n_items=25, n_communities=2, pairs_per_user=20, random_state=1
            )
            data = sim.comparisons if crowd else sim.comparisons.drop(columns="worker")
            model = make().fit(data, sim.items)
            out = fitted_attributes(model)
            flatten(model.predict_utility(list(sim.items.index[:10])), "utility", out)
            return out

        return fixture

    def communities() -> Flat:
        from crowdbayes import CommunityPreferences

        sim = simulate_community_preferences(
            n_users=30, n_items=20, n_communities=3, pairs_per_user=15, random_state=0
        )
        model = CommunityPreferences(random_state=0, n_sweeps=30, burn_in=10).fit(
            sim.comparisons, sim.items
        )
        out = fitted_attributes(model)
        left, right = sim.comparisons["left"][:20], sim.comparisons["right"][:20]
        flatten(model.predict_proba(left, right), "p", out)
        flatten(model.predict_proba(left, right, worker="user3"), "p_user3", out)
        return out

    return {
        "ukp_fold_gppl": gppl_fold,
        "sim_gppl": small(lambda: GPPL(n_inducing=10, random_state=0)),
        "sim_gppl_vi": small(lambda: GPPLVI()),
        "sim_gppl_laplace": small(lambda: GPPLLaplace()),
        "sim_gp_ep": small(lambda: GPPreferenceEP()),
        "sim_crowdgppl": small(
            lambda: CrowdGPPL(n_components=3, n_inducing=10, random_state=0), crowd=True
        ),
        "sim_communities": communities,
    }


def cluster_fixtures() -> dict[str, Callable[[], Flat]]:
    from crowdbayes import LinkClustering
    from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links

    def pinwheel(seed: int):
        X, y = make_pinwheel(random_state=seed)
        rng = np.random.default_rng(seed)
        annotated = rng.choice(len(X), size=100, replace=False)
        sim = simulate_pair_links(
            y,
            n_workers=20,
            pairs_per_worker=49,
            alpha=0.9,
            beta=0.9,
            items=annotated,
            random_state=seed,
        )
        return X, y, sim

    def links_vb() -> Flat:
        _, _, sim = pinwheel(0)
        model = LinkClustering(n_clusters=5, random_state=0).fit(sim.to_links())
        return fitted_attributes(model)

    def deep(name: str) -> Callable[[], Flat]:
        def fixture() -> Flat:
            import torch

            from crowdbayes.models.clustering.deep import SCDC, BayesSCDC

            torch.set_num_threads(1)
            X, _, sim = pinwheel(0)
            options = dict(
                n_clusters=15, latent_dim=2, hidden=(40, 40), decoder="gaussian", random_state=0
            )
            if name == "bayes_scdc":
                model = BayesSCDC(epochs=40, batch_size=50, **options)
            else:
                model = SCDC(epochs=20, batch_size=50, **options)
            model.fit(X, sim.to_links(observations=X))
            return fitted_attributes(model)

        return fixture

    return {
        "pinwheel_links_vb": links_vb,
        "pinwheel_bayes_scdc": deep("bayes_scdc"),
        "pinwheel_scdc": deep("scdc"),
    }


# ------------------------------------------------------------------------------- every label set
#: the shared label sets (``$CROWDBAYES_DATA/labels``)
LABEL_SETS = (
    "adult_content3",
    "bluebird",
    "d_possent",
    "d_product",
    "dog",
    "duchenne",
    "rte",
    "s_adult",
    "s_rel",
    "temp",
    "trec",
    "web",
    "wsd",
)


def label_models() -> dict[str, Callable[[], object]]:
    """Every nominal label model at its defaults (their seeds default to 0), by a short name."""
    import crowdbayes.models.labels as m

    return {
        "mv": lambda: m.MajorityVote(),
        "ds": lambda: m.DawidSkene(),
        "bayes_ds": lambda: m.BayesianDawidSkene(),
        "community_ds": lambda: m.CommunityDawidSkene(),
        "hierarchical": lambda: m.HierarchicalAnnotation(
            n_chains=2, n_warmup=20, n_samples=20, random_state=0
        ),
        "glad": lambda: m.GLAD(),
        "mace": lambda: m.MACE(),
        "mace_vb": lambda: m.MACE(variational=True),
        "kos": lambda: m.KOS(),
        "mmsr": lambda: m.MMSR(),
        "wawa": lambda: m.Wawa(),
        "zbs": lambda: m.ZeroBasedSkill(),
        "gold_mv": lambda: m.GoldMajorityVote(),
    }


def labels_set_fixtures() -> dict[str, Callable[[], Flat]]:
    from crowdbayes import Labels
    from crowdbayes.datasets import load_labels

    def run(set_name: str, model_name: str, make) -> Callable[[], Flat]:
        def fixture() -> Flat:
            data = load_labels(set_name)
            model = make()
            if model_name == "gold_mv":
                if data.gold is None:
                    return {}
                given = np.random.default_rng(0).random(len(data.gold)) < 0.5
                model.fit(data.labels, gold=data.gold[given])
            else:
                labels = Labels(data.labels)
                if model_name == "kos" and labels.n_classes != 2:
                    return {}
                model.fit(labels)
            return fitted_attributes(model)

        return fixture

    fixtures = {
        f"labels_{set_name}_{model_name}": run(set_name, model_name, make)
        for set_name in LABEL_SETS
        for model_name, make in label_models().items()
    }

    def ordinal() -> Flat:
        from crowdbayes.models.labels import OrdinalDawidSkene

        data = load_labels("s_adult")
        model = OrdinalDawidSkene().fit(Labels(data.labels, ordered=True))
        return fitted_attributes(model)

    def crowd_classifier() -> Flat:
        from crowdbayes.datasets import simulate_crowd_labels
        from crowdbayes.models.labels import CrowdClassifier

        rng = np.random.default_rng(0)
        centres = rng.normal(0, 1.5, (4, 5))
        truth = rng.integers(4, size=600)
        features = pd.DataFrame(
            centres[truth] + rng.normal(size=(600, 5)), columns=[f"f{k}" for k in range(5)]
        )
        table, _ = simulate_crowd_labels(
            truth, np.arange(300), n_workers=30, accuracy=(0.35, 0.85), random_state=0
        )
        model = CrowdClassifier().fit(Labels(table, classes=list(range(4))), features)
        return fitted_attributes(model)

    fixtures["labels_s_adult_ordinal_ds"] = ordinal
    fixtures["labels_simulated_crowd_classifier"] = crowd_classifier
    return fixtures


# ------------------------------------------------------------------------------- values
def values_fixtures() -> dict[str, Callable[[], Flat]]:
    def run(noise: str) -> Callable[[], Flat]:
        def fixture() -> Flat:
            from crowdbayes.datasets import simulate_values
            from crowdbayes.models.labels import ContinuousAggregation

            sim = simulate_values(random_state=0)
            model = ContinuousAggregation(noise=noise).fit(sim.values)
            return fitted_attributes(model)

        return fixture

    return {"values_gaussian": run("gaussian"), "values_student": run("student")}


# ------------------------------------------------------------------------------- command line
def _write_inputs(folder: Path) -> dict[str, Path]:
    """Small input files for the command line, written once per run."""
    from crowdbayes.datasets import load_labels, simulate_values
    from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links
    from crowdbayes.models.communities import simulate_community_preferences

    files = {}
    rte = load_labels("rte")
    files["labels"] = folder / "labels.csv"
    rte.labels.to_csv(files["labels"], index=False)
    files["gold"] = folder / "gold.csv"
    rte.gold.rename("label").rename_axis("task").reset_index().to_csv(files["gold"], index=False)
    files["values"] = folder / "values.csv"
    simulate_values(random_state=0).values.to_csv(files["values"], index=False)
    sim = simulate_community_preferences(
        n_users=12, n_items=25, n_communities=2, pairs_per_user=20, random_state=1
    )
    files["comparisons"] = folder / "comparisons.csv"
    sim.comparisons.to_csv(files["comparisons"], index=False)
    files["items"] = folder / "items.csv"
    sim.items.rename_axis("item").reset_index().to_csv(files["items"], index=False)
    files["pairs"] = folder / "pairs.csv"
    sim.comparisons[["left", "right", "worker"]].head(30).to_csv(files["pairs"], index=False)
    rankings, items = car_rankings_tables(300)
    files["rankings"] = folder / "rankings.csv"
    rankings.to_csv(files["rankings"], index=False)
    files["cars"] = folder / "cars.csv"
    items.rename_axis("item").reset_index().to_csv(files["cars"], index=False)
    files["car_pairs"] = folder / "car_pairs.csv"
    ids = items.index[:20].to_numpy()
    pd.DataFrame({"left": ids[:-1], "right": ids[1:]}).to_csv(files["car_pairs"], index=False)
    X, y = make_pinwheel(random_state=0)
    annotated = np.random.default_rng(0).choice(len(X), size=100, replace=False)
    links = simulate_pair_links(
        y, n_workers=20, pairs_per_worker=49, alpha=0.9, beta=0.9, items=annotated, random_state=0
    )
    files["links"] = folder / "links.csv"
    links.links.to_csv(files["links"], index=False)
    return files


def car_rankings_tables(n_queries: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    queries = data.rankings["query"].unique()[:n_queries]
    table = data.rankings[data.rankings["query"].isin(queries)]
    items = data.items.loc[table["item"].unique()]
    items = (items - items.mean()) / items.std().replace(0.0, 1.0)
    return table, items


#: each command: its arguments (``{name}`` an input file, ``@name`` an output file of this run)
#: and the outputs to compare
CLI_COMMANDS = {
    "cli_labels_fit_mv": (
        "labels fit {labels} --model mv --out @tasks --workers-out @workers --eval-gold {gold}",
        ("tasks", "workers"),
    ),
    "cli_labels_fit_ds": (
        "labels fit {labels} --model ds --out @tasks --workers-out @workers --save-model @model",
        ("tasks", "workers"),
    ),
    "cli_labels_fit_hierarchical": (
        "labels fit {labels} --model hierarchical --chains 2 --warmup 20 --samples 20 "
        "--out @tasks --workers-out @workers",
        ("tasks", "workers"),
    ),
    "cli_labels_fit_bayes_ds_gold": (
        "labels fit {labels} --model bayes-ds --gold {gold} --out @tasks",
        ("tasks",),
    ),
    "cli_labels_next": (
        "labels next {labels} --model ds --n 20 --out @next",
        ("next",),
    ),
    "cli_values_fit": (
        "values fit {values} --out @tasks --workers-out @workers",
        ("tasks", "workers"),
    ),
    "cli_rank_fit_predict": (
        "rank fit {rankings} --items {cars} --model pl-vi --max-iter 60 --out @scores "
        "--save @model ;; rank predict @model --pairs {car_pairs} --items {cars} --out @p",
        ("scores", "p"),
    ),
    "cli_rank_fit_mm": (
        "rank fit {rankings} --model pl-mm --shape 2 --rate 1 --out @scores",
        ("scores",),
    ),
    "cli_prefs_fit_predict_gppl": (
        "prefs fit {comparisons} --items {items} --model gppl --inducing 10 --save @model "
        "--out @utilities ;; prefs predict @model --pairs {pairs} --out @p",
        ("utilities", "p"),
    ),
    "cli_prefs_fit_predict_crowdgppl": (
        "prefs fit {comparisons} --items {items} --model crowdgppl --components 3 --inducing 10 "
        "--save @model --out @utilities ;; prefs predict @model --pairs {pairs} --out @p",
        ("utilities", "p"),
    ),
    "cli_prefs_fit_bt": (
        "prefs fit {comparisons} --model bt --save @model --out @utilities",
        ("utilities",),
    ),
    "cli_prefs_next": (
        "prefs next {comparisons} --items {items} --model gppl-vi --n 10 --out @next",
        ("next",),
    ),
    "cli_cluster_fit": (
        "cluster fit --links {links} --model links-vb --clusters 5 --out @assignments --proba "
        "--workers-out @workers",
        ("assignments", "workers"),
    ),
}


def cli_fixtures() -> dict[str, Callable[[], Flat]]:
    import shlex
    import tempfile

    state: dict[str, dict[str, Path]] = {}

    def inputs() -> dict[str, Path]:
        if "files" not in state:
            folder = Path(tempfile.mkdtemp(prefix="crowdbayes_cli_fixture_"))
            state["files"] = _write_inputs(folder)
        return state["files"]

    def run(name: str, line: str, compared: tuple[str, ...]) -> Callable[[], Flat]:
        def fixture() -> Flat:
            import contextlib
            import io

            from crowdbayes.cli import main

            files = inputs()
            out_dir = Path(tempfile.mkdtemp(prefix=f"{name}_"))
            outputs: dict[str, Path] = {}
            for command in line.split(";;"):
                words = []
                for word in shlex.split(command.format(**{k: str(v) for k, v in files.items()})):
                    if word.startswith("@"):
                        suffix = ".npz" if word == "@model" else ".csv"
                        outputs[word[1:]] = out_dir / f"{word[1:]}{suffix}"
                        word = str(outputs[word[1:]])
                    words.append(word)
                with contextlib.redirect_stdout(io.StringIO()):
                    with contextlib.redirect_stderr(io.StringIO()) as err:
                        status = main(words)
                if status != 0:
                    raise RuntimeError(f"{name}: exit {status}: {err.getvalue()}")
            out: Flat = {}
            for output in compared:
                flatten(pd.read_csv(outputs[output]), output, out)
            return out

        return fixture

    return {name: run(name, line, compared) for name, (line, compared) in CLI_COMMANDS.items()}


GROUPS = {
    "models": lambda: {
        **labels_fixtures(),
        **rank_fixtures(),
        **prefs_fixtures(),
        **cluster_fixtures(),
    },
    "labels_sets": labels_set_fixtures,
    "values": values_fixtures,
    "cli": cli_fixtures,
}


def all_fixtures(groups=None) -> dict[str, Callable[[], Flat]]:
    fixtures: dict[str, Callable[[], Flat]] = {}
    for group in groups or GROUPS:
        fixtures.update(GROUPS[group]())
    return fixtures


# ------------------------------------------------------------------------------- comparison
def compare(name: str, now: Flat, before: Flat, atol: float) -> tuple[str, bool]:
    """One report row: the largest absolute difference over shared numeric arrays."""
    missing = sorted(set(before) - set(now))
    added = sorted(set(now) - set(before))
    worst, where, same_text = 0.0, "", True
    for key in sorted(set(now) & set(before)):
        a, b = now[key], before[key]
        if a.dtype.kind in "US" or b.dtype.kind in "US":
            same_text &= a.shape == b.shape and bool(np.all(a.astype(str) == b.astype(str)))
            continue
        if a.shape != b.shape:
            worst, where = np.inf, f"{key} (shape {a.shape} vs {b.shape})"
            continue
        both_nan = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore"):
            diff = np.where(both_nan | (a == b), 0.0, np.abs(a - b))
        if diff.size and np.nanmax(np.where(np.isnan(diff), np.inf, diff)) > worst:
            worst = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
            where = key
    ok = worst <= atol and same_text and not missing
    notes = []
    if missing:
        notes.append(f"missing: {', '.join(missing[:5])}" + (" …" if len(missing) > 5 else ""))
    if added:
        notes.append(f"new: {', '.join(added[:5])}" + (" …" if len(added) > 5 else ""))
    if not same_text:
        notes.append("labels/ids differ")
    row = (
        f"| {name} | {len(set(now) & set(before))} | {worst:.3g} | {where or '—'} | "
        f"{'; '.join(notes) or '—'} | {'yes' if ok else '**no**'} |"
    )
    return row, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True, help="folder for this run's npz")
    parser.add_argument("--compare", type=Path, help="folder of an earlier --record")
    parser.add_argument("--only", nargs="*", help="fixture names (default: all)")
    parser.add_argument("--group", nargs="*", choices=list(GROUPS), help="fixture groups")
    parser.add_argument("--atol", type=float, default=1e-10)
    parser.add_argument("--output", type=Path, help="markdown report")
    parser.add_argument("--note", default="", help="a paragraph for the report (the baseline)")
    args = parser.parse_args()
    fixtures = all_fixtures(args.group)
    names = args.only or list(fixtures)
    args.record.mkdir(parents=True, exist_ok=True)
    rows, all_ok = [], True
    for name in names:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flat = fixtures[name]()
        seconds = time.perf_counter() - start
        np.savez(args.record / f"{name}.npz", **flat)
        print(f"{name}: {len(flat)} arrays in {seconds:.1f} s", flush=True)
        if args.compare is not None:
            with np.load(args.compare / f"{name}.npz") as archive:
                before = {key: archive[key] for key in archive.files}
            row, ok = compare(name, flat, before, args.atol)
            rows.append(row)
            all_ok &= ok
            print(row, flush=True)
    if args.compare is None:
        return
    lines = [
        args.note,
        "",
        f"Largest absolute difference over every shared numeric array (tolerance {args.atol:g}).",
        "",
        "| fixture | arrays | max abs diff | where | notes | equal |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    write_markdown_report(args.output, "Fixture outputs before and after a refactoring", lines)
    print("all equal" if all_ok else "DIFFERENCES FOUND")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
