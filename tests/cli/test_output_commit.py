"""The output set of a command is committed together: interrupted at every step of writing
and committing it (memory and Dask backends) a command leaves all the old outputs or all the
new ones and no temporary file; two runs writing one ``--out`` at once: exactly one succeeds;
Ctrl-C then SIGTERM while the model is saved: 130, no file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from crowdbayes.cli import main
from fault_injection import MOVES, Faults, leftovers, raise_, send

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file semantics and signals")


def contents(path: Path):
    """A file's bytes, a directory's {name: bytes}, or None when absent."""
    if path.is_dir():
        return {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    return path.read_bytes() if path.exists() else None


def state(outputs: dict[str, Path], old: dict, new: dict) -> str:
    """ "old" when every output holds its old contents (absent where it did not exist), "new"
    when every one holds the new contents, else "mixed: ..."."""
    now = {name: contents(path) for name, path in outputs.items()}
    if now == old:
        return "old"
    if all(now[name] is not None and now[name] != old[name] for name in outputs) and all(
        now[name] == new[name] for name in new
    ):
        return "new"
    return f"mixed: {now}"


@pytest.fixture
def labels_file(tmp_path):
    rows = [(f"t{t}", f"w{w}", "yes" if (t + w) % 3 else "no") for t in range(12) for w in range(3)]
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


def run_with_faults(monkeypatch, command, at=None, action=None):
    with monkeypatch.context() as patch:
        faults = Faults(patch, MOVES, at, action)
        code = main(command)
    return code, faults.calls


def fit_command(tmp_path, fit: list[str], tasks: str, force: bool):
    """The output directory, the outputs by name and the command line of ``fit`` writing the
    per-task results to ``tasks``, the per-worker table and the model file."""
    out = tmp_path / "out"
    out.mkdir()
    outputs = {"tasks": out / tasks, "workers": out / "workers.csv", "model": out / "model.npz"}
    command = [*fit, "--no-progress", "--quiet", "-o", str(outputs["tasks"])]
    command += ["--workers-out", str(outputs["workers"]), "--save-model", str(outputs["model"])]
    return out, outputs, command + (["--force"] if force else [])


def steps_of(monkeypatch, capsys, command, outputs, make_old, compared):
    """Run ``command`` uninterrupted: the os calls of its steps, the old outputs (set up by
    ``make_old()``) and the new contents of the outputs named in ``compared``."""
    make_old()
    old = {name: contents(path) for name, path in outputs.items()}
    for _ in range(2):  # the second run counts the steps (the first may import lazily)
        make_old()
        code, calls = run_with_faults(monkeypatch, command)
        assert code == 0, capsys.readouterr().err
    new = {name: contents(outputs[name]) for name in compared}
    make_old()
    capsys.readouterr()
    return calls, old, new


# ---------------------------------------------------------------------------- memory backend
@pytest.mark.parametrize("force", [True, False], ids=["replacing", "creating"])
@pytest.mark.parametrize(
    ("action", "status"),
    [
        (raise_(KeyboardInterrupt()), 130),
        (raise_(OSError(28, "No space left on device")), 1),
        (send(signal.SIGTERM), 143),
        (send(signal.SIGINT), 130),
    ],
    ids=["KeyboardInterrupt", "OSError", "SIGTERM", "SIGINT"],
)
def test_memory_backend_every_step_interrupted(
    labels_file, tmp_path, monkeypatch, capsys, force, action, status
):
    fit = ["labels", "fit", str(labels_file), "--model", "mv"]
    out, outputs, command = fit_command(tmp_path, fit, "tasks.csv", force)

    def make_old():
        for path in outputs.values():
            path.unlink(missing_ok=True)
        if force:
            for name, path in outputs.items():
                path.write_bytes(f"old {name}".encode())

    compared = ["tasks", "workers"]
    calls, old, new = steps_of(monkeypatch, capsys, command, outputs, make_old, compared)
    for at in range(len(calls)):
        code, _ = run_with_faults(monkeypatch, command, at, action)
        err = capsys.readouterr().err
        assert code == status, (at, calls, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert state(outputs, old, new) == "old", (at, calls)
        assert leftovers(out) == [], (at, calls)
        make_old()
    # the model file's own staging, then per output a backup when replacing and a link
    assert len(calls) == (2 + 3 + 3 if force else 2 + 3), calls


def test_a_model_updated_in_place_needs_no_force_and_survives_an_interrupt(
    labels_file, tmp_path, monkeypatch, capsys
):
    model = tmp_path / "ds.npz"
    fit = ["labels", "fit", str(labels_file), "--model", "ds", "--no-progress", "--quiet"]
    assert main([*fit, "--save-model", str(model)]) == 0
    before = model.read_bytes()
    update = [*fit, "--init-model", str(model), "--save-model", str(model)]
    code, calls = run_with_faults(monkeypatch, update, len(MOVES) * 10, None)
    assert code == 0 and model.read_bytes() != before
    before = model.read_bytes()
    for at in range(len(calls)):
        code, _ = run_with_faults(monkeypatch, update, at, raise_(KeyboardInterrupt()))
        assert code == 130 and model.read_bytes() == before, at
        assert leftovers(tmp_path) == []
    capsys.readouterr()


# ---------------------------------------------------------------------------- Dask backend
@pytest.fixture
def parquet_parts(tmp_path):
    pytest.importorskip("distributed")
    rows = [(f"t{t}", f"w{w}", "yes" if (t + w) % 3 else "no") for t in range(20) for w in range(3)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    parts = tmp_path / "in"
    parts.mkdir()
    for i in range(2):
        frame.iloc[i::2].to_parquet(parts / f"labels-{i}.parquet", index=False)
    return parts


@pytest.mark.parametrize(
    ("force", "action", "status"),
    [
        (True, raise_(KeyboardInterrupt()), 130),
        (False, send(signal.SIGTERM), 143),
    ],
    ids=["replacing-KeyboardInterrupt", "creating-SIGTERM"],
)
def test_dask_backend_every_step_interrupted(
    parquet_parts, client, tmp_path, monkeypatch, capsys, force, action, status
):
    fit = ["labels", "fit", str(parquet_parts), "--model", "ds", "--backend", "dask"]
    fit += ["--scheduler", client.scheduler.address]
    out, outputs, command = fit_command(tmp_path, fit, "tasks", force)

    def make_old():
        for path in outputs.values():
            if path.is_dir():
                for part in path.iterdir():
                    part.unlink()
                path.rmdir()
            path.unlink(missing_ok=True)
        if force:
            outputs["tasks"].mkdir()
            (outputs["tasks"] / "part-00000.parquet").write_bytes(b"old part")
            outputs["workers"].write_bytes(b"old workers")
            outputs["model"].write_bytes(b"old model")

    calls, old, new = steps_of(monkeypatch, capsys, command, outputs, make_old, ["workers"])
    for at in range(len(calls)):
        code, _ = run_with_faults(monkeypatch, command, at, action)
        err = capsys.readouterr().err
        assert code == status, (at, calls, err)
        assert "Traceback" not in err and "interrupted" in err, err
        assert state(outputs, old, new) == "old", (at, calls)
        assert leftovers(out) == [], (at, calls)
        make_old()
    # the staging directory; the model file's own staging; per output (a backup,) a move (two
    # for the directory: creating it, then renaming the staged one over it)
    assert len(calls) == (1 + 2 + 3 + 4 if force else 1 + 2 + 4), calls


# ---------------------------------------------------------------------------- races
_RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from crowdbayes import _atomic
    from crowdbayes.cli import main

    barrier, me, command = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    commit = _atomic.OutputSet.commit

    def commit_together(self):  # both runs staged their outputs: now commit at once
        (barrier / me).touch()
        deadline = time.monotonic() + 60
        while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        commit(self)

    _atomic.OutputSet.commit = commit_together
    sys.exit(main(command))
    """
)


