"""Append-only JSON-lines logs, with torn-tail repair.

Owns: appending records to a JSON-lines file and reading them back. A write cut short (a crash,
a killed hook, a full disk) leaves a last line without its newline; a plain append would then
glue the next record onto that torn line and the reader would drop both. `append` therefore
cuts the file back to its last complete line before it writes, so every record it appends can be
read again. The repair and the write happen under an exclusive lock on the log itself
(`tether.locking`), so concurrent appenders never cut each other's records; a caller that must
read and append as one step (the guard's session store) holds its own lock around both. A log is
never appended to through a symbolic link (nor a FIFO, a device or a folder): `append` raises
`tether.files.NotARegularFile` instead, so neither a write nor the repair reaches another file.
`read` (and `parse`, for a reader that opens the file itself) skips a line that is not a JSON
object. It does not decide what goes in a log, rotate or delete one.
"""

from __future__ import annotations

import json
import os

from tether.files import open_regular, write_all
from tether.locking import locked

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays out of a step's start-up (the file store's refusal log)
    from collections.abc import Iterable
    from typing import Any

_CHUNK = 64 * 1024
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def _read_at(fd: int, size: int, offset: int) -> bytes:
    """`size` bytes at `offset` (os.pread, which Windows lacks, spelt with a seek)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def _last_complete(fd: int, size: int) -> int:
    """The length of the file's complete lines: the offset just past its last newline."""
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        found = _read_at(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def append(path: str, records: Iterable[dict[str, Any]]) -> int:
    """Append `records` as JSON lines (repairing a torn tail first); returns the new size."""
    data = "".join(json.dumps(record) + "\n" for record in records).encode()
    fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _BINARY)
    try:
        with locked(fd):
            size = os.lseek(fd, 0, os.SEEK_END)
            if size and _read_at(fd, 1, size - 1) != b"\n":
                size = _last_complete(fd, size)
                os.ftruncate(fd, size)
            write_all(fd, data)
            return size + len(data)
    finally:
        os.close(fd)


def read(path: str, start: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The records from byte `start` on, oldest first, and the file's size (0 when missing)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(min(start, size))
            tail = handle.read()
    except FileNotFoundError:
        return [], 0
    return parse(tail), size


def parse(data: bytes) -> list[dict[str, Any]]:
    """The records of a log's bytes, oldest first; a line that is not a JSON object (a torn last
    line) is skipped."""
    records = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
