"""Output sets committed together (crowdbayes._atomic): every step of a commit interrupted by
an error, an exception or a signal leaves all the old outputs or all the new ones and no
temporary file; exclusive creation between processes; short temporary names; an interrupt
that a writer's clean-up turns into another error stays an interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from crowdbayes import _atomic
from crowdbayes._atomic import OutputSet, signals_deferred, write_atomically
from fault_injection import MOVES, REMOVALS, Faults, leftovers, raise_, send

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file semantics and signals")


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """The file contents under ``directory`` by relative path (directories as None)."""
    return {
        str(p.relative_to(directory)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(directory.rglob("*"))
    }


OLD = {"a.csv": b"old a", "d": None, "d/part-00000.parquet": b"old part"}
NEW = {"a.csv": b"new a", "b.npz": b"new b", "d": None, "d/part-00000.parquet": b"new part"}


def make_old(directory: Path) -> None:
    (directory / "a.csv").write_bytes(b"old a")
    (directory / "d").mkdir()
    (directory / "d" / "part-00000.parquet").write_bytes(b"old part")


def write_new(directory: Path, overwrite: bool) -> None:
    """The new set: a replaced file, a new file, a replaced directory of parts."""
    with OutputSet(overwrite=overwrite) as outputs:
        outputs.file(directory / "a.csv").write_bytes(b"new a")
        outputs.file(directory / "b.npz").write_bytes(b"new b")
        staged = outputs.directory(directory / "d")
        (staged / "part-00000.parquet").write_bytes(b"new part")
        outputs.commit()


def fresh(directory: Path, old: bool) -> Path:
    """A new directory, holding the old outputs if ``old``."""
    directory.mkdir()
    if old:
        make_old(directory)
    return directory


def count_steps(tmp_path, monkeypatch, names, old: bool) -> int:
    trial = fresh(tmp_path / "trial", old)
    with monkeypatch.context() as patch:
        faults = Faults(patch, names)
        write_new(trial, overwrite=True)
    assert snapshot(trial) == NEW and leftovers(trial) == []
    return len(faults.calls)


@pytest.mark.parametrize("old", [True, False], ids=["replacing", "creating"])
@pytest.mark.parametrize(
    "error", [KeyboardInterrupt(), OSError(28, "No space left on device")], ids=repr
)
def test_a_failure_at_any_step_leaves_all_old_outputs(tmp_path, monkeypatch, old, error):
    n_steps = count_steps(tmp_path, monkeypatch, MOVES, old)
    # staging the directory; per output: a backup of the old one, and an exclusive move (for a
    # directory: creating it, then renaming the staged one over it)
    assert n_steps == (1 + 2 + 2 + 2 if old else 1 + 1 + 1 + 2)
    before = {} if not old else OLD
    for at in range(n_steps):
        directory = fresh(tmp_path / f"run{at}", old)
        with monkeypatch.context() as patch:
            Faults(patch, MOVES, at, raise_(error))
            with pytest.raises(type(error)):
                write_new(directory, overwrite=True)
        assert snapshot(directory) == before, f"step {at}"
        assert leftovers(directory) == [], f"step {at}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("old", [True, False], ids=["replacing", "creating"])
def test_a_signal_at_any_step_leaves_all_old_or_all_new_outputs(tmp_path, monkeypatch, old, signum):
    class Stop(BaseException):
        pass

    def stop(number, frame):
        raise Stop(number)

    steps = (*MOVES, *REMOVALS)
    n_steps = count_steps(tmp_path, monkeypatch, steps, old)
    outcomes = set()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for at in range(n_steps):
            directory = fresh(tmp_path / f"run{at}", old)
            with monkeypatch.context() as patch:
                Faults(patch, steps, at, send(signum))
                with pytest.raises(Stop) as raised:
                    write_new(directory, overwrite=True)
            assert raised.value.args == (signum,)
            state = snapshot(directory)
            written = getattr(raised.value, "written", None)
            # a signal during the moves undoes them; one during the clean-up after them comes
            # once the clean-up is done, with the outputs written (and named on the exception)
            assert state == (NEW if written else OLD if old else {}), f"step {at}"
            assert leftovers(directory) == [], f"step {at}"
            outcomes.add("new" if written else "old")
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    assert outcomes == {"old", "new"}


def test_without_overwrite_a_target_that_appeared_is_kept_and_nothing_written(tmp_path):
    with OutputSet(overwrite=False) as outputs:
        outputs.file(tmp_path / "a.csv").write_text("mine a")
        outputs.file(tmp_path / "b.csv").write_text("mine b")
        (tmp_path / "b.csv").write_text("theirs")  # another program, meanwhile
        with pytest.raises(FileExistsError, match="b.csv was created by another program"):
            outputs.commit()
    assert snapshot(tmp_path) == {"b.csv": b"theirs"}
    dangling = tmp_path / "c.csv"
    dangling.symlink_to(tmp_path / "nowhere")  # a link to nothing is a file that exists too
    with pytest.raises(FileExistsError, match="c.csv was created"):
        write_atomically([(dangling, lambda tmp: tmp.write_text("mine"))], overwrite=False)
    assert os.readlink(dangling) == str(tmp_path / "nowhere")
    dangling.unlink()
    for make in (lambda p: p.mkdir(), lambda p: p.symlink_to(tmp_path / "nowhere")):
        target = tmp_path / "d"
        make(target)
        with OutputSet(overwrite=False) as outputs:
            outputs.directory(target)
            with pytest.raises(FileExistsError):
                outputs.commit()
        assert target.is_symlink() or list(target.iterdir()) == []
        target.rmdir() if not target.is_symlink() else target.unlink()
    assert leftovers(tmp_path) == []


def test_overwrite_replaces_a_symlink_without_following_it(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    (tmp_path / "out.csv").symlink_to(precious)
    write_atomically([(tmp_path / "out.csv", lambda tmp: tmp.write_text("new"))])
    assert precious.read_text() == "keep" and not (tmp_path / "out.csv").is_symlink()
    assert (tmp_path / "out.csv").read_text() == "new"


@pytest.mark.parametrize("name_length", [200, 251, 255])
def test_the_longest_names_can_be_written(tmp_path, name_length):
    for suffix in (".csv", ".csv.gz", ".npz"):
        name = "x" * (name_length - len(suffix)) + suffix
        write_atomically([(tmp_path / name, lambda tmp: tmp.write_text("ok"))])
        assert (tmp_path / name).read_text() == "ok"
        # the format and compression stay readable from the temporary name
        assert write_seen_suffix(tmp_path / ("y" * 240 + suffix)) == suffix
    assert leftovers(tmp_path) == []


def write_seen_suffix(target: Path) -> str:
    seen = []
    write_atomically([(target, lambda tmp: (seen.append(tmp), tmp.write_text("")))])
    assert len(seen[0].name) <= 5 + 8 + len(".csv.gz")
    return "".join(seen[0].suffixes)


def test_an_interrupt_a_writer_turned_into_another_error_stays_an_interrupt(tmp_path):
    """``np.savez_compressed`` interrupted inside a member: closing the archive while the
    member is open raises ValueError; the interrupt is what the caller sees."""

    def write(tmp):
        with zipfile.ZipFile(tmp, "w") as archive, archive.open("member", "w") as member:
            member.write(b"x" * 100)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically([(tmp_path / "m.npz", write)])
    assert list(tmp_path.iterdir()) == []


def test_a_second_signal_during_the_clean_up_waits_for_it(tmp_path, monkeypatch):
    """Ctrl-C then SIGTERM: the clean-up after the first is not broken off by the second."""
    calls = []
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # the second signal, mid clean-up
        return real_unlink(path, *args, **kwargs)

    def interrupted(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(
            [
                (tmp_path / "a.csv", lambda tmp: tmp.write_text("a")),
                (tmp_path / "b.csv", lambda tmp: tmp.write_text("b")),
                (tmp_path / "c.csv", interrupted),
            ]
        )
    assert len(calls) == 3 and list(tmp_path.iterdir()) == []


def test_signals_deferred_delivers_after_and_keeps_ignored_signals_ignored():
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt), signals_deferred() as received:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)  # ignored before: stays ignored
            assert received == [signal.SIGINT]
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_recorder_left_installed_acts_as_the_handler_it_replaced():
    """Putting the handlers back can be cut short (``signal.signal`` runs a pending handler,
    which may raise before the other is put back): the recorder left installed must then act
    as the handler it replaced, not swallow every later signal. Simulated by putting the
    recorder back by hand after the block."""

    class Stop(BaseException):
        pass

    def stop(signum, frame):
        raise Stop()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with signals_deferred():
            recorder = signal.getsignal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is stop
        signal.signal(signal.SIGTERM, recorder)  # as if the restore had been cut short
        with pytest.raises(Stop):
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------------------ processes
_RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from crowdbayes._atomic import write_atomically

    target, barrier, me = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def write(tmp):
        tmp.write_text(me * 1000)
        (barrier / me).touch()  # staged: wait until the other one has staged too
        deadline = time.monotonic() + 60
        while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)

    try:
        write_atomically([(target, write)], overwrite=False)
    except FileExistsError as err:
        print(err)
        sys.exit(1)
    """
)


