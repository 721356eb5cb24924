"""Exclusive file locks that work on every platform Tether runs on.

Owns taking and releasing an exclusive lock on an open file: `flock` on POSIX, `msvcrt.locking`
on Windows, chosen once at import by the platform, so that nothing POSIX-only is imported where
it does not exist. On both, the lock keeps out other lockers only, not readers or writers of the
file. `locked(fd)` releases it on exit (closing the file does on POSIX; Windows wants it
released). It does not open or create the files it locks (callers do: the file store's
`run.json.lock`, the guard's session locks and logs).

It also owns `without_waiting`: a block, on one thread, in which the first lock that would have
to wait for another holder raises `WouldWait` instead (a file lock through `lock`, an in-process
lock through `hold`, a database through `may_wait`). The MCP server runs a tool call so on its
event loop and, on `WouldWait`, runs it again on a worker thread, where waiting stalls nothing
else. Once the block holds a lock it stops refusing: what the call did under that lock may be
committed, so running it again would not be the same call.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class WouldWait(Exception):
    """Taking a lock would have waited, inside a `without_waiting` block."""


_refusing = threading.local()  # .on: this thread is in a block that has taken no lock yet


@contextmanager
def without_waiting() -> Iterator[None]:
    """Within the block, on this thread, the first lock that is held elsewhere raises
    `WouldWait` rather than waiting for it (see the module docstring)."""
    _refusing.on = True
    try:
        yield
    finally:
        _refusing.on = False


def _refuses() -> bool:
    return bool(getattr(_refusing, "on", False))


def may_wait() -> None:
    """Raise `WouldWait` inside a `without_waiting` block: for work that waits on something
    other than a lock (a database over the network)."""
    if _refuses():
        raise WouldWait


@contextmanager
def hold(mutex: threading.Lock, reading: bool = False) -> Iterator[None]:
    """Hold an in-process lock for the block, as `with mutex:` does, but under
    `without_waiting` raise `WouldWait` when another thread holds it. A block that only reads
    (`reading`) leaves the refusal on for the locks after it."""
    if not mutex.acquire(blocking=not _refuses()):
        raise WouldWait
    _refusing.on = reading and _refuses()
    try:
        yield
    finally:
        mutex.release()


if sys.platform == "win32":
    import errno
    import msvcrt

    # msvcrt locks a byte range from the file position, and Windows keeps other processes from
    # reading or writing a locked range: the lock is on one byte far past any data (1 TiB in),
    # so it excludes other lockers only, as flock does.
    _OFFSET = 1 << 40

    def _at_lock_byte(fd: int, mode: int) -> None:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, _OFFSET, os.SEEK_SET)
        try:
            while True:
                try:
                    msvcrt.locking(fd, mode, 1)
                    return
                except OSError as exc:
                    # LK_LOCK gives up after ten one-second tries: try again, so that a writer
                    # waits for the one before it as long as it takes, as with flock.
                    if mode != msvcrt.LK_LOCK or exc.errno != errno.EDEADLOCK:
                        raise
        finally:
            os.lseek(fd, position, os.SEEK_SET)

    def _take(fd: int, wait: bool) -> bool:
        try:
            _at_lock_byte(fd, msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK)
        except OSError:
            if wait:
                raise
            return False
        return True

    def unlock(fd: int) -> None:
        """Release the lock `lock(fd)` took."""
        _at_lock_byte(fd, msvcrt.LK_UNLCK)

else:
    import fcntl

    def _take(fd: int, wait: bool) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def unlock(fd: int) -> None:
        """Release the lock `lock(fd)` took."""
        fcntl.flock(fd, fcntl.LOCK_UN)


def lock(fd: int) -> None:
    """Block until this process holds the exclusive lock on the open file `fd` (under
    `without_waiting`, take it only if it is free, else raise `WouldWait`)."""
    if not _take(fd, wait=not _refuses()):
        raise WouldWait
    _refusing.on = False


@contextmanager
def locked(fd: int) -> Iterator[None]:
    """Hold the exclusive lock on `fd` for the duration of the block."""
    lock(fd)
    try:
        yield
    finally:
        unlock(fd)
