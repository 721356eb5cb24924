"""Files Tether writes: one atomic write, and one way to open a file without following a link.

Owns `write_atomic` (a temporary file beside the target, created exclusively and never through a
symbolic link, written, optionally synced, then renamed over the target, so a reader sees the old
file or the new one and never half of either), `write_all` (every byte of a buffer to a
descriptor, which appends and commits share), `open_regular` (a file descriptor for a regular
file, refusing a symbolic link at the last component, a folder, a FIFO or a device) and
`linked_folder` (the folder of a project's file that is a symbolic link, if one is) and
`safe_name` (a file name for an id given by someone else). It also
names the temporary files `write_atomic` leaves behind when its process is killed, so that the
owner of a folder can tidy them. It does not decide where files go, what they hold or which error
a refusal becomes: callers turn `NotARegularFile` and `OSError` into their own `TetherError`.

It owns path confinement too: `is_inside`, whether a path, resolved, lies inside a root, the one
rule that every `--root`, served folder, `$ref` base and project boundary is held to (no other
module compares paths for it; `tests/test_one_home.py` holds that).

`TETHER_FSYNC=1` (read once, at import) makes every write `fsync` the file before the rename, for
durability across a power loss; without it a write survives the death of the process.

For the files Tether edits in a user's project or home (an MCP client's configuration, an agent's
hook settings, the skill), `read_json` reads a JSON object and `write_file` replaces a file
through `write_atomic`, never through a symbolic link among the project's folders; these two
refuse with a `TetherError` naming the file, which is left untouched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat

from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

FSYNC = os.environ.get("TETHER_FSYNC", "") not in ("", "0")
# What `write_atomic` names its temporary file: `<target>.<pid>.<8 hex digits>.tmp`. Before this
# module, temporaries were `<target>.<pid>.tmp`; both spellings match.
TEMPORARY = re.compile(r"\.(\d+)(?:\.[0-9a-f]{8})?\.tmp")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class NotARegularFile(OSError):
    """The path is a symbolic link, a folder or another kind of file that is not a regular one;
    `kind` says which: `link`, `folder` or `other`."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def open_regular(path: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """A descriptor of the regular file at `path`, opened with `flags` without following a
    symbolic link there (a link in a folder above is followed). A FIFO is opened without waiting
    for a writer and then refused, like a folder or a device. Raises `NotARegularFile` for those,
    and `OSError` (`FileNotFoundError`, `PermissionError`...) as `os.open` does."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, mode)
    except IsADirectoryError:
        raise NotARegularFile(f"{path} is a folder, not a file", "folder") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotARegularFile(
                f"{path} is a symbolic link; Tether does not follow it", "link"
            ) from None
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise NotARegularFile(f"{path} is a folder, not a file", "folder")
        raise NotARegularFile(f"{path} is not a regular file", "other")
    return fd


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (at most `limit` of them), read as `open_regular`
    opens it."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        if limit is None:
            return f.read()
        return f.read(min(limit, os.fstat(fd).st_size))


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether `path` lies inside `root` (or is `root`), both resolved first: made absolute,
    `..` folded and every symbolic link followed, so neither a link nor `..` climbs out, a
    sibling whose name starts with the root's (`/srv/root2` beside `/srv/root`) is outside, and
    a root reached through a link holds what lies in its target."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, base]) == base


def linked_folder(root: str, path: str) -> str | None:
    """The first folder between `root` and the file at `path` that is a symbolic link (as a
    path relative to `root`), or None; `root` itself, and a path outside it, are not checked.
    Installers and `init` refuse to write a project's file through such a folder."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if relative == ".." or relative.startswith(".." + os.sep):
        return None
    folder = root
    for part in relative.split(os.sep)[:-1]:
        folder = os.path.join(folder, part)
        if os.path.islink(folder):
            return os.path.relpath(folder, root)
    return None


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path` (`{}` when it is missing or empty); anything else is refused
    with the file named, and the file is left untouched."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot read {path}: {exc.strerror}", path=str(path)
        ) from None
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise TetherError(
            "invalid_json",
            f"{path} is not valid JSON ({exc}); it was left untouched",
            path=str(path),
        ) from None
    if not isinstance(document, dict):
        raise TetherError(
            "invalid_value",
            f"{path} does not hold a JSON object; it was left untouched",
            path=str(path),
        )
    return document


def write_file(path: Path, text: str, root: Path | None = None) -> None:
    """Replace `path` with `text`, making its folder first: the installers' write, atomic
    through `write_atomic` (a symbolic link there is replaced, not written through; a file's
    permissions are kept). Refused (`forbidden`) when a folder between `root` (the project)
    and the file is a symbolic link, as `tether init` refuses."""
    linked = None if root is None else linked_folder(str(root), str(path))
    if linked is not None:
        raise TetherError(
            "forbidden",
            f"{linked} is a symbolic link; {path} would be written through it, outside the "
            "project: left alone",
            path=str(path),
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(path), text)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd`: `os.write` may write fewer than it was given."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# How much of a file given in chunks `write_atomic` gathers before each write.
_WRITTEN_AT = 1 << 20


def _write_chunks(fd: int, chunks: Iterable[bytes]) -> None:
    gathered = bytearray()
    for chunk in chunks:
        gathered += chunk
        if len(gathered) >= _WRITTEN_AT:
            write_all(fd, bytes(gathered))
            gathered.clear()
    write_all(fd, bytes(gathered))


def write_atomic(path: str, data: str | bytes | Iterable[bytes], *, fsync: bool = FSYNC) -> None:
    """Replace the file at `path` with `data` (text is written as UTF-8; chunks of bytes are
    written as they come, so a long file need not be held whole) in one rename.

    The temporary file is created beside `path` with `O_EXCL` and `O_NOFOLLOW`, so nothing that
    another program put at its name (a link, a file) is written through or reused; it is removed
    if the write fails. A regular file already at `path` keeps its permission bits; a symbolic
    link at `path` is replaced by the file, never followed."""
    temporary = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    try:
        try:
            existing = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISREG(existing.st_mode):
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        if isinstance(data, (str, bytes)):  # a commit's state: written as it is, not copied
            write_all(fd, data.encode() if isinstance(data, str) else data)
        else:
            _write_chunks(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temporary, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_name(value: str) -> str:
    """A file name for an id: readable when the id is tame, a digest otherwise."""
    if value and len(value) <= 80 and not _UNSAFE.search(value):
        return value
    import hashlib

    return "h-" + hashlib.sha256(value.encode()).hexdigest()[:32]
