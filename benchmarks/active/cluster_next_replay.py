"""``crowdbayes cluster next`` replayed: how many links the expected-information choice
(:func:`crowdbayes.active.links.suggest_links`) needs against random pairs to reach the
clustering that every link gives (issue 43, item 4).

Real annotations (``--data mnist``, the default): the 57,330 links of Luo et al. (2018) on
2,759 MNIST training images (91 tasks: one worker sorted 36 images, every pair of the task a
link). The pool is the recorded links; a replay starts from ``--start`` (a fraction of the
pool) drawn at random, then each round an arm asks ``--batch`` (a fraction of the pool) pairs
among the pairs with a held-back link and the pool reveals one unused recorded link of each:

- ``random``: pairs drawn uniformly among them;
- ``next``: ``suggest_links`` over them (the items not linked yet are candidates too, with the
  prior predictive q(z), and come first), each item at most ``--per-item`` times per batch.

After every round ``LinkClustering`` (K = 10, ``--n-init`` restarts, ``--n-polish``) is fitted
cold to the links revealed. Score: the per-task NMI (the mean over the 91 tasks of the NMI
between the digits of a task's images and their clusters; an image with no link yet counts as
one shared "unclustered" label), the measure of ``benchmarks/cluster/cluster_semicrowd.py``.
The global NMI over the 2,759 images is shown too, but not used as the target: the 91 tasks
share few images (465 are in more than one task), so the global NMI is set by how the fit
happens to align the tasks' labellings, and varies from 0.22 to 0.28 between seeds with every
link (``cluster_semicrowd.md``): a target 0.01 below it is noise. Target: the per-task NMI of
the same fit with every link (same seed), minus 0.01; each arm's *fraction needed* is the
first fraction of the pool at which its curve reaches the target. The acceptance asks that
``next`` need at most 60% of what ``random`` needs.

Simulated (``--data pinwheel``): the pinwheel setting of Luo et al. (2018, §5.1) and
``benchmarks/cluster/cluster_pinwheel.py`` — 5 arms × 100 points, 100 of them annotated by 20
workers × 49 random pairs at α = β = 0.9: the pool is those 980 links, the model BayesSCDC with
every point's features (torch threads 1); NMI over all 500 points, target: the NMI with the
whole pool (same seed) minus 0.01.

Simulated on images (``--data mnist-test``): BayesSCDC on the 10,000 MNIST test images with
links simulated in the scheme of the real annotations (``simulate_link_tasks(sort=True)``,
annotation seed 0: 91 tasks × 36 images sorted by 48 workers, every pair of a task a link, as
``benchmarks/cluster/cluster_mnist.py --scheme sort``); BayesSCDC as ``gpu_mnist.sh`` sets it
(K = 50, d = 8, MLPs of 2 × 500, Bernoulli decoder, batch 128, Adam 1e-3, ``link_weight`` 0.5)
with ``--epochs`` and ``--n-init``, on ``--device``; score: the per-task NMI, every image
assigned by its features. With 30 epochs and one start a fit takes 44–58 s on one core of
this machine and 22–41 s on an H200 running four to eight fits side by side, where
``gpu_cluster_next.sh`` runs one process per seed and arm and the curves are merged here with
``--from-csv``.

``--fractions`` replaces ``--start``/``--batch`` by a fixed schedule: the pool fractions seen
at each fit (the first drawn at random), so that a slow model is fitted a dozen times rather
than once per 1%; *needs* is then read on that grid. ``--arms`` runs some of the arms (each
process fits the whole pool first for its own target); ``--curves FILE`` keeps every fit as a
CSV row, rewritten after each fit, and ``--from-csv FILE ...`` fits nothing and writes the
report from such files.

Usage (from the repository root; 2 shared cores: ``nice``)::

    nice -n 19 .venv/bin/python benchmarks/active/cluster_next_replay.py --seeds 0 1 2 \\
        --batch 0.01 --per-item 1 --output benchmarks/active/results/cluster_next_replay.md
    nice -n 19 .venv/bin/python benchmarks/active/cluster_next_replay.py --data pinwheel \\
        --seeds 0 1 2 3 4 --epochs 100 --n-init 1 --start 0.005 --batch 0.01 \\
        --max-fraction 0.3 --output benchmarks/active/results/cluster_next_replay_pinwheel.md

    benchmarks/active/gpu_cluster_next.sh        # on a CUDA machine, then --from-csv here

Results: ``cluster_next_replay.md`` (the command line's defaults), ``_batch025.md`` (batches
of 2.5%), ``_peritem2.md`` (``--per-item 2``), ``_pinwheel*.md``, ``_mnist_test.md``.

``CROWDBAYES_DATA`` must point at the data folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import markdown_table, write_markdown_report, write_report  # noqa: E402
from crowdbayes.active.links import suggest_links  # noqa: E402
from crowdbayes.active.replay import SeenAnswers, rows_by_key  # noqa: E402
from crowdbayes.data.links import Links  # noqa: E402
from crowdbayes.metrics.clustering import normalized_mutual_info, per_task_nmi  # noqa: E402

ARMS = ("random", "next")
#: the rows of the fit to the whole pool (the target)
FULL = "full"
UNCLUSTERED = -1


class LinkPool(SeenAnswers):
    """Recorded links ``worker, left, right, label``, some seen; a question ``(left, right)``
    is answered by a random unused link of that pair (either orientation)."""

    def __init__(self, links: pd.DataFrame, start: int, rng: np.random.Generator) -> None:
        self.table = links[["worker", "left", "right", "label"]].reset_index(drop=True)
        low = np.minimum(self.table["left"], self.table["right"]).to_numpy()
        high = np.maximum(self.table["left"], self.table["right"]).to_numpy()
        self._pair = list(zip(low.tolist(), high.tolist(), strict=True))
        self.items = pd.Index(np.unique(np.concatenate([low, high])))
        self.seen = np.zeros(len(self.table), dtype=bool)
        self.seen[rng.choice(len(self.table), start, replace=False)] = True
        order = rng.permutation(len(self.table))
        self._by_pair = rows_by_key([self._pair[i] for i in order], order)

    def links(self) -> Links:
        return Links(self.observed(), duplicates="keep")

    def candidates(self) -> pd.DataFrame:
        """Each pair with a held-back link once."""
        rest = self.table[~self.seen]
        keys = pd.Series([self._pair[i] for i in np.flatnonzero(~self.seen)])
        return rest.loc[~keys.duplicated().to_numpy(), ["left", "right"]].reset_index(drop=True)

    def reveal(self, questions: pd.DataFrame) -> int:
        revealed = 0
        for left, right in zip(questions["left"], questions["right"], strict=True):
            rows = self._by_pair.get((min(left, right), max(left, right)))
            while rows and self.seen[rows[-1]]:
                rows.pop()
            if rows:
                self.seen[rows.pop()] = True
                revealed += 1
        return revealed


# ------------------------------------------------------------------------------ problems
def fit_with_features(model, links: Links, points: np.ndarray):
    """``model`` (a deep model) fitted to ``links`` with every item's features, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(Links(links.to_frame(), points, duplicates="keep"))


