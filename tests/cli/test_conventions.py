"""One command line: every verb of every family follows the same conventions (issue 39).

The table below runs each verb each family has — ``fit``, and ``predict``, ``next`` and
``report`` where the family has them — with the same flags, and checks each convention:

- the main input is the positional argument;
- ``-o FILE`` writes the per-item results, and the summary goes to stdout (stderr stays free
  of it); without ``-o`` the same results go to stdout as CSV and the summary to stderr;
- ``--save-model`` writes the model file of every ``fit`` (and ``report``);
- ``--quiet`` prints no summary; ``--no-progress`` is accepted everywhere;
- exit status 0 on success, 2 for bad usage or bad input, 1 for a failure while running;
- ``--version``; a mistyped command, option or model name gets a suggestion.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import crowdbayes
from crowdbayes.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small inputs of every kind, and a model file for the verbs that read one."""
    folder = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    truth = rng.integers(2, size=20)
    labels = pd.DataFrame(
        [
            (f"t{t}", f"w{w}", int(truth[t] if rng.random() < 0.8 else 1 - truth[t]))
            for t in range(20)
            for w in rng.choice(5, size=3, replace=False)
        ],
        columns=["task", "worker", "label"],
    )
    values = labels.assign(value=labels["label"] * 10.0 + rng.normal(size=len(labels)))
    items = pd.DataFrame({"item": [f"i{k}" for k in range(6)], "x": np.arange(6.0)})
    left = rng.integers(6, size=60)
    right = (left + rng.integers(1, 6, size=60)) % 6
    wins = rng.random(60) < 1 / (1 + np.exp(0.5 * (left - right)))
    pairs = pd.DataFrame(
        {
            "worker": [f"u{k % 4}" for k in range(60)],
            "left": [f"i{k}" for k in left],
            "right": [f"i{k}" for k in right],
        }
    )
    pairs["label"] = np.where(wins, pairs["left"], pairs["right"])
    battles = pairs[["left", "right"]].set_axis(["model_a", "model_b"], axis=1)
    battles["winner"] = np.where(wins, "model_a", "model_b")
    groups = np.repeat(np.arange(2), 8)
    a, b = rng.integers(16, size=(2, 120))
    keep = a != b
    links = pd.DataFrame(
        {
            "worker": [f"w{k % 3}" for k in range(keep.sum())],
            "left": np.minimum(a, b)[keep],
            "right": np.maximum(a, b)[keep],
            "label": (groups[a] == groups[b])[keep].astype(int),
        }
    ).drop_duplicates(["worker", "left", "right"])
    paths = {}
    for name, table in {
        "labels": labels,
        "values": values.drop(columns="label"),
        "items": items,
        "pairs": pairs,
        "candidates": pairs[["left", "right"]].head(5),
        "links": links,
        "battles": battles,
        "battle_pairs": battles[["model_a", "model_b"]].head(5),
    }.items():
        paths[name] = folder / f"{name}.csv"
        table.to_csv(paths[name], index=False)
    for family, command in {
        "rank": ["rank", "fit", paths["pairs"], "--pairs-input", "--model", "pl-mm"],
        "prefs": ["prefs", "fit", paths["pairs"], "--model", "bt"],
        "leaderboard": ["leaderboard", "fit", paths["battles"]],
    }.items():
        paths[f"{family}_model"] = folder / f"{family}.npz"
        words = [*map(str, command), "--save-model", str(paths[f"{family}_model"]), "-q"]
        assert main(words) == 0
    return paths


