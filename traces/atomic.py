"""Atomic output files: write to a temporary file in the same folder, then rename.

After a failure there is no half-written file, and an existing file of the same
name is left as it was (DESIGN.md, "The command"). A process killed outright
(``kill -9``) cannot remove its temporary file; its name carries the writer's
process id (``.NAME.PID.RANDOM.tmp``), and the next write of the same file
removes the temporaries of writers that no longer run. No folder is made: the
output's folder must exist (``check_output_folder``).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import InputError

log = logging.getLogger(__name__)

NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""The errors of a write that say the machine cannot hold the output (a full disk, a quota, a file too large, a
read-only or failing file system): the user's to fix, said in one line, not a bug."""


def no_room(exc: BaseException) -> bool:
    """Whether ``exc`` is an ``OSError`` of :data:`NO_ROOM` (pyarrow's carry the errno too)."""
    return isinstance(exc, OSError) and exc.errno in NO_ROOM


@contextmanager
def atomic_path(path) -> Iterator[str]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``.

    The output's folder must exist (``check_output_folder``: no folder is made). A folder that
    is missing, is a file or cannot be written, or a target that cannot be replaced (a folder
    of that name), is an ``InputError`` naming the path (the command's exit 2), not a crash.
    """
    target = Path(path)
    check_output_folder(path)
    try:
        remove_stale_temporaries(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{path}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        try:
            yield tmp
        except OSError as exc:
            if no_room(exc):
                raise InputError(f"{path}: cannot write it ({os.strerror(exc.errno)})") from None
            raise
        # mkstemp makes the file private; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise InputError(f"{path}: cannot replace it ({exc.strerror or exc})") from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def check_output_folder(path, inputs=()) -> None:
    """Refuse an output whose folder does not exist or is not a folder, an empty path, or an output that is one
    of the run's ``inputs`` (paths; those that do not exist are passed over): an ``InputError`` naming the path.
    Before, ``train m.csv -o m.csv`` and ``rank t.parquet --report t.parquet`` replaced their own input and
    exited 0.

    Writers make no folders: an output goes into a folder that exists, as a shell's ``>``
    does, so a mistyped path (``/nonexistent/x/r.html``) is an error instead of a tree of
    new folders. Commands call this before their work, so that a run is not wasted on an
    output it cannot write; ``atomic_path`` calls it again.
    """
    if str(path) == "":
        raise InputError("the output path is empty")
    for src in inputs:
        if src is not None and str(src) != "" and _same_file(path, src):
            raise InputError(f"{path}: is an input of this run ({src}); write the output to another path")
    parent = Path(path).parent
    try:
        st = os.stat(parent)
    except FileNotFoundError:
        raise InputError(f"{path}: cannot write there (folder {parent} does not exist)") from None
    except NotADirectoryError:
        raise InputError(f"{path}: cannot write there ({_file_in(parent)} is not a folder)") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise InputError(f"{path}: cannot write there ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: cannot write there ({parent} is not a folder)")
    if os.path.isdir(path):  # said before the work (train fitted first, then could not replace the folder)
        raise InputError(f"{path}: is a folder; give the file to write")


def _same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` both exist and are one file (links and other spellings included)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _file_in(folder: Path) -> Path:
    """The first part of ``folder`` that exists and is not a folder (``folder`` itself if none is found)."""
    for p in [*reversed(folder.parents), folder]:
        if os.path.exists(p) and not os.path.isdir(p):
            return p
    return folder


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove the temporaries of ``target`` left by writers that were killed; returns them."""
    prefix = f".{target.name}."
    removed = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if not pid.isdigit() or _running(int(pid)):
            continue
        try:
            os.unlink(target.parent / name)
            removed.append(target.parent / name)
        except OSError:
            continue
    if removed:
        log.info("removed %d temporary files of %s left by killed writers", len(removed), target)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError as exc:  # EPERM: another user's process
        return exc.errno == errno.EPERM
    return True


def write_text(path, text: str) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
