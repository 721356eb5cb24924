"""The `file://` store, Tether's embedded default: an execution as a few files beside each other.

Owns the on-disk encoding and its crash and concurrency safety. For an execution at `run.json`:

- `run.json` — the state: pretty-printed JSON a person can read; it also records which trace file
  is current and how many bytes and entries of it are committed.
- `run.json.tree.json` — the embedded tree, written at start. A tree swap (`replace_tree`) stages
  the new tree as `run.json.tree.<revision>.json`, named by the state's `tree_file` until the
  usual file holds it too.
- `run.json.trace.jsonl` — the trace, one JSON entry per line, only ever appended to. After a
  reset the trace starts in a new file (`run.json.trace.<revision>.jsonl`).
- `run.json.refused.jsonl` — the refusal log (`Transaction.refuse`): the answers the engine
  refused and the tool calls a policy denied, one JSON record per line, appended under the
  execution's lock by `tether.appendlog` (a torn last line is cut off by the next append and
  skipped on read). No state names it: replay and `verify` never read it.
- `run.json.lock` — the lock that serialises writers (`tether.locking`: `flock`, or `msvcrt`
  on Windows); readers never wait for it.

A commit appends the new trace lines after the committed byte count (first cutting off anything
a killed writer left beyond it), then atomically replaces the state file
(`tether.files.write_atomic`). The state file names the committed length, so a kill at any
instant leaves either the previous or the next commit, and the cost of a step does not grow with
the trace. `read_tail` reads the trace file backwards from its committed end, a block at a time
(one line is one entry, and seqs grow line by line), so what live export reads after a step does
not grow with it either. Writes are flushed to the operating system, which survives the death
of the process; set `TETHER_FSYNC=1` to also `fsync` before the rename, for durability across a
power loss.

Trust: a state file is data, not a map of the disk. The names of the other files derive from the
state file's own name; a state file that names any other trace or tree file (a path, `..`,
another execution's file) is `corrupt_execution`, as is an execution file that is a symbolic
link: every file is opened without following a link at its name (`tether.files`), so a link
planted beside an execution cannot make a read, a write or a removal reach anything else. `create`
refuses while any file of the execution (other than a lock or a temporary file) is there, unless
the lock's mark shows that a create killed mid-way left it (see Tidiness).

Tidiness: a commit marks the lock file while it writes and clears the mark when it is done. The
next writer that finds the mark (its predecessor was killed or ran out of disk) removes, under
the lock, the temporary files left behind and any trace or tree file the state no longer names;
`create` and a reset tidy in any case. `create` marks the lock too, so the files of a create
that was killed before its state was written are removed by the next `create` (a start or a
fork can simply be run again), while files found there without that mark are refused. Without
a mark no folder is listed, so a step costs the same however many executions share the folder.

Listing: `list(FOLDER)` finds an execution by its state file and the tree file named after it
(`run.json` beside `run.json.tree.json`), in the folder and its sub-folders down to six levels
below it, leaving out hidden folders (`.git`, `.venv`...), `venv`, `node_modules` and
`__pycache__`, and entering no folder through a symbolic link. It reads each state file as every
read does (no link followed, the file names it gives checked) and nothing else, no tree and no
trace (and no state file its index is up to date with: see Index): a link, a FIFO or a corrupt
file there is listed with its own error, and the others are listed as usual. A folder given to
`list` by a link is followed: the caller chose it. The folders are walked in the order of the
executions' names (a folder's own executions and its sub-folders sorted together), one
folder's entries at a time (`summaries`, what `page` reads).

Index: each folder that holds executions also holds `.tether-index.jsonl`, a cache of what a
listing shows of them (`tether.store.shared.listed`: tree, status, phase, open step, revision,
created and updated, trace length). A commit, a create and a tree swap append one line for their
execution once its state file is written, stamped with that file's inode, size and modification
time (a commit renames a new file into place, so each one changes the stamp). The state file
stays the truth: `list` believes a line only while its stamp is the state file's, and reads the
state file otherwise (a process killed between its commit and its line, an edit by hand, a
torn or forged line, a folder an older Tether wrote), appending what it read so that the next
listing need not. Once an index holds more than twice the lines it needs, a listing writes it
afresh (atomically; an append racing that rewrite is lost, which leaves the index behind, never
wrong). A listing still finds the executions by their names in the folders (one `stat` each),
but reads no state file the index is up to date with. A failure to write the index is not the
commit's: the next listing catches it up. Folders nothing lists keep appending: the index grows
by a line a commit until a listing rewrites it.

Counts: an execution's count (`tether.store.tally.record_of`) is kept in its folder's
`.tether-figures.jsonl` once it has ended, a line stamped like the index's, with the length of
the refusal log besides. A count is believed only while its stamp is current; otherwise the
execution is read as a `get` reads it (the tree once per tree hash), its trace parsed as one
JSON array rather than line by line, counted again and the line appended (a reader that reads
the file catches it up, and rewrites it past twice its length, as the index).

Sums (`tally`): the folder `tally` is given keeps `.tether-sums.jsonl` (`SUMS`). Its first line
holds the counts of its executions added up per tree hash and day created
(`tether.store.tally.Sums`) and the trees they count; then one line per execution added, in name
order: the stamp it was added at, its tree hash, when it was created, what `behind` shows of it
(tree, status, last change), its figures per action (`tether.store.tally.marks_of`) and, while
it runs, its count (a settled one's, `tether.store.tally.settled`, is its line in the kept
figures). `tally` walks the executions and these lines side by side in name order, one of each
at a time: it stats each execution, counts (from its trace) only those whose stamp moved since
they were added, taking away the count each added before, and reads the sums. Its cost grows
with the executions' number by a `stat` or two and a short line each, and with what changed by
their traces; what it holds does not grow with them (the changes it makes are spooled to a
temporary file past a megabyte). When the count an execution added is no longer kept (its line
rewritten away), or a line is torn, out of order or not a line this store writes, the sums are
added up again from every execution. The sums file is written atomically (streamed from the
lines it had and the changes) after the counts it adds are appended: a kill leaves the previous
sums, never wrong ones, and readers that race each write sums that agree with the stamps they
hold. A `--since` within a day reads the kept counts of the executions created that day. A sums
file of another version, torn or unreadable is added up again; one written by hand to lie is
believed (delete it to count afresh). An older Tether's sums (`.tether-sums.json`, one JSON
object) and figures per action (`.tether-marks.json`) are not read: the sums are added up again
and those files removed.

Memory: a reader holds one folder's entries at a time, and the index or kept figures of that
folder and the folders above it (`_Kept`), never every execution's: a listing's page
(`tether.store.shared.page_whole`) keeps only the page, `tally` only the sums' cells, `behind`
only the rows up to its page's end. What grows is the largest single folder's entries and
index: executions spread over sub-folders (as teams' are) keep it small.

Behind (`behind`): the executions behind a figure are the sums' lines whose figures per action
have it, read one at a time after the sums' pass.

It does not interpret the state (the engine and verbs do; `tether.store.base.Summary` reads
what a listing shows).
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tether.errors import TetherError
from tether.files import (
    FSYNC,
    TEMPORARY,
    NotARegularFile,
    open_regular,
    read_regular,
    write_all,
    write_atomic,
)
from tether.locking import locked
from tether.store.shared import REFUSAL_LOG_BYTES, encode, listed, page_whole, path_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from tether.store.base import Summary
    from tether.store.tally import Behind, Counted

_REQUIRED = ("schema_version", "status", "revision", "var", "const", "open", "runtime", "trace")
# The files of an execution at BASE, by the part of their name after BASE.
_TRACE = r"\.trace(?:\.\d+)?\.jsonl"
_TREE = r"\.tree(?:\.\d+)?\.json"
_SIDECAR = re.compile(rf"(?:{_TRACE}|{_TREE})")
_REFUSED = ".refused.jsonl"
# The summary index of the executions in a folder, and their kept figures (see "Index" above).
INDEX = ".tether-index.jsonl"
FIGURES = ".tether-figures.jsonl"
SUMS = ".tether-sums.jsonl"
# What an older Tether kept beside the sums (the sums as one JSON object, the figures per action
# apart): removed once the sums are written again.
_OLDER_KEPT = (".tether-sums.json", ".tether-marks.json")
_LEFTOVER = re.compile(rf"(?:{_TREE})?{TEMPORARY.pattern}")
# How a line of the index or the kept figures begins: the execution's name, as JSON.
_NAMED = re.compile(rb'\{"name":("(?:[^"\\]|\\.)*"),')
# The first block `read_tail` reads back from a trace file's end (each further one four times
# larger): enough for the entries of a few steps.
_TAIL_BLOCK = 16_384
# How far below the folder it is given `list` looks, and the folders it leaves out (besides
# hidden ones): they hold no executions worth listing and can be large.
LIST_DEPTH = 6
_UNLISTED = frozenset({"venv", "node_modules", "__pycache__"})


class FileStore:
    """Executions stored as files (see the module docstring for the layout)."""

    scheme = "file"

    def canonical(self, uri: str) -> str:
        return "file://" + path_of(uri)

    def exists(self, uri: str) -> bool:
        return os.path.lexists(path_of(uri))

    def create(
        self,
        uri: str,
        state: dict[str, Any],
        tree: dict[str, Any],
        entries: builtins.list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        path = path_of(uri)
        folder, base = os.path.split(path)
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise TetherError(
                "invalid_value", f"cannot create folder {folder}: {exc.strerror}", path=path
            ) from None
        with _locked(path) as lock:
            present = _tidy(path, None)
            if base not in present and os.fstat(lock).st_size:  # a create killed mid-way
                for name in present:
                    _remove_quietly(os.path.join(folder, name))
                present = []
            if base in present:
                raise TetherError(
                    "already_exists",
                    f"an execution already exists at {path}; resume it, reset it, or choose "
                    "another path",
                    path=path,
                )
            if present:
                raise TetherError(
                    "already_exists",
                    f"files of an execution are at {path} without its state ({', '.join(present)}"
                    "), left by a start that was interrupted or because the state file was "
                    "deleted; they were left as they are: to start over, remove them, or choose "
                    "another path",
                    path=path,
                    files=present,
                )
            trace_name = base + ".trace.jsonl"
            data = "".join(encode(e) + "\n" for e in entries or []).encode()
            trace = {"file": trace_name, "entries": len(entries or []), "bytes": len(data)}
            stored = dict(state, trace=trace)
            state_text, tree_text = _encode_state(stored), encode(tree)
            tree_path, trace_path = path + ".tree.json", os.path.join(folder, trace_name)
            created: list[str] = []
            try:
                with _writing(path, lock):
                    write_atomic(tree_path, tree_text)
                    created.append(tree_path)
                    fd = _open(trace_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                    created.append(trace_path)
                    try:
                        write_all(fd, data)
                        if FSYNC:
                            os.fsync(fd)
                    finally:
                        os.close(fd)
                    write_atomic(path, state_text)
            except TetherError:
                for name in created:  # a start that fails leaves nothing to block the next
                    _remove_quietly(name)
                raise
            _note(path, stored)
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
        return _snapshot(path_of(uri), lambda path, state: list(_read_trace(path, state)))

    def read_tail(self, uri: str, since: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        return _snapshot(path_of(uri), lambda path, state: _read_tail(path, state, since))

    def trace_length(self, state: dict[str, Any]) -> int:
        return int(state["trace"]["entries"])

    def revision(self, uri: str) -> int:
        return int(_read_state(path_of(uri))["revision"])

    def list(self, where: str, *, status: str | None = None) -> builtins.list[Summary]:
        from tether.store.base import wanted  # not on a step's path: see its docstring

        return [s for s in _summaries(path_of(where)) if wanted(s, status)]

    def summaries(self, where: str) -> Iterator[Summary]:
        """`list(where)` one summary at a time, holding a few folders' index (what `page`
        walks)."""
        return _summaries(path_of(where))

    page = page_whole

    def __init__(self) -> None:
        # what `fingerprint` last saw in each folder: its modification time, how many
        # executions it holds and the sub-folders `list` enters
        self._seen: dict[str, tuple[int, int, builtins.list[str]]] = {}

    def fingerprint(self, where: str) -> tuple[int, object]:
        folder = path_of(where)
        if folder not in self._seen:  # the first look, which says what is wrong with it
            _walk(folder)
        count, changes = 0, []
        pending = [(folder, "", 0)]
        while pending:
            path, prefix, depth = pending.pop()
            change = _changes(path, prefix)
            changes.append(change)
            seen = self._seen.get(path)
            if seen is None or seen[0] != change[1]:  # a commit renamed a file in it, or more
                try:
                    found, below = _sorted_out(path, depth)
                except OSError:
                    continue
                self._seen[path] = seen = (change[1], len(found), below)
            count += seen[1]
            pending += [(os.path.join(path, sub), f"{prefix}{sub}/", depth + 1) for sub in seen[2]]
        return count, tuple(changes)

    def locate(self, where: str, name: str) -> str:
        return self.canonical(os.path.join(path_of(where), name))

    def refusals(self, uri: str) -> builtins.list[dict[str, Any]]:
        path = path_of(uri)
        _read_state(path)
        return _read_refusals(path)

    def behind(
        self, where: str, tree: str, tree_hash: str, key: str, measure: str, page: slice
    ) -> tuple[int, builtins.list[Behind]]:
        from tether.store.tally import behind_of

        kept, _ = _summed(path_of(where), None)
        try:
            return behind_of(kept.marked(key), tree, tree_hash, key, measure, page)
        finally:
            kept.close()

    def tally(
        self, where: str, *, since: str | None = None, tree: str | None = None
    ) -> dict[str, Any]:
        from tether.store.tally import tally_of

        kept, counts = _summed(path_of(where), since)
        kept.close()
        return tally_of(counts, tree=tree, since=since, sums=kept.sums.each())

    def place(self, uri: str) -> tuple[str, str | None]:
        path = path_of(uri)
        if os.path.isdir(path):
            return "file://" + path, None
        folder, name = os.path.split(path)
        return "file://" + folder, name

    @contextmanager
    def transaction(self, uri: str) -> Iterator[_FileTransaction]:
        path = path_of(uri)
        if not os.path.lexists(path):
            raise TetherError("not_found", f"no execution at {path}", path=path)
        with _locked(path) as lock:
            state = _read_state(path)
            if os.fstat(lock).st_size:
                _tidy(path, state)
            yield _FileTransaction(path, state, lock)


class _FileTransaction:
    def __init__(self, path: str, state: dict[str, Any], lock: int) -> None:
        self._path = path
        self._lock = lock
        self.state = state

    def tree(self) -> dict[str, Any]:
        return _read_tree(self._path, self.state)

    def commit(
        self, state: dict[str, Any], entries: list[dict[str, Any]], *, reset_trace: bool = False
    ) -> dict[str, Any]:
        folder, base = os.path.split(self._path)
        old = self.state["trace"]
        revision = int(self.state["revision"]) + 1
        name, entries_before, start = old["file"], old["entries"], old["bytes"]
        if reset_trace:
            name, entries_before, start = f"{base}.trace.{revision}.jsonl", 0, 0
        data = "".join(encode(e) + "\n" for e in entries).encode()
        trace = {"file": name, "entries": entries_before + len(entries), "bytes": start + len(data)}
        committed = dict(state, revision=revision, trace=trace)
        state_text = _encode_state(committed)
        with _writing(self._path, self._lock):
            fd = _open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT)
            try:
                os.ftruncate(fd, start)
                os.lseek(fd, start, os.SEEK_SET)
                write_all(fd, data)
                if FSYNC:
                    os.fsync(fd)
            finally:
                os.close(fd)
            write_atomic(self._path, state_text)
            if reset_trace:
                _tidy(self._path, committed)
        _note(self._path, committed)
        self.state = committed
        return committed

    def refuse(self, record: dict[str, Any]) -> None:
        from tether import appendlog

        log = self._path + _REFUSED
        try:
            if _size(log) + len(encode(record)) > REFUSAL_LOG_BYTES:
                return
            appendlog.append(log, [record])
        except NotARegularFile as exc:
            raise _not_regular(log, exc) from None
        except OSError as exc:
            raise TetherError(
                "store_unavailable", f"cannot write {log}: {exc.strerror or exc}", path=log
            ) from None

    def replace_tree(self, tree: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        # The switch is the state's rename, pointing at a new tree file; the tree then moves to
        # its usual name, so that other programs find it there, and the state points back. At
        # every instant the state names a complete tree file.
        revision = int(self.state["revision"]) + 1
        usual = self._path + ".tree.json"
        staged = f"{os.path.basename(self._path)}.tree.{revision}.json"
        text = encode(tree)
        committed = dict(state, revision=revision, trace=self.state["trace"], tree_file=staged)
        staged_state = _encode_state(committed)
        committed.pop("tree_file")
        final_state = _encode_state(committed)
        with _writing(self._path, self._lock):
            write_atomic(os.path.join(os.path.dirname(self._path), staged), text)
            write_atomic(self._path, staged_state)
            write_atomic(usual, text)
            write_atomic(self._path, final_state)
            _remove_quietly(os.path.join(os.path.dirname(self._path), staged))
        _note(self._path, committed)
        self.state = committed
        return committed


def _encode_state(state: dict[str, Any]) -> str:
    return encode(state, indent=1) + "\n"


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextmanager
def _locked(path: str) -> Iterator[int]:
    try:
        fd = _open(path + ".lock", os.O_RDWR | os.O_CREAT)
    except FileNotFoundError:
        raise TetherError("not_found", f"no execution at {path}", path=path) from None
    except OSError as exc:  # a folder made read-only (a sandbox's), or not this user's
        raise TetherError(
            "store_unavailable",
            f"cannot lock the execution at {path} (its lock file {path}.lock): "
            f"{exc.strerror or exc}; nothing was changed",
            path=path,
        ) from None
    try:
        with locked(fd):
            yield fd
    finally:
        os.close(fd)


@contextmanager
def _writing(path: str, lock: int | None) -> Iterator[None]:
    """The writes of one commit: the lock file marked while they run (see "Tidiness" above; the
    mark stays if they fail), and a failure to write (a full disk, a folder made read-only)
    reported as `store_unavailable`, with the previous commit still the committed one."""
    try:
        if lock is not None:
            os.lseek(lock, 0, os.SEEK_SET)  # not os.pwrite, which Windows lacks
            os.write(lock, b"w")
        yield
        if lock is not None:
            os.ftruncate(lock, 0)
    except OSError as exc:
        raise TetherError(
            "store_unavailable",
            f"cannot write the execution at {path}: {exc.strerror or exc}; the previous commit "
            "stands and nothing of this one is committed",
            path=path,
        ) from None


def _stamp(path: str) -> list[int]:
    """What changes whenever the state file at `path` is written: its inode (each commit renames
    a new file there), size and modification time."""
    st = os.lstat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _index_record(base: str, stamp: list[int], state: dict[str, Any]) -> dict[str, Any]:
    return {"name": base, "stamp": stamp, "state": listed(state)}


def _note(path: str, state: dict[str, Any]) -> None:
    """After a commit: append the execution's summary to its folder's index (see "Index" above),
    stamped with the state file just written. A failure here leaves the index behind, which the
    next listing catches up, so it is not the commit's failure."""
    folder, base = os.path.split(path)
    with contextlib.suppress(OSError):
        line = (encode(_index_record(base, _stamp(path), state)) + "\n").encode()
        fd = open_regular(os.path.join(folder, INDEX), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            write_all(fd, line)
        finally:
            os.close(fd)


def _read_index(folder: str, name: str = INDEX) -> tuple[dict[str, bytes], int]:
    """The folder's index (or its kept figures, `FIGURES`): the latest line per execution name,
    as written (read by `_record` when asked for), and how many lines it has. A line that does
    not begin as such a record (torn by a kill, written by something else) is skipped."""
    kept: dict[str, bytes] = {}
    count = 0
    try:
        with os.fdopen(open_regular(os.path.join(folder, name)), "rb") as lines:
            for line in lines:  # a line at a time: the file is not held whole
                count += 1
                named = _NAMED.match(line)
                if named is not None:
                    with contextlib.suppress(ValueError):
                        kept[json.loads(named.group(1))] = line.rstrip(b"\n")
    except OSError:
        return {}, 0
    return kept, count


def _record(line: bytes | None) -> dict[str, Any] | None:
    """The record a kept line holds (None: none, or not a record this store writes)."""
    try:
        record = json.loads(line) if line is not None else None
    except ValueError:
        return None
    if (
        isinstance(record, dict)
        and isinstance(record.get("stamp"), list)
        and isinstance(record.get("state"), dict)
    ):
        return record
    return None


def _summaries(folder: str) -> Iterator[Summary]:
    """`list(folder)`, one summary at a time: each execution's summary from its folder's index
    where the index is not behind its state file (same stamp), else from the state file, which
    then catches the index up. The index of a few folders at a time is held (`_Kept`)."""
    from tether.store.base import Summary

    kept = _Kept(INDEX)
    for name in _walk(folder):
        directory, path = _located(folder, name)
        uri = "file://" + path
        record = kept.get(directory, os.path.basename(path))
        try:
            stamp = _stamp(path)
            if record is not None and record["stamp"] == stamp:
                yield Summary.of(uri, name, record["state"])
                continue
            state = _read_state(path)
            kept.add(directory, _index_record(os.path.basename(path), stamp, state))
            yield Summary.of(uri, name, state)
        except (TetherError, OSError) as exc:
            error = exc if isinstance(exc, TetherError) else _read_error(path)
            yield Summary.unreadable(uri, name, error)
    kept.catch_up()


def _read_error(path: str) -> TetherError:
    """Why the state file at `path` cannot be read (it went while it was listed)."""
    try:
        _read_state(path)
    except TetherError as exc:
        return exc
    return TetherError("not_found", f"no execution at {path}", path=path)


def _catch_up(
    folder: str, lines: builtins.list[str], kept: dict[str, bytes], count: int, name: str = INDEX
) -> None:
    """Add `lines` to the folder's index (or kept figures): appended, or, once it holds more
    than twice the lines it needs, written afresh with one line per execution. An append that
    races the rewrite may be lost: the index is then behind, never wrong."""
    index = os.path.join(folder, name)
    with contextlib.suppress(OSError):
        if count + len(lines) <= 2 * len(kept) + 64:
            fd = open_regular(index, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                write_all(fd, "".join(lines).encode())
            finally:
                os.close(fd)
            return
        fresh = {name: line.decode() + "\n" for name, line in kept.items()}
        fresh.update((json.loads(line)["name"], line) for line in lines)
        write_atomic(index, "".join(fresh.values()))


def _located(folder: str, name: str) -> tuple[str, str]:
    """The folder that holds the execution `list(folder)` calls `name`, and its path."""
    sub, _, base = name.rpartition("/")
    directory = os.path.join(folder, *sub.split("/")) if sub else folder
    return directory, os.path.join(directory, base)


class _Kept:
    """The kept files of one name (`INDEX`, `FIGURES`) of the folders a reader visits: read
    once each, and caught up with what the reader found them behind on. Only the folders
    above the one read last are held besides it (a reader walks the folders in name order and
    never comes back to one it left): the others are caught up and let go."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.read: dict[str, tuple[dict[str, bytes], int]] = {}
        self.behind: dict[str, builtins.list[str]] = {}

    def get(self, directory: str, base: str) -> dict[str, Any] | None:
        if directory not in self.read:
            self._visit(directory)
            self.read[directory] = _read_index(directory, self.name)
        return _record(self.read[directory][0].get(base))

    def add(self, directory: str, record: dict[str, Any]) -> None:
        if directory not in self.behind:
            self._visit(directory)
        self.behind.setdefault(directory, []).append(encode(record) + "\n")

    def _visit(self, directory: str) -> None:
        """Let go of every folder held that is not above `directory`."""
        above, up = set(), directory
        while os.path.dirname(up) != up:
            above.add(up := os.path.dirname(up))
        for held in {*self.read, *self.behind} - above - {directory}:
            self._let_go(held)

    def _let_go(self, directory: str) -> None:
        lines = self.behind.pop(directory, None)
        read = self.read.pop(directory, None)
        if lines and read is not None:
            _catch_up(directory, lines, *read, self.name)
        elif lines:  # a reader that did not read it appends, and a later one rewrites it
            _catch_up(directory, lines, {}, -(10**9), self.name)

    def catch_up(self) -> None:
        for directory in {*self.read, *self.behind}:
            self._let_go(directory)


def _figures(
    directory: str, path: str, kept: _Kept, trees: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The kept count of the execution at `path` (`tether.store.tally.record_of`), and what
    choosing it needs of its state, from the folder's `FIGURES` while its stamp (the state file's
    and the length of the refusal log) is current, else counted from the trace and kept."""
    from tether.store.tally import RECORD_FORMAT, record_of

    base = os.path.basename(path)
    stamp = [*_stamp(path), _size(path + _REFUSED)]
    figures = kept.get(directory, base)
    if (
        figures is not None
        and figures["stamp"] == stamp
        and isinstance(figures.get("record"), dict)
        and figures["record"].get("format") == RECORD_FORMAT
    ):
        return figures
    state = _read_state(path)
    tree_hash = str(state["tree_hash"])
    if tree_hash not in trees:
        trees[tree_hash] = _read_tree(path, state)
    record = record_of(state, trees[tree_hash], _read_entries(path, state), _read_refusals(path))
    figures = {"name": base, "stamp": stamp, "state": listed(state), "record": record}
    kept.add(directory, figures)
    return figures


def _summed(
    folder: str, since: str | None, afresh: bool = False
) -> tuple[_Sums, builtins.list[Counted]]:
    """The kept sums of the executions under `folder` (`SUMS`) caught up with the executions
    there, and the count of each that the sums cannot give: unreadable, or created on the day
    `since` falls in, which a day's sum holds only some of (see "Sums" above). The executions
    and the kept lines are walked side by side in name order, one at a time. The caller closes
    the sums (`_Sums.close`)."""
    from tether.store.tally import Counted, whole_days

    kept = _Sums(folder, afresh)
    split = since[:10] if since and whole_days(since) != since[:10] else None
    others: builtins.list[Counted] = []
    try:
        names = _walk(folder)
    except TetherError:
        kept.close()
        raise
    try:
        for name, present, line in _joined(names, kept.lines()):
            directory, path = _located(folder, name)
            try:
                stamp = [*_stamp(path), _size(path + _REFUSED)] if present else None
            except OSError:
                stamp = None
            if line is not None and line.stamp == stamp:
                if line.created[:10] == split:
                    others.append(kept.counted(line, directory, path))
                continue
            if line is not None:
                kept.take_away(line, directory)
            new = kept.count(path, stamp) if stamp is not None else None
            if new is None:
                kept.changes.add(name, b"")
                if present:
                    others.append(Counted(name, {}, "", {}, None))
                continue
            kept.add(name, directory, new)
            if str(new["state"]["created_at"])[:10] == split:
                others.append(Counted(name, new["state"], *kept.tree_of(new), new["record"]))
    except _Torn:  # a kept line is not what this store writes, or its count is no longer kept
        kept.close()
        return _summed(folder, since, afresh=True)
    kept.write()
    return kept, others


class _Torn(Exception):
    """The kept sums cannot be believed (see `_summed`)."""


class _Line:
    """An execution's line in the kept sums: its name, the stamp it was added at, its tree
    hash, when it was created, what `Store.behind` shows of it (tree name, status, last
    change), its figures per action (`tether.store.tally.marks_of`, as JSON) and, while it
    runs, its count (`tether.store.tally.record_of`, as JSON; a settled one's is in
    `FIGURES`); `raw` is the line as kept."""

    __slots__ = ("created", "marks", "name", "raw", "record", "shown", "stamp", "tree_hash")

    def __init__(self, raw: bytes, head: builtins.list[Any], marks: bytes, record: bytes) -> None:
        name, stamp, tree_hash, created, tree, status, updated = head
        self.name, self.stamp, self.tree_hash = str(name), stamp, str(tree_hash)
        self.created, self.marks, self.record, self.raw = str(created), marks, record, raw
        self.shown = {"tree_name": tree, "status": status, "updated_at": updated}

    @classmethod
    def of(cls, raw: bytes) -> _Line:
        try:
            head, marks, record = raw.rstrip(b"\n").split(b"\t")
            return cls(raw, json.loads(head), marks, record)
        except (ValueError, TypeError):
            raise _Torn from None

    @staticmethod
    def made(name: str, line: dict[str, Any], running: bool) -> bytes:
        """The kept line of the execution `name` from its count's `line`."""
        from tether.store.tally import marks_of

        state = line["state"]
        head = [name, line["stamp"], str(state["tree_hash"]), str(state["created_at"])]
        head += [state.get(k) for k in ("tree_name", "status", "updated_at")]
        record = encode(line["record"]) if running else ""
        return f"{encode(head)}\t{encode(marks_of(line['record']))}\t{record}\n".encode()


def _joined(
    names: Iterator[str], lines: Iterator[_Line]
) -> Iterator[tuple[str, bool, _Line | None]]:
    """The executions `names` and the kept `lines`, both in name order, side by side: each
    name, whether it is an execution there still, and its kept line (None: none)."""
    name, line = next(names, None), next(lines, None)
    while name is not None or line is not None:
        if line is None or (name is not None and name < line.name):
            assert name is not None
            yield name, True, None
            name = next(names, None)
        elif name is None or line.name < name:
            yield line.name, False, line
            line = next(lines, None)
        else:
            yield name, True, line
            name, line = next(names, None), next(lines, None)


class _Changes:
    """The changes one pass makes to the kept sums' lines, in name order: each execution's new
    line (empty: its line goes), spooled to a temporary file past a megabyte, so that a pass
    that adds every execution (the first) holds no more than one that adds a few."""

    def __init__(self) -> None:
        import tempfile

        self._spool = tempfile.SpooledTemporaryFile(max_size=1 << 20)  # noqa: SIM115 (`close`)

    def add(self, name: str, line: bytes) -> None:
        self._spool.write(encode(name).encode() + b"\t" + line.rstrip(b"\n") + b"\n")

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        """Each change: the name, and its line with its end (empty: none)."""
        self._spool.seek(0)
        for raw in self._spool:
            name, _, line = raw.rstrip(b"\n").partition(b"\t")
            yield json.loads(name), line + b"\n" if line else b""

    def close(self) -> None:
        self._spool.close()


class _Sums:
    """One reader's pass over a folder's kept sums (`SUMS`): the cells and the trees they count
    (its first line, read whole), the kept lines (read one at a time from the file as it was
    opened, in name order), and the changes the pass makes to them, in name order."""

    def __init__(self, folder: str, afresh: bool) -> None:
        from tether.store.tally import RECORD_FORMAT, Sums

        self.folder = folder
        self.sums = Sums()
        self.trees: dict[str, dict[str, Any]] = {}
        self.figures = _Kept(FIGURES)
        self.changes = _Changes()
        self._figures_read: tuple[str, builtins.list[bytes]] = ("", [])  # the last folder's
        self._file: BinaryIO | None = None
        self.changed = afresh
        if afresh:
            return
        try:
            self._file = os.fdopen(open_regular(os.path.join(folder, SUMS)), "rb")
            head = json.loads(self._file.readline())
            if head["format"] == RECORD_FORMAT:
                trees = {str(h): dict(tree) for h, tree in head["trees"].items()}
                for tree_hash, day, record in head["cells"]:
                    self.sums.add(tree_hash, trees[tree_hash], day, record)
                self.trees = trees
                return
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        self.sums, self.changed = Sums(), True  # torn, of another version, or none: afresh
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        self.changes.close()
        if self._file is not None:
            self._file.close()
            self._file = None

    def lines(self) -> Iterator[_Line]:
        """The kept lines, in name order (`_Torn` for one that is not, or is not a line)."""
        if self._file is None:
            return
        self._file.seek(0)
        self._file.readline()
        last = None
        for raw in self._file:
            line = _Line.of(raw)
            if last is not None and line.name <= last:
                raise _Torn
            last = line.name
            yield line

    def merged(self) -> Iterator[bytes]:
        """The kept lines with the pass's changes made, in name order."""
        changes = iter(self.changes)
        change = next(changes, None)
        for line in self.lines():
            replaced = False
            while change is not None and change[0] <= line.name:
                replaced = replaced or change[0] == line.name
                yield change[1]
                change = next(changes, None)
            if not replaced:
                yield line.raw
        while change is not None:
            yield change[1]
            change = next(changes, None)

    def tree_of(self, line: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        tree_hash = str(line["state"]["tree_hash"])
        return tree_hash, self.trees[tree_hash]

    def counted(self, line: _Line, directory: str, path: str) -> Counted:
        """The execution of the kept `line` with its count (a settled one's from `FIGURES`)."""
        from tether.store.tally import Counted

        if line.record:
            record = json.loads(line.record)
        else:
            record = _figures(directory, path, self.figures, self.trees)["record"]
        shown = {**line.shown, "created_at": line.created}
        return Counted(line.name, shown, line.tree_hash, self.trees[line.tree_hash], record)

    def take_away(self, line: _Line, directory: str) -> None:
        """Take the count the execution of `line` added away (it changed or went); `_Torn` when
        its count is no longer kept."""
        record = json.loads(line.record) if line.record else self._kept(directory, line)
        if record is None or line.tree_hash not in self.trees:
            raise _Torn
        self.sums.add(line.tree_hash, self.trees[line.tree_hash], line.created[:10], record, -1)
        self.changed = True

    def _kept(self, directory: str, line: _Line) -> dict[str, Any] | None:
        """The count of the settled execution of `line` at the stamp it was added at, from the
        folder's `FIGURES` if it holds it still (the last folder's lines are held)."""
        if self._figures_read[0] != directory:
            try:
                read = read_regular(os.path.join(directory, FIGURES)).splitlines()
            except OSError:
                read = []
            self._figures_read = (directory, read)
        base = line.name.rpartition("/")[2]
        for raw in reversed(self._figures_read[1]):
            if base.encode() in raw:
                with contextlib.suppress(ValueError, AttributeError):
                    record = json.loads(raw)
                    if record.get("name") == base and record.get("stamp") == line.stamp:
                        return dict(record["record"])
        return None

    def count(self, path: str, stamp: builtins.list[int]) -> dict[str, Any] | None:
        """The execution at `path` counted from its trace, as a kept line (None: unreadable)."""
        from tether.store.tally import record_of

        try:
            state = _read_state(path)
            tree_hash = str(state["tree_hash"])
            if tree_hash not in self.trees:
                self.trees[tree_hash] = _read_tree(path, state)
            tree = self.trees[tree_hash]
            record = record_of(state, tree, _read_entries(path, state), _read_refusals(path))
        except (TetherError, OSError, KeyError, TypeError, ValueError):
            return None
        base = os.path.basename(path)
        return {"name": base, "stamp": stamp, "state": listed(state), "record": record}

    def add(self, name: str, directory: str, line: dict[str, Any]) -> None:
        """Add an execution's count to the sums, and keep its line to take it away: a settled
        one's count in `FIGURES`, a running one's in its line."""
        from tether.store.tally import settled

        state = line["state"]
        tree_hash, tree = self.tree_of(line)
        self.sums.add(tree_hash, tree, str(state["created_at"])[:10], line["record"])
        running = not settled(state)
        if not running:
            self.figures.add(directory, line)
        self.changes.add(name, _Line.made(name, line, running))
        self.changed = True

    def marked(
        self, key: str
    ) -> Iterator[tuple[str, dict[str, Any], str, dict[str, builtins.list[float]]]]:
        """Each execution added that may have figures of the action `key`, as
        `tether.store.tally.behind_of` takes it, one at a time."""
        for raw in self.merged():
            line = _Line.of(raw)
            if key.encode() in line.marks:
                yield line.name, line.shown, line.tree_hash, json.loads(line.marks)

    def write(self) -> None:
        """Keep what changed: the added counts' lines, then the sums (atomically), streamed
        from the kept lines and the changes."""
        from tether.store.tally import RECORD_FORMAT

        self.figures.catch_up()
        if not self.changed:
            return
        cells = [[h, day, record] for h, _, day, record in self.sums.each()]
        hashes = {cell[0] for cell in cells}
        head = {
            "format": RECORD_FORMAT,
            "trees": {h: tree for h, tree in self.trees.items() if h in hashes},
            "cells": cells,
        }
        with contextlib.suppress(OSError):
            write_atomic(
                os.path.join(self.folder, SUMS),
                itertools.chain([(encode(head) + "\n").encode()], self.merged()),
            )
            for older in _OLDER_KEPT:
                _remove_quietly(os.path.join(self.folder, older))


def _tidy(path: str, state: dict[str, Any] | None) -> list[str]:
    """Under the lock: remove the temporary files of the execution at `path`, and the trace and
    tree files that `state` does not name (all of them when there is no state). Returns the
    execution's files that remain, the state file included."""
    folder, base = os.path.split(path)
    keep = set() if state is None else {state["trace"]["file"], _tree_name(path, state)}
    keep.add(base + ".tree.json")
    if state is not None:
        keep.add(base + _REFUSED)
    present: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name == base:
                present.append(name)
            elif not name.startswith(base) or (
                _SIDECAR.fullmatch(name, len(base)) is None
                and _LEFTOVER.fullmatch(name, len(base)) is None
                and name != base + _REFUSED
            ):
                continue
            elif state is None and _SIDECAR.fullmatch(name, len(base)) is not None:
                present.append(name)
            elif name not in keep and not entry.is_dir(follow_symlinks=False):
                _remove_quietly(entry.path)
    return sorted(present)


def _walk(folder: str) -> Iterator[str]:
    """The executions under `folder` (see "Listing" above), as paths relative to it with `/`,
    in name order, one folder's names held at a time: a folder's own executions and its
    sub-folders (as `SUB/`) sorted together give the order of the whole paths."""
    try:
        top = _sorted_out(folder, 0)
    except FileNotFoundError:
        raise TetherError("not_found", f"no folder at {folder}", path=folder) from None
    except NotADirectoryError:
        raise TetherError(
            "invalid_value",
            f"{folder} is a file, not a folder of executions: list the folder that holds it",
            path=folder,
        ) from None
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot list {folder}: {exc.strerror}", path=folder
        ) from None
    return _walk_below(folder, "", 0, top)


def _walk_below(
    folder: str, prefix: str, depth: int, found: tuple[builtins.list[str], builtins.list[str]]
) -> Iterator[str]:
    here, below = found
    names = sorted([*here, *(sub + "/" for sub in below)])
    del here, below, found
    for name in names:
        if not name.endswith("/"):
            yield prefix + name
            continue
        try:  # a sub-folder it may not read is left out
            inside = _sorted_out(os.path.join(folder, prefix, name), depth + 1)
        except OSError:
            continue
        yield from _walk_below(folder, prefix + name, depth + 1, inside)


def _sorted_out(folder: str, depth: int) -> tuple[builtins.list[str], builtins.list[str]]:
    """A folder's executions (a state file beside its tree file) and the sub-folders `list`
    enters below it (not through a link, none hidden or left out, down to `LIST_DEPTH`), read
    in two passes so that only their names are held, not every file's entry."""
    with os.scandir(folder) as entries:
        named = {entry.name[:-10] for entry in entries if entry.name.endswith(".tree.json")}
    found, below = [], []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                if entry.name in named:
                    found.append(entry.name)
            elif (
                depth < LIST_DEPTH
                and not entry.name.startswith(".")
                and entry.name not in _UNLISTED
            ):
                below.append(entry.name)
    return found, sorted(below)


def _changes(folder: str, prefix: str) -> tuple[str, int, int]:
    """What a commit in `folder` changes: the folder's modification time (a commit renames its
    state file into place) and the length of its index (a commit appends to it)."""
    with contextlib.suppress(OSError):
        return prefix, os.stat(folder).st_mtime_ns, _size(os.path.join(folder, INDEX))
    return prefix, -1, -1


def _open(path: str, flags: int) -> int:
    """`open_regular` for a file of the execution, its refusals as `corrupt_execution`."""
    try:
        return open_regular(path, flags)
    except NotARegularFile as exc:
        raise _not_regular(path, exc) from None


def _not_regular(path: str, exc: NotARegularFile) -> TetherError:
    return TetherError(
        "corrupt_execution",
        f"{exc}: an execution's files are regular files in its folder; it was left as it is",
        path=path,
        file_kind=exc.kind,
    )


def _read_state(path: str) -> dict[str, Any]:
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        raise TetherError("not_found", f"no execution at {path}", path=path) from None
    except NotARegularFile as exc:
        if exc.kind == "folder":
            raise TetherError(
                "invalid_value", f"{path} is a folder, not an execution file", path=path
            ) from None
        raise _not_regular(path, exc) from None
    except OSError as exc:
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
    _check_files(path, state)
    return dict(state)


def _check_files(path: str, state: dict[str, Any]) -> None:
    """Refuse a state whose bookkeeping is not what this store writes: a trace or tree file not
    named after the execution, a committed length that is not a count."""
    base = os.path.basename(path)
    trace, tree_file = state["trace"], state.get("tree_file")
    problem = None
    if not isinstance(trace, dict) or not isinstance(trace.get("file"), str):
        problem = "its trace record is not an object naming a file"
    elif not _named(base, trace["file"], _TRACE):
        problem = f"it names the trace file {trace['file']!r}, not {base}.trace[.N].jsonl"
    elif not all(_count(trace.get(k)) for k in ("entries", "bytes")):
        problem = "its committed trace length is not a count"
    elif tree_file is not None and not (
        isinstance(tree_file, str) and _named(base, tree_file, _TREE)
    ):
        problem = f"it names the tree file {tree_file!r}, not {base}.tree[.N].json"
    elif not _count(state["revision"]):
        problem = "its revision is not a count"
    if problem:
        raise TetherError(
            "corrupt_execution",
            f"{path} is corrupt: {problem}; it was left as it is, and nothing it names was read",
            path=path,
        )


def _named(base: str, name: str, suffix: str) -> bool:
    return name.startswith(base) and re.fullmatch(suffix, name[len(base) :]) is not None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tree_name(path: str, state: dict[str, Any]) -> str:
    return str(state.get("tree_file") or os.path.basename(path) + ".tree.json")


def _read_tree(path: str, state: dict[str, Any]) -> dict[str, Any]:
    tree_path = os.path.join(os.path.dirname(path), _tree_name(path, state))
    try:
        return dict(json.loads(read_regular(tree_path)))
    except FileNotFoundError:
        raise TetherError(
            "corrupt_execution", f"the execution's tree file {tree_path} is missing", path=tree_path
        ) from None
    except NotARegularFile as exc:
        raise _not_regular(tree_path, exc) from None
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
        tree_file=True,
    )


def _read_entries(path: str, state: dict[str, Any]) -> list[dict[str, Any]]:
    """The committed trace as one list, parsed in one call (what counting reads)."""
    data = _trace_bytes(path, state).rstrip(b"\n")
    return list(json.loads(b"[" + data.replace(b"\n", b",") + b"]"))


def _size(path: str) -> int:
    """The size of the file at `path` (0: none)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _read_refusals(path: str) -> list[dict[str, Any]]:
    """The records of the execution's refusal log; a line that is not a JSON object (a torn
    last line) is skipped."""
    try:
        data = read_regular(path + _REFUSED)
    except FileNotFoundError:
        return []
    except NotARegularFile as exc:
        raise _not_regular(path + _REFUSED, exc) from None
    from tether.appendlog import parse

    return parse(data)


def _snapshot(
    path: str, read: Callable[[str, dict[str, Any]], list[dict[str, Any]]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The committed state and what `read` reads of its trace, as one snapshot. The state names
    the committed length of an append-only trace file, so reading the state first and then that
    many bytes is one snapshot; only a reset in between (which starts a new trace file) can pull
    the file away, and then the read starts over."""
    for _ in range(3):
        state = _read_state(path)
        try:
            return state, read(path, state)
        except TetherError:
            if _read_state(path)["revision"] == state["revision"]:
                raise
    state = _read_state(path)
    return state, read(path, state)


