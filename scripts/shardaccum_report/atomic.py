"""Writes that never leave a half-written file or report: write into a temporary beside the target,
then rename over it (a rename within one file system is atomic on POSIX)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


# What a report writes into its folder (report.py, validation.py): replaced by each new report, so
# that a file the new one does not write (a validation.json of runs no longer given) does not stay.
REPORT_OWN = ("README.md", "validation.json")


def carried_over(name: str, is_dir: bool = False) -> bool:
    """Whether a file (or, with is_dir, a folder) of this name in an old report folder is kept when
    atomic_directory replaces it: every folder, and every file but the report's own (REPORT_OWN, *.png)."""
    return is_dir or (name not in REPORT_OWN and not name.endswith(".png"))


def _remove_uninterrupted(path: Path) -> None:
    """rmtree with SIGINT and SIGTERM held back until it is done (delivered after it): a signal in the
    middle would leave a partial hidden folder that nothing removes later."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError, OSError):
        before = None
    try:
        shutil.rmtree(path, ignore_errors=True)
    finally:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _carry_over(target: Path, tmp: Path) -> None:
    """Copies into `tmp` what `target` holds that is not the report's own, such as the run.json the
    report was made from or a folder of profiles beside it: regenerating a report never deletes its
    input or the evidence kept with it. Copied, not moved: a failure before the swap leaves `target`
    whole."""
    for f in target.iterdir():
        real_dir = f.is_dir() and not f.is_symlink()
        if not carried_over(f.name, real_dir) or (tmp / f.name).exists():
            continue
        if real_dir:
            shutil.copytree(f, tmp / f.name, symlinks=True)
        else:
            shutil.copy2(f, tmp / f.name, follow_symlinks=False)


class FolderNotMade(OSError):
    """atomic_directory could not begin: `target`'s parent or the temporary beside it cannot be made
    (a parent this user cannot write, /proc, a name over the file system's 255 bytes). `filename` is
    `target`, not the temporary."""


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yields an empty temporary directory beside `target`; when the block ends without an exception,
    the directory replaces `target` (an older one is removed, except for what carried_over keeps:
    every folder and every file but the report's own, e.g. the run.json the report was made from,
    logs, profiles), otherwise it is deleted and `target` is left as it was, also when the exception
    (Ctrl-C, SIGTERM) comes between the two renames of the swap. Raises FolderNotMade (an OSError) when
    the parent or the temporary cannot be created, before the block runs, and NotADirectoryError when
    `target` exists and is not a directory."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        not_a_directory = target.exists() and not target.is_dir()  # a name too long raises here
        if not not_a_directory:
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    except OSError as e:
        raise FolderNotMade(e.errno, e.strerror or str(e), str(target)) from None
    if not_a_directory:
        raise NotADirectoryError(f"{target} exists and is not a directory")
    old: Path | None = None
    swapped = False
    try:
        yield tmp
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a report is for everyone to read
        if target.exists():
            _carry_over(target, tmp)
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rename(target, old / target.name)
        os.rename(tmp, target)
        swapped = True
    except BaseException:
        if not swapped:
            # Interrupted between the renames: the old report goes back where it was.
            if old is not None and (old / target.name).exists() and not target.exists():
                os.rename(old / target.name, target)
            _remove_uninterrupted(tmp)
        raise
    finally:
        # Never the old report itself when it could not be put back: it stays in .NAME.old-*.
        if old is not None and (swapped or not (old / target.name).exists()):
            _remove_uninterrupted(old)


def _destination(path: Path) -> tuple[Path, bool]:
    """The file a write to `path` replaces, and whether it is written in place instead: every link of
    a chain is followed up to /dev/ or /proc/ (where /dev/stdout leads into the process's fds); a
    device, pipe or link there cannot be renamed over (that replaced /dev/stdout itself as root)."""
    p = str(path)
    for _ in range(40):
        if p.startswith(("/dev/", "/proc/")) or not os.path.islink(p):
            break
        p = os.path.join(os.path.dirname(p), os.readlink(p))
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        return Path(p), False
    return Path(p), not stat.S_ISREG(mode) and p.startswith(("/dev/", "/proc/"))


def write_text_atomic(path: Path, text: str) -> Path:
    """Writes UTF-8 text to `path` through a temporary file and a rename (a device or /dev/stdout in
    place, see _destination). Raises OSError."""
    path, in_place = _destination(Path(path))
    if in_place:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
