"""Outputs never replace inputs: an output path that is an input file (the same file through a
symlink, a hard link or another spelling of the path) is refused before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would resolve to
        return a.resolve() == b.resolve()


def refuse_output_over_inputs(output: str | Path, inputs: list[str | Path], flag: str) -> None:
    """Raises InputError when `output` (given with `flag`, e.g. "--out") is one of `inputs`, or a
    directory (a file is written there, never into a folder)."""
    out = Path(output)
    if out.is_dir():
        raise InputError("", f"{flag} {output}: is a directory; give a file name such as compare.md")
    for given in inputs:
        if _same_file(out, Path(given)):
            raise InputError("", f"{flag} {output}: is the input {given}; writing it would destroy the input: "
                                 f"give {flag} another file")


def refuse_folder_over_inputs(folder: str | Path, kept, inputs: list[str | Path], flag: str) -> None:
    """Raises InputError when replacing `folder` would remove or overwrite an input: an input inside it,
    unless `kept(name, is_dir)` says the replacement carries over the file, or the folder of `folder`
    that holds it (atomic.py)."""
    target = Path(folder).resolve()
    for given in inputs:
        path = Path(given).resolve()
        if target == path or target in path.parents:
            parts = path.relative_to(target).parts if path != target else ()
            if parts and kept(parts[0], len(parts) > 1):  # a file directly in it, or in a folder of it
                continue
            raise InputError("", f"{flag}: the report folder {folder} is or holds the input {given}, which writing the "
                                 "report would replace or remove: choose another --name or --out-dir")