def _trace_file(path: str, state: dict[str, Any]) -> tuple[str, BinaryIO]:
    """The path of the committed trace file of `state` and the file, open for reading, checked
    to hold at least its committed length."""
    trace_path = os.path.join(os.path.dirname(path), state["trace"]["file"])
    try:
        trace = os.fdopen(open_regular(trace_path), "rb")
    except FileNotFoundError:
        raise TetherError(
            "corrupt_execution", f"the trace file {trace_path} is missing", path=trace_path
        ) from None
    except NotARegularFile as exc:
        raise _not_regular(trace_path, exc) from None
    if os.fstat(trace.fileno()).st_size < state["trace"]["bytes"]:
        trace.close()
        raise TetherError(
            "corrupt_execution",
            f"the trace file {trace_path} is shorter than its committed length",
            path=trace_path,
        )
    return trace_path, trace


def _trace_bytes(path: str, state: dict[str, Any]) -> bytes:
    with _trace_file(path, state)[1] as trace:
        return trace.read(state["trace"]["bytes"])


def _read_trace(path: str, state: dict[str, Any]) -> Iterator[dict[str, Any]]:
    data = _trace_bytes(path, state)
    trace_path = os.path.join(os.path.dirname(path), state["trace"]["file"])
    for n, line in enumerate(data.splitlines(), 1):
        yield _entry(line, f"{trace_path}:{n}", trace_path)


