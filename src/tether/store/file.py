"""The `file://` store, Tether's embedded default: an execution as a few files beside each other.

Owns the on-disk encoding and its crash and concurrency safety. For an execution at `run.json`:

- `run.json` — the state: pretty-printed JSON a person can read; it also records which trace file
  is current and how many bytes and entries of it are committed.
- `run.json.tree.json` — the embedded tree, written at start. A tree swap (`replace_tree`) stages
  the new tree as `run.json.tree.<revision>.json`, named by the state's `tree_file` until the
  usual file holds it too.
- `run.json.trace.jsonl` — the trace, one JSON entry per line, only ever appended to. After a
  reset the trace starts in a new file (`run.json.trace.<revision>.jsonl`).
- `run.json.lock` — the lock that serialises writers (`flock`); readers never wait for it.

A commit appends the new trace lines after the committed byte count (first cutting off anything
a killed writer left beyond it), then atomically replaces the state file (write a temporary file,
`os.replace`). The state file names the committed length, so a kill at any instant leaves either
the previous or the next commit, and the cost of a step does not grow with the trace. Writes are
flushed to the operating system, which survives the death of the process; set `TETHER_FSYNC=1`
to also `fsync` before the rename, for durability across a power loss.

It does not interpret the state (the engine and verbs do).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tether.errors import TetherError

_FSYNC = os.environ.get("TETHER_FSYNC", "") not in ("", "0")
_REQUIRED = ("schema_version", "status", "revision", "var", "const", "open", "runtime", "trace")


def path_of(uri: str) -> str:
    """The filesystem path that a `file:` URI or a bare path names, made absolute."""
    path = uri
    if uri.startswith("file:"):
        path = uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :]
        if path.startswith("localhost/"):
            path = path[len("localhost") :]
        if "%" in path:
            from urllib.parse import unquote

            path = unquote(path)
    if not path:
        raise TetherError("invalid_value", f"{uri!r} names no file")
    return os.path.abspath(os.path.expanduser(path))


class FileStore:
    """Executions stored as files (see the module docstring for the layout)."""

    scheme = "file"

    def canonical(self, uri: str) -> str:
        return "file://" + path_of(uri)

    def exists(self, uri: str) -> bool:
        return os.path.exists(path_of(uri))

    def create(self, uri: str, state: dict[str, Any], tree: dict[str, Any]) -> dict[str, Any]:
        path = path_of(uri)
        folder = os.path.dirname(path)
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise TetherError(
                "invalid_value", f"cannot create folder {folder}: {exc.strerror}", path=path
            ) from None
        with _locked(path):
            if os.path.exists(path):
                raise TetherError(
                    "already_exists",
                    f"an execution already exists at {path}; resume it, reset it, or choose "
                    "another path",
                    path=path,
                )
            _write_atomic(path + ".tree.json", json.dumps(tree, ensure_ascii=False))
            trace_name = os.path.basename(path) + ".trace.jsonl"
            with open(os.path.join(folder, trace_name), "wb"):
                pass
            stored = dict(state, trace={"file": trace_name, "entries": 0, "bytes": 0})
            _write_atomic(path, _encode_state(stored))
        return stored

    def load(self, uri: str) -> dict[str, Any]:
        return _read_state(path_of(uri))

    def load_tree(self, uri: str) -> dict[str, Any]:
        path = path_of(uri)
        return _read_tree(path, _read_state(path))

    def read_trace(self, uri: str) -> Iterator[dict[str, Any]]:
        path = path_of(uri)
        state = _read_state(path)
        yield from _read_trace(path, state)

    def read_execution(self, uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        # The state names the committed length of an append-only trace file, so reading the
        # state first and then that many bytes is one snapshot; only a reset in between (which
        # starts a new trace file) can pull the file away, and then the read starts over.
        path = path_of(uri)
        for _ in range(3):
            state = _read_state(path)
            try:
                return state, list(_read_trace(path, state))
            except TetherError:
                if _read_state(path)["revision"] == state["revision"]:
                    raise
        state = _read_state(path)
        return state, list(_read_trace(path, state))

    def trace_length(self, state: dict[str, Any]) -> int:
        return int(state["trace"]["entries"])

    @contextmanager
    def transaction(self, uri: str) -> Iterator[_FileTransaction]:
        path = path_of(uri)
        if not os.path.exists(path):
            raise TetherError("not_found", f"no execution at {path}", path=path)
        with _locked(path):
            yield _FileTransaction(path, _read_state(path))


class _FileTransaction:
    def __init__(self, path: str, state: dict[str, Any]) -> None:
        self._path = path
        self.state = state

    def tree(self) -> dict[str, Any]:
        return _read_tree(self._path, self.state)

    def commit(
        self, state: dict[str, Any], entries: list[dict[str, Any]], *, reset_trace: bool = False
    ) -> dict[str, Any]:
        folder = os.path.dirname(self._path)
        trace = dict(self.state["trace"])
        revision = int(self.state["revision"]) + 1
        if reset_trace:
            old_name = trace["file"]
            trace = {
                "file": f"{os.path.basename(self._path)}.trace.{revision}.jsonl",
                "entries": 0,
                "bytes": 0,
            }
        data = b"".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            for e in entries
        )
        trace_path = os.path.join(folder, trace["file"])
        fd = os.open(trace_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, trace["bytes"])
            os.lseek(fd, trace["bytes"], os.SEEK_SET)
            os.write(fd, data)
            if _FSYNC:
                os.fsync(fd)
        finally:
            os.close(fd)
        trace = {
            "file": trace["file"],
            "entries": trace["entries"] + len(entries),
            "bytes": trace["bytes"] + len(data),
        }
        committed = dict(state, revision=revision, trace=trace)
        _write_atomic(self._path, _encode_state(committed))
        if reset_trace and old_name != trace["file"]:
            _remove_quietly(os.path.join(folder, old_name))
        self.state = committed
        return committed

    def replace_tree(self, tree: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        # The switch is the state's rename, pointing at a new tree file; the tree then moves to
        # its usual name, so that other programs find it there, and the state points back. At
        # every instant the state names a complete tree file.
        folder = os.path.dirname(self._path)
        revision = int(self.state["revision"]) + 1
        usual = os.path.basename(self._path) + ".tree.json"
        staged = f"{os.path.basename(self._path)}.tree.{revision}.json"
        text = json.dumps(tree, ensure_ascii=False)
        _write_atomic(os.path.join(folder, staged), text)
        committed = dict(state, revision=revision, trace=self.state["trace"], tree_file=staged)
        _write_atomic(self._path, _encode_state(committed))
        _write_atomic(os.path.join(folder, usual), text)
        committed.pop("tree_file")
        _write_atomic(self._path, _encode_state(committed))
        _remove_quietly(os.path.join(folder, staged))
        self.state = committed
        return committed


def _encode_state(state: dict[str, Any]) -> str:
    return json.dumps(state, ensure_ascii=False, indent=1) + "\n"


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        if _FSYNC:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_state(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise TetherError("not_found", f"no execution at {path}", path=path) from None
    except IsADirectoryError:
        raise TetherError(
            "invalid_value", f"{path} is a folder, not an execution file", path=path
        ) from None
    except PermissionError as exc:
        raise TetherError(
            "invalid_value", f"cannot read {path}: {exc.strerror}", path=path
        ) from None
    try:
        state = json.loads(raw)
    except ValueError as exc:
        if path.endswith((".yaml", ".yml")):
            raise _tree_not_execution(path) from None
        raise TetherError(
            "corrupt_execution",
            f"{path} is corrupt (not JSON: {exc}); it was left as it is",
            path=path,
        ) from None
    missing = [k for k in _REQUIRED if not isinstance(state, dict) or k not in state]
    if missing and isinstance(state, dict) and ("tree" in state or "type" in state):
        raise _tree_not_execution(path)
    if missing:
        raise TetherError(
            "corrupt_execution",
            f"{path} is corrupt or not a Tether execution (missing {', '.join(missing)}); "
            "it was left as it is",
            path=path,
        )
    return dict(state)


def _tree_name(path: str, state: dict[str, Any]) -> str:
    return str(state.get("tree_file") or os.path.basename(path) + ".tree.json")


def _read_tree(path: str, state: dict[str, Any]) -> dict[str, Any]:
    tree_path = os.path.join(os.path.dirname(path), _tree_name(path, state))
    try:
        with open(tree_path, "rb") as f:
            return dict(json.loads(f.read()))
    except FileNotFoundError:
        raise TetherError(
            "corrupt_execution", f"the execution's tree file {tree_path} is missing", path=tree_path
        ) from None
    except (ValueError, TypeError) as exc:
        raise TetherError(
            "corrupt_execution",
            f"the execution's tree file {tree_path} is corrupt: {exc}",
            path=tree_path,
        ) from None


def _tree_not_execution(path: str) -> TetherError:
    return TetherError(
        "invalid_value",
        f"{path} is a tree file, not an execution: start one from it with "
        f"tether start {os.path.basename(path)} RUN.json",
        path=path,
    )


def _read_trace(path: str, state: dict[str, Any]) -> Iterator[dict[str, Any]]:
    trace = state["trace"]
    trace_path = os.path.join(os.path.dirname(path), trace["file"])
    try:
        with open(trace_path, "rb") as f:
            data = f.read(trace["bytes"])
    except FileNotFoundError:
        raise TetherError(
            "corrupt_execution", f"the trace file {trace_path} is missing", path=trace_path
        ) from None
    if len(data) != trace["bytes"]:
        raise TetherError(
            "corrupt_execution",
            f"the trace file {trace_path} is shorter than its committed length",
            path=trace_path,
        )
    for n, line in enumerate(data.splitlines(), 1):
        try:
            yield json.loads(line)
        except ValueError:
            raise TetherError(
                "corrupt_execution", f"{trace_path}:{n} is not a JSON trace entry", path=trace_path
            ) from None