class MnistProblem:
    """The real MNIST annotations, links-only ``LinkClustering``, per-task NMI."""

    name = "links-vb on the real MNIST annotations"

    def __init__(self, args) -> None:
        from crowdbayes.datasets.clustering import load_semicrowd_mnist, task_groupings

        data = load_semicrowd_mnist()
        self.links, self.truth = data.links, data.digits
        self.groupings = task_groupings(data.links)
        self.args = args

    def fit(self, links: Links, seed: int):
        from crowdbayes.models.clustering import LinkClustering

        model = LinkClustering(
            n_clusters=10,
            n_init=self.args.n_init,
            n_polish=self.args.n_polish,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(links)

    def scores(self, model) -> dict:
        assigned = model.assignments_.reindex(self.truth.index).fillna(UNCLUSTERED).astype(int)
        tasks = per_task_nmi(self.groupings, self.truth, assigned)["inferred"].mean()
        return {
            "score": float(tasks),
            "global_nmi": normalized_mutual_info(self.truth.to_numpy(), assigned.to_numpy()),
        }


class PinwheelProblem:
    """Pinwheel with simulated links as in Luo et al. (2018, §5.1): 5 arms × 100 points, 100
    of them annotated by 20 workers × 49 random pairs at α = β = 0.9; BayesSCDC (K = 15, d = 2,
    MLPs of 2 × 40, batch 50) with every point's features; NMI over the 500 points."""

    name = "BayesSCDC on pinwheel (simulated links)"

    def __init__(self, args) -> None:
        import torch

        from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links

        torch.set_num_threads(1)
        points, arms = make_pinwheel(random_state=0)
        self.points, self.truth = points, pd.Series(arms)
        annotated = np.random.default_rng(0).choice(len(points), size=100, replace=False)
        sim = simulate_pair_links(
            arms, n_workers=20, pairs_per_worker=49, alpha=0.9, beta=0.9, items=annotated,
            random_state=0,
        )  # fmt: skip
        self.links, self.args = sim.links, args

    def fit(self, links: Links, seed: int):
        from crowdbayes.models.clustering.deep import BayesSCDC

        epochs = self.args.epochs
        model = BayesSCDC(
            n_clusters=15, latent_dim=2, hidden=(40, 40), epochs=epochs, batch_size=50,
            warmup_epochs=max(epochs // 5, 1), n_init=self.args.n_init, random_state=seed,
        )  # fmt: skip
        return fit_with_features(model, links, self.points)

    def scores(self, model) -> dict:
        assigned = model.assignments_.reindex(self.truth.index)
        nmi = normalized_mutual_info(self.truth.to_numpy(), assigned.to_numpy())
        return {"score": nmi, "global_nmi": nmi}


class MnistTestProblem:
    """BayesSCDC on the MNIST test images with links simulated in the real annotations'
    scheme (module docstring); per-task NMI, and the NMI over every image."""

    name = "BayesSCDC on the MNIST test images (links simulated as the real annotations)"

    def __init__(self, args) -> None:
        import torch

        from crowdbayes.datasets.clustering import (
            load_mnist_test,
            simulate_link_tasks,
            task_groupings,
        )

        torch.set_num_threads(1)
        mnist = load_mnist_test()
        images = mnist.images.reshape(len(mnist.images), -1).astype(np.float32) / 255.0
        self.points = images[: args.subsample]
        self.truth = pd.Series(mnist.labels[: args.subsample])
        sim = simulate_link_tasks(self.truth, sort=True, random_state=0)
        self.links, self.groupings, self.args = sim.links, task_groupings(sim.links), args

    def fit(self, links: Links, seed: int):
        from crowdbayes.models.clustering.deep import BayesSCDC

        epochs = self.args.epochs
        model = BayesSCDC(
            n_clusters=50, latent_dim=8, hidden=(500, 500), decoder="bernoulli", epochs=epochs,
            batch_size=128, learning_rate=1e-3, warmup_epochs=max(epochs // 5, 1),
            n_init=self.args.n_init, link_weight=0.5, device=self.args.device,
            random_state=seed,
        )  # fmt: skip
        return fit_with_features(model, links, self.points)

    def scores(self, model) -> dict:
        assigned = model.assignments_.reindex(self.truth.index)
        tasks = per_task_nmi(self.groupings, self.truth, assigned)["inferred"].mean()
        return {
            "score": float(tasks),
            "global_nmi": normalized_mutual_info(self.truth.to_numpy(), assigned.to_numpy()),
        }


PROBLEMS = {"mnist": MnistProblem, "pinwheel": PinwheelProblem, "mnist-test": MnistTestProblem}
SCORE_NAMES = {"mnist": "per-task NMI", "pinwheel": "NMI", "mnist-test": "per-task NMI"}


# ------------------------------------------------------------------------------ replay
def schedule(args, size: int) -> list[int]:
    """The links seen at each fit: ``--fractions`` of the pool, or ``--start`` then one
    ``--batch`` more per round up to ``--max-fraction``."""
    last = args.max_fraction * size
    if args.fractions:
        counts = [max(2, round(f * size)) for f in args.fractions]
        return [c for c in counts if c <= last + 1e-9] or counts[:1]
    count, batch = max(2, round(args.start * size)), max(1, round(args.batch * size))
    counts = [count]
    while count < min(last, size):  # the first count at or past the last fraction is fitted
        count = min(count + batch, size)
        counts.append(count)
    return counts


def replay(problem, arm: str, seed: int, full: dict, args, publish=None) -> list[dict]:
    """One arm's curve: rounds until the target (``full``'s) is reached or the schedule
    ends."""
    rng = np.random.default_rng(seed)
    size = len(problem.links)
    counts = schedule(args, size)
    pool = LinkPool(problem.links, counts[0], rng)
    rows = []
    while True:
        started = time.perf_counter()
        links = pool.links()
        model = problem.fit(links, seed)
        fitted = time.perf_counter()
        rows.append(
            {
                "arm": arm,
                "seed": seed,
                "fraction": pool.n_observed / size,
                "pool": size,
                "target": full["target"],
                "global_target": full["global_target"],
                **problem.scores(model),
                "fit_seconds": fitted - started,
            }
        )
        if publish is not None:
            publish(rows)
        if rows[-1]["score"] >= full["target"] or pool.n_observed >= counts[-1]:
            return rows
        batch = next(count for count in counts if count > pool.n_observed) - pool.n_observed
        if arm == "random":
            candidates = pool.candidates()
            questions = candidates.iloc[rng.permutation(len(candidates))[:batch]]
        else:
            questions = suggest_links(
                model,
                links,
                batch,
                candidates=pool.candidates(),
                items=pool.items,
                per_item=args.per_item,
                random_state=rng,
            )
        rows[-1]["ask_seconds"] = time.perf_counter() - fitted
        if pool.reveal(questions) == 0:
            return rows


def summarise(curves: pd.DataFrame, score: str = "score") -> pd.DataFrame:
    """Per seed: the whole pool's ``score``, and the fraction each arm needed to reach its
    target (each arm's rows carry the targets of the whole-pool fit made before them, in their
    process: ``target`` for the score, ``global_target`` for the global NMI)."""
    target = "target" if score == "score" else "global_target"
    rows = []
    for seed, runs in curves.groupby("seed", sort=True):
        full = runs.loc[runs["arm"] == FULL, score]
        row = {"seed": seed, "full-link score": full.mean()}
        if len(full) > 1:
            row["full-link spread"] = full.max() - full.min()
        for arm in ARMS:
            curve = runs[runs["arm"] == arm]
            reached = curve.loc[curve[score] >= curve[target], "fraction"]
            row[f"{arm} needs"] = reached.min() if len(reached) else np.nan
            row[f"{arm} seen"] = curve["fraction"].max() if len(curve) else np.nan
        row["ratio next/random"] = row["next needs"] / row["random needs"]
        rows.append(row)
    return pd.DataFrame(rows)


def run_fits(problem, args) -> pd.DataFrame:
    """For each seed, the whole pool's fit (the target), then each of ``--arms``' curves;
    ``--curves`` is rewritten after every fit."""
    done: list[dict] = []

    def publish(current: list[dict]) -> None:
        if args.curves:
            write_report(Path(args.curves), pd.DataFrame(done + current).to_csv(index=False))

    for seed in args.seeds:
        started = time.perf_counter()
        model = problem.fit(Links(problem.links, duplicates="keep"), seed)
        full = {"arm": FULL, "seed": seed, "fraction": 1.0, "pool": len(problem.links)}
        full |= problem.scores(model)
        full["target"] = full["score"] - 0.01
        full["global_target"] = full["global_nmi"] - 0.01
        full["fit_seconds"] = time.perf_counter() - started
        done.append(full)
        publish([])
        for arm in args.arms:
            curve = replay(problem, arm, seed, full, args, publish)
            done += curve
            print(f"seed {seed} {arm}: {len(curve)} fits", flush=True)
    return pd.DataFrame(done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", choices=tuple(PROBLEMS), default="mnist")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--start", type=float, default=0.01, help="pool fraction seen first")
    parser.add_argument("--batch", type=float, default=0.01, help="pool fraction per round")
    parser.add_argument(
        "--fractions", type=float, nargs="+", help="a fixed schedule (replaces --start/--batch)"
    )
    parser.add_argument("--max-fraction", type=float, default=1.0)
    parser.add_argument("--per-item", type=int, default=1)
    parser.add_argument("--n-init", type=int, default=1)
    parser.add_argument("--n-polish", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=100, help="BayesSCDC (pinwheel, mnist-test)")
    parser.add_argument("--device", default="cpu", help="BayesSCDC (mnist-test)")
    parser.add_argument("--subsample", type=int, help="mnist-test: the first N images (smoke test)")
    parser.add_argument("--curves", help="CSV of every fit, rewritten after each")
    parser.add_argument("--from-csv", nargs="+", help="fit nothing: report these --curves files")
    parser.add_argument("--notes", help="a markdown file appended to the report")
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.fractions and sorted(set(args.fractions)) != args.fractions:
        parser.error("--fractions must increase")
    if args.fractions and not 0 < args.fractions[0] <= args.fractions[-1] <= 1:
        parser.error("--fractions must lie in (0, 1]")
    start = time.perf_counter()
    if args.from_csv:
        curves = pd.concat([pd.read_csv(path) for path in args.from_csv], ignore_index=True)
        if not on_schedule(curves, args):
            parser.error("--from-csv: the curves were not fitted on this command's schedule")
    else:
        curves = run_fits(PROBLEMS[args.data](args), args)
    summary = summarise(curves)
    for row in summary.to_dict("records"):
        print(
            f"seed {row['seed']}: " + ", ".join(f"{a} needs {row[f'{a} needs']:.3f}" for a in ARMS)
        )
    lines = report_lines(summary, curves, args)
    if args.notes:
        lines += ["", Path(args.notes).read_text(encoding="utf-8").rstrip()]
    details = [f"- run time: {time.perf_counter() - start:.0f} s"]
    if args.from_csv:
        details.append(
            f"- no fit here: the curves of the {len(args.from_csv)} files in the command (where "
            "and how they were fitted: the notes)"
        )
    title = f"cluster next replay: {PROBLEMS[args.data].name}"
    write_markdown_report(args.output, title, lines, details, echo=args.output is None)


def degenerate(summary: pd.DataFrame, first: float) -> list[str]:
    """A note when both arms reach the target at the start: nothing to choose."""
    at_start = (summary[[f"{arm} needs" for arm in ARMS]] <= first + 1e-9).all(axis=1)
    if not at_start.any():
        return []
    return [
        f"- on {int(at_start.sum())} of {len(summary)} seed(s) both arms reach the target with "
        f"the {first:.1%} of the pool seen at the start: the replay cannot tell them apart."
    ]


def unreached(summary: pd.DataFrame) -> list[str]:
    """A note per seed where an arm never reached the target (its curve ended first)."""
    lines = []
    for row in summary.to_dict("records"):
        for arm in ARMS:
            if np.isnan(row[f"{arm} needs"]) and not np.isnan(row[f"{arm} seen"]):
                lines.append(
                    f"- seed {row['seed']}: `{arm}` did not reach the target by "
                    f"{row[f'{arm} seen']:.1%} of the pool (where its curve ends)."
                )
    return lines


def paired_lines(curves: pd.DataFrame) -> list[str]:
    """Score of ``next`` minus ``random`` at the fractions where both were fitted on at least
    two seeds (a curve stops at its target, so later fractions hold fewer seeds)."""
    arms = curves[curves["arm"].isin(ARMS)].assign(at=lambda c: c["fraction"].round(6))
    wide = arms.pivot_table(index=["at", "seed"], columns="arm", values="score").dropna()
    if wide.empty or not set(ARMS) <= set(wide.columns):
        return []
    gap = (wide["next"] - wide["random"]).groupby(level="at")
    table = pd.DataFrame(
        {
            "seeds": gap.size(),
            "mean next − random": gap.mean(),
            "s.e.": gap.std() / np.sqrt(gap.size()),
            "next above": gap.apply(lambda g: int((g > 0).sum())),
        }
    )
    table = table[table["seeds"] >= 2].rename_axis("fraction")
    if table.empty:
        return []
    return [
        "",
        "Paired by seed, at each fraction both arms were fitted at (a curve ends at its target, "
        "so the later rows hold only the seeds still short of it):",
        "",
        markdown_table(table, digits=3),
    ]


def global_lines(curves: pd.DataFrame, args) -> list[str]:
    """For a deep model on MNIST, the same reading of the NMI over every image (its target:
    the whole pool's global NMI minus 0.01)."""
    if args.data != "mnist-test":
        return []
    summary = summarise(curves, "global_nmi")
    ratio = summary["ratio next/random"]
    return [
        "",
        "The same replay read on the NMI over all the images (target: the whole pool's minus "
        "0.01; the curves stop at the per-task target, so an arm may end before it reaches "
        "this one):",
        "",
        markdown_table(summary, digits=3, index=False),
        "",
        f"- {ratio_summary(ratio)}.",
        *unreached(summary),
    ]


def ratio_summary(ratio: pd.Series) -> str:
    """The mean and largest ratio, over the seeds where both arms reached the target."""
    return (
        f"mean ratio next/random over the {int(ratio.notna().sum())} of {len(ratio)} seed(s) "
        f"where both arms reach the target: {ratio.mean():.3f} (max {ratio.max():.3f})"
    )


def on_schedule(curves: pd.DataFrame, args) -> bool:
    """Whether every arm's fit in ``curves`` lies on the command's schedule (``--from-csv``
    describes the run from the command's options)."""
    size = int(curves["pool"].iloc[0])
    grid = np.round(np.array(schedule(args, size)) / size, 6)
    return bool(np.isin(curves.loc[curves["arm"] != FULL, "fraction"].round(6), grid).all())


def fit_line(args) -> str:
    if args.data == "mnist":
        return f"LinkClustering(K=10, n_init={args.n_init}, n_polish={args.n_polish}), cold."
    if args.data == "pinwheel":
        return f"BayesSCDC(K=15, epochs={args.epochs}, n_init={args.n_init}), cold."
    return (
        f"BayesSCDC(K=50, d=8, MLPs 2 × 500, Bernoulli, batch 128, Adam 1e-3, link_weight 0.5, "
        f"epochs={args.epochs}, n_init={args.n_init}) on {args.device}, cold."
    )


def report_lines(summary: pd.DataFrame, curves: pd.DataFrame, args) -> list[str]:
    ratio = summary["ratio next/random"]
    size = int(curves["pool"].iloc[0])
    if args.fractions:
        seen = "fits at " + ", ".join(f"{f:.0%}" for f in args.fractions) + " of the pool"
        design = f"{seen} (the first at random; *needs* is read on that grid)"
    else:
        design = f"start {args.start:.1%} of the pool at random, batches of {args.batch:.1%}"
    lines = [
        f"Pool: {size} links; {design}; `next` with at most {args.per_item} question(s) per "
        f"item per batch (the cap rising when short). Score: {SCORE_NAMES[args.data]}; target: "
        "the score of the same fit with every link (same seed) minus 0.01; *needs*: the first "
        f"fraction of the pool at which an arm reaches it. Fit: {fit_line(args)}",
        "",
        markdown_table(summary, digits=3, index=False),
        "",
        f"- {ratio_summary(ratio)}; acceptance: at most 0.6 on every seed — "
        f"{'met' if (ratio <= 0.6).all() else 'NOT met'} ({int((ratio <= 0.6).sum())} of "
        f"{len(ratio)} seed(s) at most 0.6).",
        *degenerate(summary, schedule(args, size)[0] / size),
        *unreached(summary),
        *global_lines(curves, args),
        *paired_lines(curves),
        "",
        "Curves (score and global NMI per round; `fit_seconds` of the cold fit, "
        "`ask_seconds` of choosing the batch; `full`: the fit to every link, which sets the "
        "target):",
        "",
        markdown_table(curves.drop(columns="pool"), digits=3, index=False),
    ]
    return lines


if __name__ == "__main__":
    main()
