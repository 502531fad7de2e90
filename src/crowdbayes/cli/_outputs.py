"""The output options of every command: declared once, checked before any input is read.

A command adds each option that names a file it writes with :func:`add_output`; the first one
also adds ``--force``. :func:`check_outputs` (called by :func:`crowdbayes.cli.main` before the
command runs, so before a possibly long fit) refuses

- an empty name (``--out ''``), even with ``--force``;
- a name whose suffix is not one of the option's format (:class:`OutputOption`
  ``suffixes``: tables ``.csv``, ``.tsv``, ``.parquet``/``.pq``, ``.csv.gz``/``.tsv.gz``;
  model files ``.npz``; the report ``.html``): a table named ``.xlsx`` would get CSV inside;
- an existing file, unless ``--force`` (the file is left untouched) or it is the file the
  option is declared to update in place (``replaces``: ``--save-model`` may name the
  ``--init-model`` it continues from); a symbolic link too, even one to nothing (with
  ``--force`` the link itself is replaced, never followed);
- a directory where a file is expected;
- a missing parent directory (nothing is created silently);
- two output options naming the same file.

The files themselves are written by :func:`crowdbayes.cli._record.write_outputs` (one
:class:`crowdbayes._atomic.OutputSet`): all or nothing, committed together, with the umask's
permissions; a file that appeared since this check is refused at the commit unless
``--force``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ._common import CommandError

__all__ = [
    "HTML_SUFFIXES",
    "MODEL_SUFFIXES",
    "TABLE_SUFFIXES",
    "OutputOption",
    "add_output",
    "check_outputs",
]

#: the names of a table output: the formats :func:`crowdbayes.data.io.table_writer` writes
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".csv.gz", ".tsv.gz")
#: the name of a model file (:mod:`crowdbayes.persistence`)
MODEL_SUFFIXES = (".npz",)
#: the name of a report (an HTML page)
HTML_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class OutputOption:
    """An option naming an output: its flag, its ``args`` attribute, whether the output may
    be a directory (the Dask backend's per-partition results), and the ``args`` attribute of
    an input it may overwrite without ``--force`` (the same file named on purpose: updated
    in place, atomically), and the suffixes its name may end with (case-insensitive; a
    directory of the Dask backend has none)."""

    flag: str
    dest: str
    directory_ok: bool = False
    replaces: str | None = None
    suffixes: tuple[str, ...] = TABLE_SUFFIXES


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
    suffixes: tuple[str, ...] | None = None,
) -> None:
    """Add the output option ``flag`` (and its ``short`` form) to ``parser`` (in ``group`` if
    given; and ``--force`` with the first one); ``replaces`` and ``suffixes``: see
    :class:`OutputOption` (by default those of the output's kind: a model file for
    ``--save-model``, a page for the ``report`` command's, a table for any other)."""
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
    if suffixes is None:
        suffixes = _default_suffixes(parser, flag)
    option = OutputOption(flag, action.dest, directory_ok, replaces, suffixes)
    parser.set_defaults(output_options=(*declared, option))


def _default_suffixes(parser: argparse.ArgumentParser, flag: str) -> tuple[str, ...]:
    if flag == "--save-model":
        return MODEL_SUFFIXES
    if parser.prog.split()[1:2] == ["report"]:
        return HTML_SUFFIXES
    return TABLE_SUFFIXES


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse the outputs of ``args`` that could not or should not be written (see above)."""
    seen: dict[Path, str] = {}
    # the Dask backend writes a directory of partitions where a directory is allowed
    directories = getattr(args, "backend", None) == "dask"
    for option in getattr(args, "output_options", ()):
        value = getattr(args, option.dest, None)
        if value is None:
            continue
        if not str(value).strip():
            raise CommandError(f"{option.flag}: give a file name (got {value!r})")
        path = Path(value)
        key = path.resolve()
        replaced = getattr(args, option.replaces, None) if option.replaces else None
        in_place = replaced is not None and Path(replaced).resolve() == key
        _check_one(option, path, force=bool(getattr(args, "force", False)) or in_place)
        _check_suffix(option, str(value), directory=directories and option.directory_ok)
        if key in seen:
            raise CommandError(f"{option.flag} and {seen[key]} name the same file: {value}")
        seen[key] = option.flag


def _check_suffix(option: OutputOption, value: str, *, directory: bool) -> None:
    """Refuse a name without one of the option's suffixes (unless the output is a
    directory)."""
    if directory or value.lower().endswith(option.suffixes):
        return
    raise CommandError(
        f"{option.flag}: {value} does not end in {', '.join(option.suffixes)}; name the file "
        "by its format"
    )


def _check_one(option: OutputOption, path: Path, *, force: bool) -> None:
    flag = option.flag
    if path.is_dir() and not option.directory_ok:
        raise CommandError(f"{flag}: {path} is a directory; give a file name")
    if path.is_symlink() and not path.exists() and not force:
        raise CommandError(
            f"{flag}: {path} is a symbolic link to {os.readlink(path)}, which does not exist; "
            "pass --force to replace the link"
        )
    if path.exists() and not force:
        raise CommandError(f"{flag}: {path} exists; pass --force to overwrite it")
    parent = path.parent
    if not parent.exists():
        raise CommandError(f"{flag}: cannot write {path}: the directory {parent} does not exist")
    if not parent.is_dir():
        raise CommandError(f"{flag}: cannot write {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"{flag}: cannot write {path}: the directory {parent} is not writable")
