"""The command line: results, summaries, one-line errors and no partial output files."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from crowdbayes.cli import main


@pytest.fixture
def small_labels(tmp_path):
    rows = []
    for task in range(30):
        truth = task % 2
        for worker in range(5):
            wrong = (task + worker) % 7 == 0
            rows.append((f"t{task}", f"w{worker}", "yes" if truth ^ wrong else "no"))
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("model", ["mv", "ds", "bayes-ds", "community-ds", "hierarchical"])
def test_fit_writes_tasks_and_workers(model, small_labels, tmp_path, capsys):
    out, workers = tmp_path / "tasks.csv", tmp_path / "workers.csv"
    options = (
        ["--samples", "20", "--warmup", "10", "--chains", "2"] if model == "hierarchical" else []
    )
    code = main(
        ["labels", "fit", str(small_labels), "--model", model, "--out", str(out)]
        + ["--workers-out", str(workers), "--seed", "3", *options]
    )
    assert code == 0
    tasks = pd.read_csv(out, index_col="task")
    assert list(tasks.columns) == ["label", "p_no", "p_yes"]
    assert len(tasks) == 30
    assert (tasks[["p_no", "p_yes"]].sum(axis=1) - 1).abs().max() < 1e-9
    table = pd.read_csv(workers)
    assert {"worker", "true", "observed", "mean"} <= set(table.columns)
    assert len(table) == 5 * 2 * 2
    printed = capsys.readouterr().out
    assert "30 tasks, 5 workers" in printed


def test_demo_command_scores_against_bundled_gold(capsys, monkeypatch):
    monkeypatch.delenv("CROWDBAYES_DATA", raising=False)
    assert main(["labels", "fit", "--dataset", "rte", "--model", "mv"]) == 0
    captured = capsys.readouterr()  # no -o: the tasks on stdout, the summary on stderr
    assert "against gold on 800 tasks: accuracy 0.8975" in captured.err
    assert len(pd.read_csv(io.StringIO(captured.out))) == 800


def test_eval_gold_scores_only_labelled_tasks(small_labels, tmp_path, capsys):
    gold = tmp_path / "gold.csv"
    pd.DataFrame({"task": ["t0", "t1", "zzz"], "label": ["no", "yes", "no"]}).to_csv(
        gold, index=False
    )
    assert (
        main(["labels", "fit", str(small_labels), "--model", "ds", "--eval-gold", str(gold)]) == 0
    )
    printed = capsys.readouterr().err  # no -o: the summary on stderr
    assert "against gold on 2 tasks" in printed
    assert "1 gold tasks without labels not scored" in printed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("task,worker,lab\n1,a,x\n", "column 'label' is missing"),
        ("task,worker,label\n", "has a header but no rows"),
        ("task,worker,label\n1,a,x\n1,b,\n", "column 'label' has 1 missing value"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_output(content, message, tmp_path, capsys):
    path = tmp_path / "labels.csv"
    path.write_text(content)
    out = tmp_path / "tasks.csv"
    assert main(["labels", "fit", str(path), "--model", "mv", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("crowdbayes: error: ")
    assert message in err[0]
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]


def test_label_outside_declared_classes(small_labels, capsys):
    assert main(["labels", "fit", str(small_labels), "--classes", "yes,maybe"]) == 2
    assert "not among the declared classes ['yes', 'maybe']: ['no']" in capsys.readouterr().err


def test_missing_file_and_unknown_dataset(tmp_path, capsys):
    assert main(["labels", "fit", str(tmp_path / "nope.csv")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["labels", "fit", "--dataset", "no-such-set"]) == 2
    assert "no-such-set" in capsys.readouterr().err


def test_failed_second_output_leaves_no_first_output(small_labels, tmp_path, capsys):
    out = tmp_path / "tasks.csv"
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code = main(
        ["labels", "fit", str(small_labels), "--model", "mv", "--out", str(out)]
        + ["--workers-out", str(blocker / "workers.csv")]
    )
    assert code == 2
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "labels.csv"]


def test_single_worker_is_refused_by_worker_models(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("task,worker,label\n1,a,x\n2,a,y\n")
    assert main(["labels", "fit", str(path), "--model", "ds"]) == 2
    assert "at least 2 workers; got 1" in capsys.readouterr().err
    assert main(["labels", "fit", str(path), "--model", "mv"]) == 0


def test_duplicates_warn_on_stderr(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("task,worker,label\n1,a,x\n1,a,x\n1,b,y\n2,a,y\n2,b,y\n")
    assert main(["labels", "fit", str(path), "--model", "mv"]) == 0
    err = capsys.readouterr().err
    assert "crowdbayes: warning: labels: 1 row(s) repeat a task–worker pair" in err


def test_datasets_list(capsys):
    assert main(["datasets", "list"]) == 0
    assert "rte" in capsys.readouterr().out


def test_save_model_then_continue_from_it(small_labels, tmp_path, capsys):
    model_file = tmp_path / "ds.npz"
    args = ["labels", "fit", str(small_labels), "--model", "ds"]
    assert main([*args, "--save-model", str(model_file), "--max-iter", "3"]) == 0
    assert model_file.exists()
    capsys.readouterr()
    out = tmp_path / "tasks.csv"
    assert main([*args, "--init-model", str(model_file), "--out", str(out)]) == 0
    continued = capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "full.csv")]) == 0
    full = capsys.readouterr().out

    def iterations(text: str) -> int:
        return int(text.split("fit in ")[1].split(": ")[1].split(" iterations")[0])

    assert iterations(continued) < iterations(full)
    assert (pd.read_csv(out)["label"] == pd.read_csv(tmp_path / "full.csv")["label"]).all()


def test_the_model_started_from_is_updated_in_place(small_labels, tmp_path, capsys):
    """The README's daily update: ``--init-model ds.npz --save-model ds.npz`` replaces the model
    it started from without --force; any other existing file is still refused."""
    from crowdbayes import load

    model_file, other = tmp_path / "ds.npz", tmp_path / "other.npz"
    args = ["labels", "fit", str(small_labels), "--model", "ds"]
    assert main([*args, "--save-model", str(model_file), "--max-iter", "2"]) == 0
    assert main([*args, "--save-model", str(other), "--max-iter", "2"]) == 0
    before = load(model_file).n_iter_
    capsys.readouterr()
    update = [*args, "--init-model", str(model_file)]
    assert main([*update, "--save-model", str(model_file)]) == 0
    assert load(model_file).n_iter_ != before  # the continued fit, not the file as it was
    assert main([*update, "--save-model", str(other)]) == 2
    assert "--save-model: " + str(other) + " exists; pass --force" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "hierarchical", "--backend", "dask"], "--backend dask works with --model"),
        (
            ["--model", "ds", "--backend", "dask"],
            "--backend dask needs -o DIRECTORY for the per-task results",
        ),
        (["--model", "mv", "--init-model", "m.npz"], "--init-model works with --model ds, bayes"),
        (["--model", "community-ds", "--init-model", "m.npz"], "got community-ds"),
        (["--model", "ds", "--grouped"], "--grouped needs --backend dask"),
        (["--model", "ds", "--init-model", "missing.npz"], "model file not found"),
    ],
)
def test_scale_options_are_checked(options, message, small_labels, tmp_path, capsys):
    assert main(["labels", "fit", str(small_labels), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("model", ["mv", "community-ds", "hierarchical"])
def test_any_model_is_saved_and_loads_with_its_results(model, small_labels, tmp_path):
    from crowdbayes import load

    out, model_file = tmp_path / "tasks.csv", tmp_path / "m.npz"
    options = (
        ["--chains", "2", "--warmup", "5", "--samples", "10"] if model == "hierarchical" else []
    )
    command = ["labels", "fit", str(small_labels), "--model", model, "--out", str(out)]
    assert main([*command, "--save-model", str(model_file), *options]) == 0
    saved = load(model_file)
    written = pd.read_csv(out, index_col=0)
    assert list(saved.labels_.astype(str)) == list(written["label"].astype(str))


def test_partial_update_of_a_saved_model(small_labels, tmp_path, capsys):
    model_file = tmp_path / "ds.npz"
    assert (
        main(["labels", "fit", str(small_labels), "--model", "ds", "--save-model", str(model_file)])
        == 0
    )
    batch = pd.read_csv(small_labels).assign(task=lambda t: "new-" + t["task"])
    batch_path = tmp_path / "batch.csv"
    batch.to_csv(batch_path, index=False)
    out, updated = tmp_path / "batch-tasks.csv", tmp_path / "ds2.npz"
    code = main(
        ["labels", "fit", str(batch_path), "--model", "ds", "--init-model", str(model_file)]
        + ["--partial", "--out", str(out), "--save-model", str(updated)]
    )
    assert code == 0, capsys.readouterr().err
    assert pd.read_csv(out)["task"].str.startswith("new-").all()
    assert updated.exists()
    assert (
        main(
            [
                "labels",
                "fit",
                str(batch_path),
                "--model",
                "bayes-ds",
                "--init-model",
                str(model_file),
                "--partial",
            ]
        )
        == 2
    )
    assert "holds a DawidSkene; --model bayes-ds differs" in capsys.readouterr().err
    assert main(["labels", "fit", str(batch_path), "--model", "ds", "--partial"]) == 2
    assert "--partial needs --init-model" in capsys.readouterr().err


def test_next_writes_the_most_valuable_tasks(small_labels, tmp_path, capsys):
    out = tmp_path / "next.csv"
    assert main(["labels", "next", str(small_labels), "--model", "bayes-ds", "--n", "3",
                 "--out", str(out)]) == 0  # fmt: skip
    table = pd.read_csv(out)
    assert list(table.columns) == ["task", "score"] and len(table) == 3
    assert table["score"].is_monotonic_decreasing
    assert "expected accuracy (no gold)" in capsys.readouterr().out


def test_next_chooses_with_bayes_ds_unless_told_and_fit_keeps_its_default(
    small_labels, tmp_path, capsys
):
    """``labels next`` fits its own default model (the questions of ``labels.NEXT_MODEL``
    score higher; issue 43), ``labels fit`` the family's; both ``--help`` say which."""
    from crowdbayes.cli.labels import LABELS, NEXT_MODEL

    assert NEXT_MODEL == "bayes-ds" != LABELS.default
    out = tmp_path / "next.csv"
    assert main(["labels", "next", str(small_labels), "--n", "3", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "BayesianDawidSkene chose the questions" in said
    assert "BayesianDawidSkene's own look-ahead" in said
    # the expected accuracy is that of the answers `labels fit` gives (its default model)
    fit_out = tmp_path / "fit.csv"
    assert main(["labels", "fit", str(small_labels), "--out", str(fit_out)]) == 0
    capsys.readouterr()
    expected = pd.read_csv(fit_out).filter(like="p_").max(axis=1).mean()
    assert f"HierarchicalAnnotation on {small_labels}: expected accuracy (no gold) " \
        f"{expected:.4f}" in said  # fmt: skip
    assert main(["labels", "next", str(small_labels), "--n", "3", "--model", "bayes-ds",
                 "--out", str(tmp_path / "next_bds.csv")]) == 0  # fmt: skip
    said = capsys.readouterr().out
    assert "BayesianDawidSkene on" in said and "chose the questions" not in said
    for verb, default in (("next", NEXT_MODEL), ("fit", LABELS.default)):
        with pytest.raises(SystemExit):
            main(["labels", verb, "--help"])
        shown = capsys.readouterr().out
        assert f"(default {default}; see below)" in " ".join(shown.split())
        marked = [line.split()[0] for line in shown.splitlines() if line.endswith("(default)")]
        assert marked == [default]


def test_next_with_new_tasks_and_available_workers(small_labels, tmp_path):
    frame = pd.read_csv(small_labels, dtype=str)
    tasks, available = tmp_path / "tasks.csv", tmp_path / "workers.csv"
    pd.DataFrame({"task": [*frame["task"].unique()[:3], "unlabelled"]}).to_csv(tasks, index=False)
    pd.DataFrame({"worker": [frame["worker"].iloc[0], "newcomer"]}).to_csv(available, index=False)
    out = tmp_path / "next.csv"
    code = main(["labels", "next", str(small_labels), "--model", "ds", "--n", "8", "--tasks",
                 str(tasks), "--available", str(available), "--out", str(out)])  # fmt: skip
    assert code == 0
    table = pd.read_csv(out, dtype={"task": str, "worker": str})
    assert list(table.columns) == ["task", "worker", "score"]
    assert "unlabelled" in set(table["task"])
    labelled = set(zip(frame["task"], frame["worker"], strict=True))
    assert not any(pair in labelled for pair in zip(table["task"], table["worker"], strict=True))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--n", "0"], "--n must be at least 1; got 0"),
        (
            ["--n", "3", "--confidence", "0.01"],
            "nothing left to ask: every candidate is decided at --confidence 0.01",
        ),
        (["--n", "3", "--confidence", "2"], "--confidence must lie between 0 and 1; got '2'"),
        (["--n", "3", "--tasks", "missing.csv"], "tasks: file not found"),
    ],
)
def test_next_refuses_bad_requests(options, message, small_labels, tmp_path, capsys):
    out = tmp_path / "next.csv"
    command = ["labels", "next", str(small_labels), "--model", "mv", "--out", str(out)]
    assert main([*command, *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()


def _grades_file(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    names = np.array(["low", "mid", "high"])
    rows = []
    for t in range(40):
        truth = rng.integers(3)
        for w in range(4):
            grade = int(np.clip(truth + rng.choice([-1, 0, 0, 0, 1]), 0, 2))
            rows.append((f"t{t}", f"w{w}", names[grade]))
    path = tmp_path / "grades.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


def test_ordered_grades_fit_with_the_ordinal_model(tmp_path, capsys):
    path, out = _grades_file(tmp_path), tmp_path / "tasks.csv"
    args = ["labels", "fit", str(path), "--model", "ordinal-ds", "--classes", "low,mid,high"]
    assert main([*args, "--ordered", "--out", str(out)]) == 0
    assert "OrdinalDawidSkene" in capsys.readouterr().out
    table = pd.read_csv(out)
    assert list(table.columns[:3]) == ["task", "label", "median"]
    assert set(table["median"]) <= {"low", "mid", "high"}


def test_ordered_and_nominal_mismatch_is_refused_in_flags(tmp_path, capsys):
    path = _grades_file(tmp_path)
    base = ["labels", "fit", str(path), "--classes", "low,mid,high"]
    assert main([*base, "--model", "ordinal-ds"]) == 2
    err = capsys.readouterr().err
    assert "unordered classes ['low', 'mid', 'high']: declare the labels with --ordered" in err
    assert main([*base, "--model", "ds", "--ordered"]) == 2
    err = capsys.readouterr().err
    assert "(OrdinalDawidSkene), or declare the labels with no --ordered" in err
    assert main(["labels", "fit", str(path), "--model", "ordinal-ds", "--ordered"]) == 2
    err = capsys.readouterr().err
    assert "--ordered with labels that are not numbers (['high', 'low', 'mid'])" in err
    assert "pass --classes ..." in err


def _features_files(tmp_path):
    import numpy as np

    rng = np.random.default_rng(1)
    truth = rng.integers(3, size=120)
    rows = [
        (f"i{i}", f"w{w}", int(truth[i] if rng.random() < 0.7 else rng.integers(3)))
        for i in range(80)
        for w in rng.choice(8, 3, replace=False)
    ]
    labels = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(labels, index=False)
    features = pd.DataFrame(np.eye(3)[truth] * 2 + rng.normal(size=(120, 3)), columns=list("abc"))
    features.insert(0, "task", [f"i{i}" for i in range(120)])
    path = tmp_path / "features.csv"
    features.to_csv(path, index=False)
    return labels, path, features


def test_crowd_classifier_with_features_predicts_unlabelled_tasks(tmp_path, capsys):
    labels, features, table = _features_files(tmp_path)
    out = tmp_path / "tasks.csv"
    args = ["labels", "fit", str(labels), "--model", "crowd-classifier", "--no-progress"]
    assert main([*args, "--features", str(features), "--out", str(out)]) == 0
    assert "CrowdClassifier" in capsys.readouterr().out
    result = pd.read_csv(out)
    assert list(result.columns[:4]) == ["task", "label", "consensus", "quality"]
    assert len(result) == 120  # every task with features, labelled or not
    assert result["consensus"].isna().sum() == 40
    short = tmp_path / "short.csv"
    table.iloc[3:].to_csv(short, index=False)
    assert main([*args, "--features", str(short)]) == 2
    err = capsys.readouterr().err
    assert f"features ({short}): 3 id(s) used in the labels have no row" in err
    assert main(args) == 2
    assert "--model crowd-classifier needs --features FILE" in capsys.readouterr().err
    assert main(["labels", "fit", str(labels), "--model", "ds", "--features", str(features)]) == 2
    assert "--features applies to --model crowd-classifier, not ds" in capsys.readouterr().err
