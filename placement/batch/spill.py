"""The temporary folder a batch run writes its generated traces to (to stream them), and the removal of the folders
that killed runs left behind.

A run's folder holds a lock file that the run keeps locked (``fcntl.flock``) until it removes the folder. The kernel
drops a lock when the last process holding its file dies, however the run ended, so a folder whose lock can be taken
belongs to no running process: the next batch run removes it (:func:`sweep`, called by ``placement.batch.run``).
The folder is made under a name the sweep does not look at and renamed once locked, so no run sweeps another's
folder in the instant between its creation and its lock. Where ``fcntl`` is missing (Windows), or the file system
refuses locks, folders are not locked and none is swept (a sweep that cannot take a lock passes the folder by): a
killed run's folder stays in ``TMPDIR`` there, as it did everywhere before.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None

log = logging.getLogger(__name__)

PREFIX = "placement-batch-"
"""The prefix of a run's folder in ``tempfile.gettempdir()``."""

LOCK = ".lock"
"""The lock file in a run's folder."""


def _locked(path: str, blocking: bool) -> int | None:
    """A descriptor of ``path`` (created if absent) holding its exclusive lock, or None where another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def sweep(parent: str | None = None) -> list[str]:
    """Remove the run folders in ``parent`` (``tempfile.gettempdir()``) whose lock no process holds; returns them.

    A folder without a lock file (made by a version before this one, or by hand) is left alone, as is any entry
    that cannot be read or removed (another user's, for instance): the sweep never fails a run."""
    if fcntl is None:
        return []
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    for name in names:
        path = os.path.join(parent, name)
        lock = os.path.join(path, LOCK)
        if not name.startswith(PREFIX) or not os.path.isfile(lock):
            continue
        try:
            fd = _locked(lock, blocking=False)
        except OSError:
            continue
        if fd is None:  # a running batch holds it
            continue
        try:
            shutil.rmtree(path)
            removed.append(path)
            log.info("batch: removed %s, left by a run that was killed", path)
        except OSError as exc:
            log.debug("batch: cannot remove %s: %s", path, exc)
        finally:
            os.close(fd)
    return removed


def _remove(name: str, fd: int | None) -> None:
    shutil.rmtree(name, ignore_errors=True)
    if fd is not None:
        os.close(fd)


class SpillFolder:
    """A run's temporary folder, locked while the run lasts (module docstring); ``cleanup`` removes it, as does the
    collection of the object (``tempfile.TemporaryDirectory``'s habit)."""

    def __init__(self, parent: str | None = None):
        parent = parent or tempfile.gettempdir()
        fresh = tempfile.mkdtemp(prefix="." + PREFIX, dir=parent)
        fd = None
        if fcntl is not None:
            try:
                fd = _locked(os.path.join(fresh, LOCK), blocking=True)
            except OSError as exc:  # a file system without locks (some NFS mounts): the folder is not swept
                log.debug("batch: cannot lock %s: %s", fresh, exc)
        name = os.path.join(parent, os.path.basename(fresh)[1:])
        try:
            os.rename(fresh, name)  # (a clash with a folder of that name is an OSError)
        except OSError:
            name = fresh  # kept hidden: no sweep looks at it, and cleanup removes it all the same
        self.name: str = name
        self._finalizer = weakref.finalize(self, _remove, name, fd)

    def cleanup(self) -> None:
        """Remove the folder (once; later calls do nothing)."""
        self._finalizer()
