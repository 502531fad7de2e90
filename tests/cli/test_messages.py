"""Every message the command line shows for the documented bad inputs speaks in flags.

Each case below is a bad input or a warning situation documented in the README or an issue;
the test runs them all in-process and checks that no message holds Python keyword syntax
(``name=value``) or a bare Python parameter name such as ``max_iter``.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.cli._messages import PYTHON_SYNTAX, to_flags


def write(path, rows, columns):
    pd.DataFrame(rows, columns=columns).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def inputs(tmp_path):
    labels = [
        (f"t{t}", f"w{w}", "yes" if (t + w) % 3 else "no") for t in range(40) for w in range(4)
    ]
    files = {
        "labels": write(tmp_path / "labels.csv", labels, ["task", "worker", "label"]),
        "repeats": write(
            tmp_path / "repeats.csv", [*labels, labels[0]], ["task", "worker", "label"]
        ),
        "rare": write(
            tmp_path / "rare.csv",
            [
                (f"t{t}", f"w{w}", "yes" if (t + w) % 3 else "no")
                for t in range(400)
                for w in range(3)
            ]
            + [("t1", "w9", "yse")],
            ["task", "worker", "label"],
        ),
        "gold": write(tmp_path / "gold.csv", [("t0", "no"), ("t1", "yes")], ["task", "label"]),
        "eval": write(
            tmp_path / "eval.csv", [("t0", "no"), ("t1", "yes"), ("t2", "no")], ["task", "label"]
        ),
        "links": write(
            tmp_path / "links.csv",
            [("w0", "a", "b", 1), ("w0", "a", "b", 1), ("w1", "b", "c", 0), ("w1", "c", "d", 1)],
            ["worker", "left", "right", "label"],
        ),
        "ties": write(
            tmp_path / "ties.csv",
            [("u0", "i0", "i1", "equal"), ("u1", "i1", "i2", "equal")],
            ["worker", "left", "right", "label"],
        ),
        "items": write(
            tmp_path / "items.csv", [("i0", 0.0), ("i1", 1.0), ("i2", 2.0)], ["item", "x"]
        ),
        "rankings": write(
            tmp_path / "rankings.csv",
            [
                (q, f"i{item}", rank + 1)
                for q in range(30)
                for rank, item in enumerate(sorted({(q + k * k + q // 6) % 6 for k in range(4)}))
            ],
            ["query", "item", "rank"],
        ),
    }
    return tmp_path, files


def cases(tmp, f):
    out = str(tmp / "out.csv")
    return {
        "repeated pairs": ["labels", "fit", f["repeats"], "--model", "mv"],
        "repeated pairs refused": [
            "labels", "fit", f["repeats"], "--model", "mv", "--duplicates", "error",
        ],
        "not converged (labels)": [
            "labels", "fit", f["labels"], "--model", "ds", "--max-iter", "1",
        ],
        "rare class": ["labels", "fit", f["rare"], "--model", "mv"],
        "gold clamped and scored": [
            "labels", "fit", f["labels"], "--model", "mv", "--gold", f["gold"],
            "--eval-gold", f["eval"],
        ],
        "option of another model": ["labels", "fit", f["labels"], "--model", "mv", "--chains", "2"],
        "bad number": ["labels", "fit", f["labels"], "--model", "ds", "--max-iter", "x"],
        "repeated links": ["cluster", "fit", f["links"], "--out", out],
        "not converged (links)": [
            "cluster", "fit", f["links"], "--duplicates", "keep", "--max-iter", "1",
            "--out", out,
        ],
        "only ties": [
            "prefs", "fit", f["ties"], "--features", f["items"], "--model", "gppl-vi",
            "--save-model", str(tmp / "model.npz"),
        ],
        "not converged (rank)": [
            "rank", "fit", f["rankings"], "--model", "pl-mm", "--max-iter", "2", "--shape", "2",
            "--rate", "1",
        ],
        "missing file": ["labels", "fit", str(tmp / "missing.csv")],
        "not a table": ["labels", "fit", str(tmp / "m.npz")],
    }  # fmt: skip


def test_no_python_syntax_in_any_message(inputs, capsys):
    tmp, files = inputs
    (tmp / "m.npz").write_bytes(b"\x93NUMPY\x01\x00")
    shown = {}
    for name, argv in cases(tmp, files).items():
        main(argv)
        captured = capsys.readouterr()
        shown[name] = [line for line in captured.err.splitlines() if line.startswith("crowdbayes")]
        assert shown[name], f"{name}: no message"
    for name, lines in shown.items():
        for line in lines:
            assert not PYTHON_SYNTAX.search(line), (name, line)
            assert not re.search(r"\b(max_iter|n_[a-z]+|random_state)\b", line), (name, line)
            assert "Traceback" not in line
    every = "\n".join(line for lines in shown.values() for line in lines)
    for expected in (
        "--duplicates drop",
        "--duplicates keep",
        "increase --max-iter or --tol",
        "--classes no,yes",
        "left out of the score",
        "--ties half",
    ):
        assert expected in every, expected


def test_to_flags():
    assert to_flags("pass duplicates='keep' or duplicates='drop'") == (
        "pass --duplicates keep or --duplicates drop"
    )
    assert to_flags("(tol=1e-09); increase max_iter or tol") == (
        "(--tol 1e-09); increase --max-iter or --tol"
    )
    assert to_flags("declare them, e.g. classes=['a', 'b']") == "declare them, e.g. --classes a,b"
    assert to_flags("use device='cpu'") == "use --device cpu"
    assert to_flags("a tolerance; total=3") == "a tolerance; total=3"


def test_gold_clamped_tasks_are_not_scored(inputs, capsys):
    tmp, f = inputs
    args = ["labels", "fit", f["labels"], "--model", "mv", "--gold", f["gold"]]
    assert main([*args, "--eval-gold", f["eval"]]) == 0
    err = capsys.readouterr().err  # no -o: the warnings and the summary on stderr
    assert "2 task(s) of the scoring gold are also clamped by --gold" in err
    assert "against gold on 1 tasks" in err
    assert main([*args, "--eval-gold", f["gold"]]) == 0
    err = capsys.readouterr().err
    assert "nothing left to score" in err and "against gold" not in err


def test_a_rare_class_is_named_unless_classes_are_declared(inputs, capsys):
    _, f = inputs
    assert main(["labels", "fit", f["rare"], "--model", "mv"]) == 0
    err = capsys.readouterr().err
    assert "class 'yse' (1 of 1201) is much rarer than the others" in err
    assert "--classes no,yes" in err
    code = main(["labels", "fit", f["rare"], "--model", "mv", "--classes", "no,yes"])
    assert code == 2
    assert "not among the declared classes ['no', 'yes']: ['yse']" in capsys.readouterr().err
