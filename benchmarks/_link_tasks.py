"""Facts about crowd links collected in tasks (one worker sorts the items of a task), shared by
the benchmarks on the real MNIST annotations (``cluster_semicrowd.py``) and on tasks simulated
in their scheme (``cluster_mnist.py``); not part of the package."""

from __future__ import annotations

import pandas as pd

from crowdbayes.metrics.clustering import misgrouped_items

__all__ = ["task_members", "unseen_misgrouped"]


def task_members(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, worker, item) of a links table with ``task``, ``worker``, ``left``
    and ``right`` columns."""
    return pd.concat(
        [
            frame[["task", "worker", "left"]].rename(columns={"left": "item"}),
            frame[["task", "worker", "right"]].rename(columns={"right": "item"}),
        ]
    ).drop_duplicates()


def unseen_misgrouped(frame: pd.DataFrame, groupings: pd.Series, truth: pd.Series) -> pd.DataFrame:
    """Per worker: the items its own groupings put wrongly (``misgrouped``) and, of those, the
    items no other worker saw (``unseen``: nothing in the links can correct them)."""
    members = task_members(frame)
    workers_per_item = members.groupby("item")["worker"].nunique()
    wrong = misgrouped_items(groupings, truth)
    wrong = wrong[wrong].index.to_frame(index=False)
    wrong = wrong.merge(members[["task", "worker"]].drop_duplicates(), on="task")
    wrong = wrong.drop_duplicates(["worker", "item"])
    wrong["unseen"] = workers_per_item.loc[wrong["item"]].to_numpy() == 1
    counts = wrong.groupby("worker").agg(misgrouped=("item", "size"), unseen=("unseen", "sum"))
    return counts.reindex(members["worker"].unique(), fill_value=0).sort_index()
