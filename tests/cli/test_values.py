"""``crowdbayes values fit``: numeric answers from the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdbayes.cli import main


def answers(tmp_path):
    rng = np.random.default_rng(0)
    truth = rng.normal(50, 10, 40)
    rows = [
        (f"t{t}", f"w{w}", truth[t] + rng.normal(0, 1 + w / 4))
        for t in range(40)
        for w in rng.choice(6, 4, replace=False)
    ]
    path = tmp_path / "answers.csv"
    pd.DataFrame(rows, columns=["task", "worker", "price"]).to_csv(path, index=False)
    truth_path = tmp_path / "truth.csv"
    pd.DataFrame({"task": [f"t{t}" for t in range(40)], "price": truth}).to_csv(
        truth_path, index=False
    )
    return path, truth_path


def test_fit_writes_tasks_and_workers_and_scores(tmp_path, capsys):
    path, truth = answers(tmp_path)
    out, workers = tmp_path / "tasks.csv", tmp_path / "workers.csv"
    args = ["values", "fit", str(path), "--value-column", "price", "--noise", "student"]
    code = main(
        [*args, "--out", str(out), "--workers-out", str(workers), "--eval-truth", str(truth)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "ContinuousAggregation (student noise)" in printed and "interval coverage" in printed
    tasks = pd.read_csv(out, index_col=0)
    assert list(tasks.columns) == ["mean", "sd", "lower", "upper", "n_answers"]
    assert len(tasks) == 40
    table = pd.read_csv(workers, index_col=0)
    assert {"bias", "noise_sd", "noise_lower", "noise_upper"} <= set(table.columns)


def test_text_in_the_value_column_is_one_line_naming_the_file(tmp_path, capsys):
    path, _ = answers(tmp_path)
    assert main(["values", "fit", str(path), "--value-column", "worker"]) == 2
    err = capsys.readouterr().err
    assert f"values ({path}): column 'worker' has 160 value(s) that are not numbers" in err
    assert main(["values", "fit", str(path)]) == 2
    assert "column 'value' is missing" in capsys.readouterr().err


def test_bounds_are_found_declared_or_refused(tmp_path, capsys):
    """``--bounds``: found from a pile of answers at the scale's end (auto), declared, turned
    off, or refused in one line when LOW is not below HIGH."""
    rng = np.random.default_rng(1)
    rows = []
    for t in range(60):
        truth = rng.uniform(0, 100)
        for w in range(5):
            lazy = rng.random() < 0.3
            rows.append(
                (f"t{t}", f"w{w}", 0.0 if lazy else min(100, max(0, truth + rng.normal(0, 8))))
            )
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows, columns=["task", "worker", "value"]).to_csv(path, index=False)
    out = tmp_path / "tasks.csv"
    assert main(["values", "fit", str(path), "-o", str(out), "--no-progress"]) == 0
    assert "scale       answers at 0" in capsys.readouterr().out
    for bounds in ("0,100", "none"):
        code = main(["values", "fit", str(path), "-o", str(out), "--force", "--bounds", bounds])
        assert code == 0
        printed = capsys.readouterr().out
        assert ("scale       answers at 0 and 100" in printed) == (bounds == "0,100")
    assert main(["values", "fit", str(path), "-o", str(out), "--force", "--bounds", "5,1"]) == 2
    assert "--bounds must be auto, none or LOW,HIGH" in capsys.readouterr().err
