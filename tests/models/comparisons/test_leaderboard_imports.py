"""Issue 44: a board of a few hundred models is fitted without importing scipy (numpy's
Cholesky, a breadth-first search for the graph checks), which would add 0.1 s to every
``crowdbayes leaderboard fit``; modules on that path import scipy where they use it."""

from __future__ import annotations

import json
import subprocess
import sys

_CODE = """
import json, sys
import numpy as np, pandas as pd
from crowdbayes.models.comparisons import Leaderboard
rng = np.random.default_rng(0)
a = rng.integers(0, 6, 300)
b = (a + rng.integers(1, 6, 300)) % 6
frame = pd.DataFrame({
    "model_a": [f"m{i}" for i in a],
    "model_b": [f"m{i}" for i in b],
    "winner": rng.choice(["model_a", "model_b", "tie"], 300),
})
for tie_model in ("half", "davidson"):
    Leaderboard(tie_model=tie_model, interval="laplace").fit(frame).board_
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "scipy")))
"""


def test_a_small_board_is_fitted_without_scipy():
    result = subprocess.run(
        [sys.executable, "-c", _CODE], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_the_graph_checks_agree_with_scipy_components():
    """:meth:`BattleCounts.reaches_all` (breadth-first search) against scipy's connected and
    strongly connected components, on sparse random boards that are often split."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from crowdbayes.data.battles import A_WINS, B_WINS, BattleCounts

    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(300):
        n, m = int(rng.integers(2, 12)), int(rng.integers(1, 20))
        a = rng.integers(0, n, m)
        b = (a + rng.integers(1, n, m)) % n
        counts = BattleCounts.of(n, a, b, rng.integers(0, 3, m), None)
        graph = csr_matrix((np.ones(counts.n_rows), (counts.a, counts.b)), shape=(n, n))
        connected = connected_components(graph, directed=False)[0] == 1
        src = np.concatenate(
            [counts.a[counts.outcome != B_WINS], counts.b[counts.outcome != A_WINS]]
        )
        dst = np.concatenate(
            [counts.b[counts.outcome != B_WINS], counts.a[counts.outcome != A_WINS]]
        )
        beats = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
        strong = connected_components(beats, directed=True, connection="strong")[0] == 1
        assert counts.reaches_all() == connected
        assert counts.reaches_all(wins=True) == strong
        seen.add((connected, strong))
    assert seen == {(False, False), (True, False), (True, True)}
