"""Small samples of every kind of judgment, shipped inside the package for examples and a first
try: ``crowdbayes datasets copy NAME`` writes one to the current folder, and
:func:`sample_path` gives the path of a sample's file in Python.

===============  ===========  ===================================================================
sample           kind         files (main file first)
===============  ===========  ===================================================================
``rte``          labels       real: 8,000 labels of Snow et al. (2008), expert gold
``grades``       grades       simulated: grades 1–5, ordered-probit workers, gold
``numbers``      numbers      simulated: numeric answers, biased and noisy workers, truth
``rankings``     rankings     simulated: top-2 of 4 items per query, item features
``comparisons``  comparisons  simulated: pairwise preferences, two unreliable workers, features
``links``        links        simulated: must/cannot-links on a three-armed pinwheel, features
===============  ===========  ===================================================================

Every simulated sample is written by :func:`write_samples` from a fixed seed (a test checks that
the bundled files are exactly what it writes), and its ``SOURCE.txt`` says how it was made.
The generative models:

* grades: true grade ``g_i`` uniform on 1–5; worker ``j`` reports
  ``clip(round(g_i + b_j + s_j·e), 1, 5)`` with ``b_j ~ N(0, 0.3²)``, ``s_j ~ LogNormal(log
  0.5, 0.3²)`` and ``e ~ N(0, 1)``; two of the twelve workers have ``s_j = 2`` (sloppy). This is
  the ordered-probit rater of :class:`~crowdbayes.models.labels.OrdinalDawidSkene`
  (thresholds half-way between grades).
* numbers: :func:`~crowdbayes.datasets.simulate_values` (one worker in ten answers at random).
* rankings: item utility ``u = xᵀθ`` with two features and ``θ = (1.0, −0.5)``; each query shows
  four random items and records the first two of a Plackett–Luce draw (Gumbel-max: sort
  ``u + Gumbel noise``), so rank 1 and 2 are given and the other two are left empty.
* comparisons: utility ``u(x) = sin(x₁) + x₂/2`` of two features; a faithful worker prefers the
  item of higher ``u + N(0, 0.3²)`` noise (a probit answer), two of the eight workers give the
  opposite answer 70% of the time (the flip noise of Crowd-BT, Chen et al. 2013).
* links: :func:`~crowdbayes.datasets.make_pinwheel` with three arms of 30 points, and
  :func:`~crowdbayes.datasets.simulate_pair_links` with ten workers of sensitivity and
  specificity 0.9 judging 60 random pairs each.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._atomic import write_atomically
from .._utils import as_generator

__all__ = ["SAMPLES", "Sample", "copy_sample", "sample_path", "write_samples"]

BUNDLED_ROOT = Path(__file__).resolve().parent / "bundled"
_SEED = 20260601


@dataclass(frozen=True)
class Sample:
    """A bundled sample: its kind of judgment, its files (main file first), what it is, and the
    command that fits it once copied (``crowdbayes datasets copy NAME``)."""

    name: str
    kind: str
    files: tuple[str, ...]
    description: str
    command: str

    def copied_name(self, file: str) -> str:
        """The name a file gets when copied: ``<sample>.csv`` for the main file,
        ``<sample>_<file>`` for the others (so that every sample can share one folder)."""
        if file == self.files[0]:
            return f"{self.name}{Path(file).suffix}"
        return f"{self.name}_{file}"


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            "rte",
            "labels",
            ("labels.csv", "gold.csv"),
            "real: textual entailment, Snow et al. (2008); expert gold",
            "crowdbayes labels fit rte.csv --eval-gold rte_gold.csv",
        ),
        Sample(
            "grades",
            "grades",
            ("labels.csv", "gold.csv"),
            "simulated: ordered grades 1-5; two sloppy workers",
            "crowdbayes labels fit grades.csv --ordered --model ordinal-ds "
            "--eval-gold grades_gold.csv",
        ),
        Sample(
            "numbers",
            "numbers",
            ("values.csv", "truth.csv"),
            "simulated: numeric answers, biased and noisy workers",
            "crowdbayes values fit numbers.csv",
        ),
        Sample(
            "rankings",
            "rankings",
            ("rankings.csv", "items.csv"),
            "simulated: top-2 of 4 items per query, item features",
            "crowdbayes rank fit rankings.csv --features rankings_items.csv",
        ),
        Sample(
            "comparisons",
            "comparisons",
            ("comparisons.csv", "items.csv"),
            "simulated: pairwise preferences, two unreliable workers",
            "crowdbayes prefs fit comparisons.csv --features comparisons_items.csv",
        ),
        Sample(
            "links",
            "links",
            ("links.csv", "items.csv", "truth.csv"),
            "simulated: must/cannot-links on a three-armed pinwheel",
            "crowdbayes cluster fit links.csv --clusters 3",
        ),
    )
}


def _sample(name: str) -> Sample:
    if name not in SAMPLES:
        raise ValueError(f"no bundled sample named {name!r}; the samples are {sorted(SAMPLES)}")
    return SAMPLES[name]


def sample_path(name: str, file: str | None = None) -> Path:
    """The path of a bundled sample's file (the main file by default).

    >>> sample_path("comparisons", "items.csv").name
    'items.csv'
    """
    sample = _sample(name)
    file = sample.files[0] if file is None else file
    if file not in sample.files:
        raise ValueError(f"sample {name!r} has no file {file!r}; its files are {sample.files}")
    return BUNDLED_ROOT / name / file


def copy_sample(name: str, folder: str | os.PathLike = ".", *, force: bool = False) -> list[Path]:
    """Copy a sample's files into ``folder`` under their copied names
    (:meth:`Sample.copied_name`) and return the paths written.

    Nothing is written when any target exists (unless ``force``) or the folder does not.
    """
    sample = _sample(name)
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is not a directory (it is never created)")
    targets = [(sample_path(name, f), folder / sample.copied_name(f)) for f in sample.files]
    existing = [str(t) for _, t in targets if t.exists()]
    if existing and not force:
        raise ValueError(f"{', '.join(existing)}: already there; pass --force to overwrite")
    write_atomically([(target, _copier(source)) for source, target in targets], make_parents=False)
    return [target for _, target in targets]


def _copier(source: Path) -> Callable[[Path], None]:
    return lambda tmp: shutil.copyfile(source, tmp)


# --------------------------------------------------------------------------------- generators
def _grades(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    n_tasks, n_workers, per_task = 60, 12, 5
    truth = rng.integers(1, 6, n_tasks)
    bias = rng.normal(0.0, 0.3, n_workers)
    noise = np.exp(rng.normal(np.log(0.5), 0.3, n_workers))
    noise[:2] = 2.0
    rows = []
    for task in range(n_tasks):
        for worker in rng.choice(n_workers, per_task, replace=False):
            z = truth[task] + bias[worker] + noise[worker] * rng.standard_normal()
            rows.append((f"g{task:02d}", f"w{worker:02d}", int(np.clip(np.rint(z), 1, 5))))
    labels = pd.DataFrame(rows, columns=["task", "worker", "label"])
    gold = pd.DataFrame({"task": [f"g{t:02d}" for t in range(n_tasks)], "label": truth})
    return {"labels.csv": labels, "gold.csv": gold}


def _numbers(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    from .synthetic_values import simulate_values

    sim = simulate_values(50, 10, 5, random_share=0.1, random_state=rng)
    values = sim.values.assign(value=sim.values["value"].round(2))
    return {"values.csv": values, "truth.csv": sim.truth.round(2).reset_index()}


def _item_table(rng: np.random.Generator, n_items: int, prefix: str) -> pd.DataFrame:
    features = rng.normal(0.0, 1.0, (n_items, 2)).round(3)
    ids = [f"{prefix}{i:02d}" for i in range(n_items)]
    return pd.DataFrame({"item": ids, "x1": features[:, 0], "x2": features[:, 1]})


def _rankings(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    items = _item_table(rng, 20, "i")
    utility = items[["x1", "x2"]].to_numpy() @ np.array([1.0, -0.5])
    rows = []
    for query in range(80):
        shown = rng.choice(len(items), 4, replace=False)
        order = shown[np.argsort(-(utility[shown] + rng.gumbel(size=4)))]
        ranks = {order[0]: "1", order[1]: "2"}
        rows += [(f"q{query:02d}", items["item"][i], ranks.get(i, "")) for i in shown]
    return {
        "rankings.csv": pd.DataFrame(rows, columns=["query", "item", "rank"]),
        "items.csv": items,
    }


def _comparisons(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    items = _item_table(rng, 24, "a")
    utility = np.sin(items["x1"].to_numpy()) + items["x2"].to_numpy() / 2
    flip = np.array([0.7, 0.7] + [0.0] * 6)
    rows = []
    for worker in range(len(flip)):
        for _ in range(40):
            left, right = rng.choice(len(items), 2, replace=False)
            prefers_left = utility[left] - utility[right] + rng.normal(0, 0.3 * np.sqrt(2)) > 0
            if rng.random() < flip[worker]:
                prefers_left = not prefers_left
            winner = left if prefers_left else right
            ids = items["item"]
            rows.append((f"w{worker}", ids[left], ids[right], ids[winner]))
    table = pd.DataFrame(rows, columns=["worker", "left", "right", "label"])
    return {"comparisons.csv": table, "items.csv": items}


def _links(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    from .clustering import make_pinwheel, simulate_pair_links

    points, arms = make_pinwheel(3, 30, random_state=rng)
    ids = [f"p{i:02d}" for i in range(len(arms))]
    truth = pd.Series(arms, index=pd.Index(ids, name="item"), name="cluster")
    sim = simulate_pair_links(truth, n_workers=10, pairs_per_worker=60, random_state=rng)
    items = pd.DataFrame({"item": ids, "x": points[:, 0].round(3), "y": points[:, 1].round(3)})
    links = sim.links.assign(worker=[f"w{w}" for w in sim.links["worker"]])
    return {"links.csv": links, "items.csv": items, "truth.csv": truth.reset_index()}


_GENERATORS = {
    "grades": _grades,
    "numbers": _numbers,
    "rankings": _rankings,
    "comparisons": _comparisons,
    "links": _links,
}

_SOURCE = """dataset: crowdbayes sample '{name}' ({kind})
simulated: yes, by crowdbayes.datasets.samples.write_samples (seed {seed}); see that module's
  docstring for the generative model
licence: MIT, as crowdbayes
"""


def simulate_sample(name: str) -> dict[str, pd.DataFrame]:
    """The tables of a simulated sample, file name -> table, as :func:`write_samples` writes
    them (each sample has its own seed, so one can be remade alone)."""
    if name not in _GENERATORS:
        raise ValueError(f"no simulated sample named {name!r}; they are {sorted(_GENERATORS)}")
    seed = _SEED + list(_GENERATORS).index(name)
    return _GENERATORS[name](as_generator(seed))


def write_samples(root: str | os.PathLike = BUNDLED_ROOT) -> None:
    """Write every simulated sample to ``root/<name>/`` with its ``SOURCE.txt``
    (``python -c "from crowdbayes.datasets.samples import write_samples; write_samples()"``
    remakes the bundled files)."""
    for name in _GENERATORS:
        folder = Path(root) / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, table in simulate_sample(name).items():
            table.to_csv(folder / file, index=False)
        seed = _SEED + list(_GENERATORS).index(name)
        text = _SOURCE.format(name=name, kind=SAMPLES[name].kind, seed=seed)
        (folder / "SOURCE.txt").write_text(text, encoding="utf-8")