def test_two_runs_writing_one_out_exactly_one_succeeds(labels_file, tmp_path):
    for round_, model in enumerate(["mv", "ds"]):
        out = tmp_path / f"same{round_}.csv"
        barrier = tmp_path / f"barrier{round_}"
        barrier.mkdir()
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", _RACER, str(barrier), me, "labels", "fit"]
                + [str(labels_file), "--model", model, "--no-progress", "-o", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for me in "AB"
        ]
        results = [(r.wait(timeout=300), *r.communicate()) for r in racers]
        assert sorted(code for code, _, _ in results) == [0, 1], results
        err = next(err for code, _, err in results if code == 1).splitlines()
        assert [line for line in err if "error" in line] == err[-1:], err
        assert err[-1].startswith(f"crowdbayes: error: {out} was created by another program")
        assert err[-1].endswith("nothing was written (pass --force to replace it)")
        assert pd.read_csv(out).shape[0] == 12
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------------------- two signals
@pytest.mark.parametrize(
    ("first", "second", "status"),
    [(signal.SIGINT, signal.SIGTERM, 130), (signal.SIGTERM, signal.SIGINT, 143)],
    ids=["SIGINT-SIGTERM", "SIGTERM-SIGINT"],
)
@pytest.mark.parametrize("when", ["at once", "while the archive closes"])
def test_two_signals_while_the_model_is_saved(
    labels_file, tmp_path, monkeypatch, capsys, first, second, status, when
):
    """The first signal inside the model file's zip member, the second at once or while the
    archive closes: the first one's status, one line, no file (it was exit 2 with a zipfile
    error, and temporary files left)."""
    import numpy.lib.format as npformat

    real_close, real_write_array = zipfile.ZipFile.close, npformat.write_array
    sent = []

    def write_array(*args, **kwargs):
        if not sent:
            sent.append(first)
            os.kill(os.getpid(), first)
            if when == "at once":
                sent.append(second)
                os.kill(os.getpid(), second)
        return real_write_array(*args, **kwargs)

    def close(self):
        if len(sent) == 1 and self.fp is not None and self.mode == "w":
            sent.append(second)
            os.kill(os.getpid(), second)  # mid clean-up
        return real_close(self)

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(zipfile.ZipFile, "close", close)
    monkeypatch.setattr(npformat, "write_array", write_array)
    command = ["labels", "fit", str(labels_file), "--model", "mv", "--no-progress"]
    command += ["-o", str(out / "t.csv"), "--save-model", str(out / "m.npz")]
    assert main(command) == status
    assert capsys.readouterr().err == "crowdbayes: interrupted; no output written\n"
    assert sent == [first, second] and list(out.iterdir()) == []
