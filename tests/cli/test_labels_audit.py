"""``labels audit``, ``labels accuracy`` and ``labels next --stop-when``: end to end, every
refusal (one line, exit 2, nothing written), and a small collection loop ended by the rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.cli._record import EXIT_STOP

N_TASKS = 120


def simulated_pool(seed: int = 0, labels_per_task: int = 5, skill=(0.6, 0.65, 0.7, 0.8, 0.85, 0.9)):
    """Labels of ``N_TASKS`` binary tasks by six workers of accuracies ``skill``, and the truth."""
    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.choice(["cat", "dog"], N_TASKS), index=[f"t{i}" for i in range(N_TASKS)])
    skill = np.asarray(skill)
    rows = []
    for task, true in truth.items():
        for worker in rng.choice(6, labels_per_task, replace=False):
            right = rng.random() < skill[worker]
            rows.append(
                (task, f"w{worker}", true if right else ("dog" if true == "cat" else "cat"))
            )
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


@pytest.fixture
def labelled(tmp_path):
    table, truth = simulated_pool(labels_per_task=2)
    path = tmp_path / "labels.csv"
    table.to_csv(path, index=False)
    return path, truth


def audit_sheet(labelled, tmp_path, n="40", *options):
    path, truth = labelled
    sheet = tmp_path / "audit.csv"
    code = main(["labels", "audit", str(path), "--n", n, "--model", "bayes-ds", "-o", str(sheet),
                 "--no-progress", *options])  # fmt: skip
    assert code == 0
    return sheet


def test_audit_then_accuracy(labelled, tmp_path, capsys):
    sheet = audit_sheet(labelled, tmp_path)
    table = pd.read_csv(sheet, keep_default_na=False)
    assert list(table.columns) == ["task", "inclusion_probability", "stratum", "answer", "label"]
    assert len(table) == 40 and table["task"].is_unique and (table["label"] == "").all()
    assert (1 / table["inclusion_probability"]).sum() == pytest.approx(N_TASKS)
    assert "fill in the label column" in capsys.readouterr().out
    _, truth = labelled
    table["label"] = truth.reindex(table["task"]).to_numpy()  # the expert
    checked, out = tmp_path / "checked.csv", tmp_path / "accuracy.csv"
    table.to_csv(checked, index=False)
    code = main(["labels", "accuracy", str(labelled[0]), "--audit", str(checked),
                 "--model", "bayes-ds", "-o", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "accuracy of the 120 answers" in printed and "would halve the interval" in printed
    result = pd.read_csv(out, index_col="answered")
    assert list(result.index) == ["all", "cat", "dog"]
    assert result.loc["all", "audited"] == 40 and result.loc["all", "tasks"] == N_TASKS
    assert (result["lower"] <= result["estimate"]).all()
    assert (result["estimate"] <= result["upper"]).all()
    assert 0 < result.loc["all", "more_to_halve"] <= N_TASKS - 40


def test_the_command_line_offers_every_design():
    from crowdbayes.cli.labels import AUDIT_DESIGNS
    from crowdbayes.metrics import audit

    assert AUDIT_DESIGNS == audit.AUDIT_DESIGNS


def test_uniform_design(labelled, tmp_path):
    table = pd.read_csv(audit_sheet(labelled, tmp_path, "30", "--design", "uniform"))
    assert (table["inclusion_probability"] == 30 / N_TASKS).all()


@pytest.mark.parametrize("n", ["0", "-2", "121", "x"])
def test_audit_refuses_bad_sizes(n, labelled, tmp_path, capsys):
    sheet = tmp_path / "audit.csv"
    code = main(["labels", "audit", str(labelled[0]), "--n", n, "--model", "bayes-ds",
                 "-o", str(sheet), "--no-progress"])  # fmt: skip
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--n" in error
    assert not sheet.exists()


def _blank_label(table):
    table.loc[0, "label"] = ""
    return table


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.assign(task=["nope", *t["task"].iloc[1:]]), "not among the 120 tasks"),
        (lambda t: t.assign(label=["bird", *t["label"].iloc[1:]]), "'bird' is not one of"),
        (lambda t: t.drop(columns="inclusion_probability"), "'inclusion_probability' is"),
        (lambda t: t.iloc[:0], "has a header but no rows"),
        (_blank_label, "without a label"),
        (lambda t: t.iloc[1:], "stand for"),
    ],
)
def test_accuracy_refuses_bad_audits(change, message, labelled, tmp_path, capsys):
    table = pd.read_csv(audit_sheet(labelled, tmp_path, "20"), keep_default_na=False)
    table["label"] = labelled[1].reindex(table["task"]).to_numpy()
    checked, out = tmp_path / "checked.csv", tmp_path / "accuracy.csv"
    change(table).to_csv(checked, index=False)
    capsys.readouterr()
    code = main(["labels", "accuracy", str(labelled[0]), "--audit", str(checked),
                 "--model", "bayes-ds", "-o", str(out), "--no-progress"])  # fmt: skip
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error
    assert not out.exists()


@pytest.mark.parametrize(
    ("rule", "message"),
    [("changes>3", "a rule is changes<X"), ("flips<3", "a rule is"), ("width<0.1", "--audit")],
)
def test_next_refuses_bad_stop_rules(rule, message, labelled, tmp_path, capsys):
    out = tmp_path / "next.csv"
    command = ["labels", "next", str(labelled[0]), "--n", "5", "--model", "bayes-ds",
               "--stop-when", rule, "-o", str(out), "--no-progress"]  # fmt: skip
    if message == "--audit":
        assert main(command) == 2
    else:  # argparse refuses a malformed option value with its usage line
        with pytest.raises(SystemExit) as stop:
            main(command)
        assert stop.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_next_reports_changes_and_the_audit_interval(labelled, tmp_path, capsys):
    table = pd.read_csv(audit_sheet(labelled, tmp_path, "30"), keep_default_na=False)
    table["label"] = labelled[1].reindex(table["task"]).to_numpy()
    checked, out = tmp_path / "checked.csv", tmp_path / "next.csv"
    table.to_csv(checked, index=False)
    capsys.readouterr()
    command = ["labels", "next", str(labelled[0]), "--n", "10", "--model", "bayes-ds",
               "--audit", str(checked), "-o", str(out), "--no-progress"]  # fmt: skip
    assert main([*command, "--stop-when", "width<0.001"]) == 0
    printed = capsys.readouterr().out
    assert "per 100 labels" in printed and "90% interval" in printed
    assert len(pd.read_csv(out)) == 10
    out.unlink()
    assert main([*command, "--stop-when", "changes<0.01,width<0.9"]) == EXIT_STOP
    assert "stop: width<0.9 met" in capsys.readouterr().out
    assert not out.exists()


def test_next_without_model_reports_the_interval_labels_accuracy_gives(labelled, tmp_path, capsys):
    """Without ``--model``, ``labels next`` chooses with bayes-ds but reports the accuracy
    interval of the answers ``labels fit`` gives — the line ``labels accuracy`` prints."""
    table = pd.read_csv(audit_sheet(labelled, tmp_path, "30"), keep_default_na=False)
    table["label"] = labelled[1].reindex(table["task"]).to_numpy()
    checked = tmp_path / "checked.csv"
    table.to_csv(checked, index=False)
    capsys.readouterr()
    assert main(["labels", "accuracy", str(labelled[0]), "--audit", str(checked),
                 "-o", str(tmp_path / "accuracy.csv"), "--no-progress"]) == 0  # fmt: skip
    overall = capsys.readouterr().out.splitlines()[0]  # "accuracy of the N answers: ..."
    interval = overall.split(": ", 1)[1].split(" from ")[0]  # "0.9xxx, 90% interval [.., ..]"
    assert main(["labels", "next", str(labelled[0]), "--n", "5", "--audit", str(checked),
                 "-o", str(tmp_path / "next.csv"), "--no-progress"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "BayesianDawidSkene chose the questions" in printed
    assert f"accuracy: {interval} from" in printed, (interval, printed)


def test_a_collection_loop_ends_on_the_stop_rule(tmp_path):
    """The replay: two labels per task to start, 40 requested tasks per round, each revealing
    its next unused label of the pool, until ``--stop-when changes<10``. (From one label per
    task the model rates its answers too decided to be worth asking about: the look-ahead is
    only as good as the model's worker estimates.)"""
    pool, _ = simulated_pool(seed=1, labels_per_task=6, skill=(0.8, 0.85, 0.9, 0.9, 0.95, 0.95))
    pool = pool.assign(rank=pool.groupby("task").cumcount())
    shown = pool["rank"] < 2
    path, out = tmp_path / "labels.csv", tmp_path / "next.csv"
    rounds = 0
    while rounds < 25:
        pool.loc[shown, ["task", "worker", "label"]].to_csv(path, index=False)
        code = main(["labels", "next", str(path), "--n", "40", "--model", "bayes-ds",
                     "--stop-when", "changes<10", "-o", str(out), "--force", "--quiet",
                     "--no-progress"])  # fmt: skip
        if code == EXIT_STOP:
            break
        assert code == 0
        rounds += 1
        for task in pd.read_csv(out)["task"]:
            hidden = pool.index[(pool["task"] == task) & ~shown]
            if len(hidden):
                shown[hidden[0]] = True
    assert code == EXIT_STOP, "the loop never met the rule"
    assert 0 < rounds and shown.sum() < len(pool)  # it asked, and stopped before the end