def _read_tail(path: str, state: dict[str, Any], since: int) -> list[dict[str, Any]]:
    """The committed entries whose seq is `since` or more, read backwards from the trace
    file's committed end a block at a time (each four times the last), so that the cost follows
    the entries read rather than the trace: a line is one entry, and seqs grow line by line."""
    end, block = int(state["trace"]["bytes"]), _TAIL_BLOCK
    trace_path, trace = _trace_file(path, state)
    with trace:
        while True:
            start = max(0, end - block)
            trace.seek(start)
            lines = trace.read(end - start).split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            if start > 0:
                lines.pop(0)  # it may begin before the block
            tail: list[dict[str, Any]] = []
            for line in reversed(lines):
                entry = _entry(line, f"{trace_path} (before byte {end})", trace_path)
                if entry["seq"] < since:
                    return tail[::-1]
                tail.append(entry)
                if entry["seq"] == since:  # the ones before it come before `since`
                    return tail[::-1]
                end -= len(line) + 1
            if start == 0:
                return tail[::-1]
            end, block = int(state["trace"]["bytes"]), block * 4


def _entry(line: bytes, where: str, trace_path: str) -> dict[str, Any]:
    """The trace entry a line of the trace file holds."""
    try:
        entry: dict[str, Any] = json.loads(line)
    except ValueError:
        raise TetherError(
            "corrupt_execution", f"{where} is not a JSON trace entry", path=trace_path
        ) from None
    return entry
