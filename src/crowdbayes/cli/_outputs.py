"""The output options of every command: declared once, checked before any input is read.

A command adds each option that names a file it writes with :func:`add_output`; the first one
also adds ``--force``. :func:`check_outputs` (called by :func:`crowdbayes.cli.main` before the
command runs, so before a possibly long fit) refuses

- an existing file, unless ``--force`` (the file is left untouched) or it is the file the
  option is declared to update in place (``replaces``: ``--save-model`` may name the
  ``--init-model`` it continues from);
- a directory where a file is expected;
- a missing parent directory (nothing is created silently);
- two output options naming the same file.

The files themselves are written by :func:`crowdbayes.persistence.write_atomically`: all or
nothing, with the umask's permissions.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ._common import CommandError

__all__ = ["add_output", "check_outputs", "OutputOption"]


@dataclass(frozen=True)
class OutputOption:
    """An option naming an output: its flag, its ``args`` attribute, whether the output may
    be a directory (the Dask backend's per-partition results), and the ``args`` attribute of
    an input it may overwrite without ``--force`` (the same file named on purpose: updated
    in place, atomically)."""

    flag: str
    dest: str
    directory_ok: bool = False
    replaces: str | None = None


def add_output(
    parser: argparse.ArgumentParser,
    flag: str,
    help: str,
    *,
    required: bool = False,
    directory_ok: bool = False,
    replaces: str | None = None,
    metavar: str | None = None,
    group=None,
    short: str | None = None,
) -> None:
    """Add the output option ``flag`` (and its ``short`` form) to ``parser`` (in ``group`` if
    given; and ``--force`` with the first one); ``replaces``: see :class:`OutputOption`."""
    target = parser if group is None else group
    names = (short, flag) if short else (flag,)
    action = target.add_argument(*names, required=required, help=help, metavar=metavar)
    declared = tuple(parser.get_default("output_options") or ())
    if not declared:
        parser.add_argument(
            "--force",
            action="store_true",
            help="overwrite output files that exist (refused otherwise)",
        )
    declared = tuple(o for o in declared if o.flag != flag)
    option = OutputOption(flag, action.dest, directory_ok, replaces)
    parser.set_defaults(output_options=(*declared, option))


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse the outputs of ``args`` that could not or should not be written (see above)."""
    seen: dict[Path, str] = {}
    for option in getattr(args, "output_options", ()):
        value = getattr(args, option.dest, None)
        if value is None:
            continue
        path = Path(value)
        key = path.resolve()
        replaced = getattr(args, option.replaces, None) if option.replaces else None
        in_place = replaced is not None and Path(replaced).resolve() == key
        _check_one(option, path, force=bool(getattr(args, "force", False)) or in_place)
        if key in seen:
            raise CommandError(f"{option.flag} and {seen[key]} name the same file: {value}")
        seen[key] = option.flag


def _check_one(option: OutputOption, path: Path, *, force: bool) -> None:
    flag = option.flag
    if str(path) == "":
        raise CommandError(f"{flag}: give a file name")
    if path.is_dir() and not option.directory_ok:
        raise CommandError(f"{flag}: {path} is a directory; give a file name")
    if path.exists() and not force:
        raise CommandError(f"{flag}: {path} exists; pass --force to overwrite it")
    parent = path.parent
    if not parent.exists():
        raise CommandError(f"{flag}: cannot write {path}: the directory {parent} does not exist")
    if not parent.is_dir():
        raise CommandError(f"{flag}: cannot write {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"{flag}: cannot write {path}: the directory {parent} is not writable")
