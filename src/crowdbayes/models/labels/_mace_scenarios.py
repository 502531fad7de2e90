r"""Simulated spammer-heavy crowds with many workers: where MACE's story holds, and where a
wrong mode of its likelihood is easy to land in; and a label table recoded for crowd-kit's
MACE (:func:`appearance_sorted`), the reference these are compared with.

Each task has a true class drawn uniformly from ``n_classes`` and is labelled by
``labels_per_task`` distinct workers drawn uniformly from ``n_workers``. A share
``spammer_share`` of the workers are spammers who ignore the task; the others are right with
probability :math:`a_j \sim U(\text{accuracy})` and otherwise give one of the other classes
uniformly. A spammer is

- ``"uniform"``: a uniformly random class on every label (Hovy et al.'s near-uniform spammer);
- ``"one-class"``: always the same class, drawn uniformly per spammer (a worker who clicks the
  first button);
- ``"mixed"``: half of the spammers of each kind.

With 70% or more spammers and 5 labels per task, majority vote is close to a coin on many
tasks, and MACE's likelihood has modes in which a group of one-class spammers is read as
honest (Hovy et al. 2013, section 2: "we run EM with random restarts").

Hovy, D., Berg-Kirkpatrick, T., Vaswani, A. & Hovy, E. (2013). Learning whom to trust with
MACE. NAACL-HLT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._utils import RandomState, as_generator

__all__ = ["SPAMMER_KINDS", "SpammerCrowd", "appearance_sorted", "simulate_spammer_crowd"]

SPAMMER_KINDS = ("uniform", "one-class", "mixed")


@dataclass(frozen=True)
class SpammerCrowd:
    """A simulated crowd: ``labels`` (task, worker, label), ``truth`` per task and the ids of the
    ``spammers``."""

    labels: pd.DataFrame
    truth: pd.Series
    spammers: pd.Index


def simulate_spammer_crowd(
    *,
    n_tasks: int = 2000,
    n_workers: int = 200,
    labels_per_task: int = 5,
    n_classes: int = 2,
    spammer_share: float = 0.7,
    spammer_kind: str = "uniform",
    accuracy: tuple[float, float] = (0.65, 0.95),
    random_state: RandomState = 0,
) -> SpammerCrowd:
    """Draw one crowd as described in the module docstring; task ids ``t0, t1, ...``, worker
    ids ``w0, w1, ...``, classes ``0 .. n_classes - 1``."""
    if spammer_kind not in SPAMMER_KINDS:
        raise ValueError(f"spammer_kind must be one of {SPAMMER_KINDS}; got {spammer_kind!r}")
    if not 1 <= labels_per_task <= n_workers:
        raise ValueError(
            f"labels_per_task must be between 1 and n_workers={n_workers}; got {labels_per_task}"
        )
    if n_classes < 2 or not 0.0 <= spammer_share <= 1.0:
        raise ValueError(
            f"need n_classes >= 2 and 0 <= spammer_share <= 1; got {n_classes}, {spammer_share}"
        )
    rng = as_generator(random_state)
    truth = rng.integers(n_classes, size=n_tasks)
    spammer = np.zeros(n_workers, dtype=bool)
    spammer[rng.choice(n_workers, int(round(spammer_share * n_workers)), replace=False)] = True
    worker_accuracy = rng.uniform(*accuracy, size=n_workers)
    favourite = rng.integers(n_classes, size=n_workers)
    one_class = {"uniform": np.zeros(n_workers, bool), "one-class": np.ones(n_workers, bool)}.get(
        spammer_kind, np.arange(n_workers) % 2 == 0
    )

    task = np.repeat(np.arange(n_tasks), labels_per_task)
    worker = np.concatenate(
        [rng.choice(n_workers, labels_per_task, replace=False) for _ in range(n_tasks)]
    )
    true = truth[task]
    right = rng.random(len(task)) < worker_accuracy[worker]
    wrong = (true + rng.integers(1, n_classes, size=len(task))) % n_classes
    label = np.where(right, true, wrong)
    spam = np.where(one_class[worker], favourite[worker], rng.integers(n_classes, size=len(task)))
    label = np.where(spammer[worker], spam, label)

    task_ids = np.array([f"t{i}" for i in range(n_tasks)])
    worker_ids = np.array([f"w{j}" for j in range(n_workers)])
    frame = pd.DataFrame({"task": task_ids[task], "worker": worker_ids[worker], "label": label})
    return SpammerCrowd(
        labels=frame,
        truth=pd.Series(truth, index=pd.Index(task_ids, name="task"), name="truth"),
        spammers=pd.Index(worker_ids[spammer], name="worker"),
    )


def appearance_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    """The label table ``frame`` (task, worker, label) with its worker ids recoded and its rows
    reordered so that sorting the workers, or the classes, gives their order of first
    appearance: the workers become ``w0, w1, ...`` (zero-padded) in order of appearance, and
    the first row of each class moves to the top in the classes' sorted order. Tasks and label
    values are unchanged.

    crowd-kit 1.4.2's MACE indexes its parameters by ``pd.factorize`` codes (order of first
    appearance) but reads its expected spam counts back from a ``groupby(["worker",
    "label"])`` table (sorted order) by position, so on most tables each worker is given
    another worker's spam strategy over permuted classes. On the recoded table the two orders
    agree and it fits the model it describes (bluebird: 0.861 accuracy against 0.731 on the
    table as given; ``benchmarks/labels/results/mace_vs_crowdkit_notes.md``)."""
    out = frame[["task", "worker", "label"]]
    firsts = out.drop_duplicates("label").sort_values("label").index
    out = pd.concat([out.loc[firsts], out.drop(index=firsts)])
    codes, _ = pd.factorize(out["worker"])
    width = len(str(len(codes)))  # enough digits for any number of workers
    return out.assign(worker=[f"w{code:0{width}d}" for code in codes])
