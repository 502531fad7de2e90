"""Write the simulated arena-size battles of the leaderboard benchmarks to a CSV file: the data
of ``leaderboard_speed.py`` (2,000,000 battles, 200 models of Zipf-like popularity, Davidson
ties ν = 0.26 — about 10% —, four standard-normal style covariates, seed 0).

Usage: ``python benchmarks/leaderboard/make_battles_csv.py battles.csv [--n-battles N]``
"""

import argparse

from crowdbayes.models.comparisons import simulate_battles

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("path")
parser.add_argument("--n-battles", type=int, default=2_000_000)
parser.add_argument("--n-models", type=int, default=200)
args = parser.parse_args()
sim = simulate_battles(
    args.n_models,
    args.n_battles,
    popularity=1.0,
    coef=(0.3, -0.2, 0.1, 0.0),
    tie_strength=0.26,
    random_state=0,
)
sim.battles.to_csv(args.path, index=False)