#: every verb of every family: (its words before the options, extra options, a column the
#: per-item results must have, whether it writes a model with --save-model)
VERBS = {
    "labels fit": (["labels", "fit", "{labels}", "--model", "ds"], "label", True),
    "labels next": (["labels", "next", "{labels}", "--model", "ds", "--n", "3"], "score", False),
    "labels audit": (
        ["labels", "audit", "{labels}", "--model", "ds", "--n", "3"],
        "inclusion_probability",
        False,
    ),
    "values fit": (["values", "fit", "{values}", "--max-iter", "5000"], "mean", True),
    "rank fit": (["rank", "fit", "{pairs}", "--pairs-input", "--model", "pl-mm"], "p_top_k", True),
    "rank predict": (
        ["rank", "predict", "{rank_model}", "--pairs", "{candidates}"],
        "p_left",
        False,
    ),
    "rank next": (
        ["rank", "next", "{pairs}", "--pairs-input", "--features", "{items}", "--n", "3"],
        "score",
        False,
    ),
    "prefs fit": (["prefs", "fit", "{pairs}", "--model", "bt"], "mean", True),
    "prefs predict": (
        ["prefs", "predict", "{prefs_model}", "--pairs", "{candidates}"],
        "p_left",
        False,
    ),
    "prefs next": (["prefs", "next", "{pairs}", "--model", "bt", "--n", "3"], "score", False),
    "cluster fit": (["cluster", "fit", "{links}", "--clusters", "3"], "cluster", True),
    "cluster next": (
        ["cluster", "next", "{links}", "--clusters", "3", "--n", "3"],
        "score",
        False,
    ),
    "leaderboard fit": (["leaderboard", "fit", "{battles}"], "score", True),
    "leaderboard predict": (
        ["leaderboard", "predict", "{leaderboard_model}", "--pairs", "{battle_pairs}"],
        "p_a_wins",
        False,
    ),
}
#: the report of every family with one (the HTML page instead of a table)
REPORTS = {
    "report labels": ["report", "labels", "{labels}", "--model", "mv"],
    "report rank": ["report", "rank", "{pairs}", "--pairs-input", "--model", "pl-mm"],
    "report prefs": ["report", "prefs", "{pairs}", "--model", "bt"],
    "report cluster": ["report", "cluster", "{links}", "--clusters", "3"],
    "report leaderboard": ["report", "leaderboard", "{battles}", "--bootstrap", "50"],
}


def words(template: list[str], files) -> list[str]:
    return [w.format(**{k: str(v) for k, v in files.items()}) for w in template]


def run(argv, capsys) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_follows_the_conventions(verb, files, tmp_path, capsys):
    template, column, saves = VERBS[verb]
    command = [*words(template, files), "--no-progress"]
    assert command[2] == str(files[template[2].strip("{}")])  # the input is positional
    # -o: the results in the file, the summary on stdout, nothing of it on stderr
    out = tmp_path / "results.csv"
    status, stdout, stderr = run([*command, "-o", str(out)], capsys)
    assert status == 0, stderr
    written = pd.read_csv(out)
    assert column in written.columns and len(written)
    summary = stdout.strip().splitlines()
    assert summary and summary[0] not in stderr  # warnings may go to stderr, the summary not
    assert not stdout.lstrip().startswith(",".join(written.columns[:2]))  # a summary, not CSV
    # no -o: the same results on stdout as CSV, the summary on stderr
    status, stdout, stderr = run(command, capsys)
    assert status == 0
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(stdout)), written)
    assert stderr.strip()
    # --quiet: the results and nothing else
    status, stdout, stderr = run([*command, "--quiet", "-o", str(out), "--force"], capsys)
    assert (status, stdout) == (0, "") and summary[0] not in stderr
    if saves:
        model = tmp_path / "model.npz"
        assert run([*command, "-q", "--save-model", str(model)], capsys)[0] == 0
        assert crowdbayes.load(model).is_fitted()