def test_two_processes_writing_one_file_exactly_one_wins(tmp_path):
    for round_ in range(4):
        target, barrier = tmp_path / f"out{round_}.csv", tmp_path / f"barrier{round_}"
        barrier.mkdir()
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", _RACER, str(target), str(barrier), me],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for me in "AB"
        ]
        results = [(r.wait(timeout=120), *r.communicate()) for r in racers]
        codes = sorted(code for code, _, _ in results)
        assert codes == [0, 1], results
        loser = next(out for code, out, _ in results if code == 1)
        assert loser.count("\n") == 1 and "was created by another program" in loser
        winner = "AB"[[code for code, _, _ in results].index(0)]
        assert target.read_text() == winner * 1000
    assert leftovers(tmp_path) == []


def test_model_files_of_the_library_still_replace_by_default(tmp_path):
    """``persistence.write_model_file`` goes through ``write_atomically``'s default."""
    target = tmp_path / "m.npz"
    for value in (1, 2):
        write_atomically([(target, lambda tmp, v=value: np.save(open(tmp, "wb"), v))])
    assert int(np.load(target)) == 2
    assert _atomic.current_umask() == _atomic.current_umask()


def test_a_signal_whose_handler_returns_leaves_nothing_written_and_says_so(tmp_path, monkeypatch):
    previous = signal.signal(signal.SIGINT, lambda number, frame: None)
    try:
        with monkeypatch.context() as patch:
            Faults(patch, MOVES, 2, send(signal.SIGINT))  # during the moves
            with pytest.raises(InterruptedError, match="none written"):
                write_new(tmp_path, overwrite=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert snapshot(tmp_path) == {} and leftovers(tmp_path) == []
