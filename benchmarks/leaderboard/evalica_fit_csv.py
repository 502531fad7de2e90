"""The plain script the ``crowdbayes leaderboard fit`` command is timed against (issue 44):
read the battles CSV with pandas, fit ``evalica.bradley_terry`` (its defaults; a tie is half a
win for each side), write the scores.

Usage: ``python benchmarks/leaderboard/evalica_fit_csv.py BATTLES.csv SCORES.csv``
"""

import sys

import evalica
import pandas as pd

frame = pd.read_csv(sys.argv[1])
codes = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
result = evalica.bradley_terry(frame["model_a"], frame["model_b"], frame["winner"].map(codes))
result.scores.to_csv(sys.argv[2])