@pytest.mark.parametrize("verb", REPORTS)
def test_every_report_follows_the_conventions(verb, files, tmp_path, capsys):
    command = [*words(REPORTS[verb], files), "--no-progress"]
    page, model = tmp_path / "report.html", tmp_path / "model.npz"
    status, stdout, stderr = run([*command, "-o", str(page), "--save-model", str(model)], capsys)
    assert status == 0, stderr
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stdout.strip() and stdout.strip() not in stderr and crowdbayes.load(model).is_fitted()
    status, stdout, stderr = run(command, capsys)  # no -o: the page on stdout
    assert status == 0 and stdout.startswith("<!DOCTYPE html>") and stderr.strip()


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"crowdbayes {crowdbayes.__version__}"


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["lables", "fit", "x.csv"], "did you mean 'labels'?"),
        (["labels", "fti", "x.csv"], "did you mean 'fit'?"),
        (["labels", "fit", "x.csv", "--modle", "ds"], "--modle (did you mean --model?)"),
        (["labels", "fit", "x.csv", "--model", "dss"], "did you mean 'ds'?"),
        (["prefs", "fit", "x.csv", "--featurs", "f.csv"], "(did you mean --features?)"),
        (["cluster", "fit", "x.csv", "--clustres", "3"], "(did you mean --clusters?)"),
    ],
)
def test_mistakes_get_a_suggestion_and_exit_status_2(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert suggestion in capsys.readouterr().err


@pytest.mark.parametrize(
    "family, text, line",
    [
        ("labels", "task,worker,label\nt1,w1,a\n\nt2,,b\n", "column 'worker' has 1 missing value"),
        ("cluster", "worker,left,right,label\nw1,a,b,1\n\nw1,c,c,0\n", "item 'c' at line 4"),
        ("prefs", "worker,left,right,label\nu,a,b,a\n\nu,c,c,c\n", "(first at line 4"),
    ],
)
def test_bad_rows_are_named_by_their_file_line(family, text, line, tmp_path, capsys):
    """A bad row is named by its line in the file, counted as an editor counts (the header is
    line 1; blank lines count)."""
    path = tmp_path / "input.csv"
    path.write_text(text, encoding="utf-8")
    model = {"labels": "mv", "cluster": "links-vb", "prefs": "bt"}[family]
    status, _, stderr = run([family, "fit", str(path), "--model", model], capsys)
    assert status == 2 and line in stderr and stderr.count("\n") == 1
    if family == "labels":
        assert "(line(s) [4])" in stderr


def test_bad_input_exits_2_and_a_failure_while_running_exits_1(
    files, tmp_path, capsys, monkeypatch
):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"task": ["t1"], "label": [1]}).to_csv(bad, index=False)
    status, _, stderr = run(["labels", "fit", str(bad), "--model", "ds", "-q"], capsys)
    assert status == 2 and stderr.startswith("crowdbayes: error: labels (") and "'worker'" in stderr
    out = tmp_path / "out.csv"

    def failing_fit(self, *args, **kwargs):
        raise RuntimeError("out of luck")

    from crowdbayes.models.labels import DawidSkene

    monkeypatch.setattr(DawidSkene, "fit", failing_fit)
    command = ["labels", "fit", str(files["labels"]), "--model", "ds", "-o", str(out)]
    status, _, stderr = run(command, capsys)
    assert status == 1 and stderr == "crowdbayes: error: out of luck\n"
    assert not out.exists()


def test_the_strategies_offered_are_the_models_own():
    """``labels next`` and ``prefs next`` list their strategies without importing a model; the
    lists are the models' own."""
    from crowdbayes.cli import labels, prefs
    from crowdbayes.models.labels import LabelModel
    from crowdbayes.roles import PairQuestions

    assert labels.QUESTION_STRATEGIES == LabelModel.question_strategies
    next_parser = prefs.FAMILY  # the record; its next verb offers the pairwise strategies
    assert next_parser.next is not None
    assert prefs.PAIR_QUESTION_VALUES == PairQuestions.question_strategies


def test_each_family_offers_models_of_its_judgment():
    """A family refuses a saved model of another kind of judgment by the judgment it declares;
    its models are all of that kind."""
    from crowdbayes.cli import cluster, labels, prefs, rank, values

    for module in (labels, values, rank, prefs, cluster):
        family = module.FAMILY
        for name, entry in family.table.models.items():
            assert entry.tags().judgment == family.judgment, (family.name, name)
