"""The verb layer: the one place where a request becomes read → engine → one commit.

Owns the verbs that every interface calls (the CLI, the MCP server, the bot tools): start,
resume, reset, next, eval, submit, think, var read/write, const, get, trace, verify, the
bot tools' jump, close and replace_tree, and what a bound agent session records (stop,
record_tool) and reads (open_steps); the
parsing of answer values (JSON or string); the clock; and the phase rules that depend on storage
(start refuses a URI that exists). Each verb that changes an execution holds the store's
transaction for the URI, runs the engine once, and commits once; a verb the engine refuses
commits nothing. It does not format output (the edges do) and does not know node semantics
(the engine does) or encodings (the stores do).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tether.engine import core
from tether.engine.varpath import read_path
from tether.errors import TetherError
from tether.store import scheme_of, store_for

if TYPE_CHECKING:
    from tether.store.base import Store

Clock = Callable[[], str]

# The answers whose checks may read TOOLS.
_MOVES = (core.Eval, core.Submit, core.Close)
# Execution-state keys that are engine or store bookkeeping, not part of the document.
_INTERNAL = ("salt", "seq", "since_reset", "initial", "trace", "tree_file")


def utc_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds (`2026-01-01T09:30:00.123Z`)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def parse_value(text: str, *, strict_json: bool = False) -> Any:
    """A `var` value: JSON when it parses, else the text itself (or an error, if `strict_json`)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if strict_json:
            raise TetherError(
                "invalid_json",
                f"value is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                line=exc.lineno,
                column=exc.colno,
            ) from None
        return text


EVIDENCE_TEXT = 1000  # characters of each string a `tool` entry keeps
_EVIDENCE_DEPTH = 8  # nesting levels of a `tool` entry's input kept
_EVIDENCE_ITEMS = 100  # items of each list or mapping kept


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` with every string cut at `EVIDENCE_TEXT` characters (the cut marked with how much
    was left out), lists and mappings cut at `_EVIDENCE_ITEMS` items and nesting at
    `_EVIDENCE_DEPTH` levels, so that a tool's input can never swell a trace."""
    if isinstance(value, str):
        if len(value) <= EVIDENCE_TEXT:
            return value
        return value[:EVIDENCE_TEXT] + f"…[cut {len(value) - EVIDENCE_TEXT} characters]"
    if isinstance(value, dict | list) and depth >= _EVIDENCE_DEPTH:
        return "…[cut: nested too deep]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): bounded(v, depth + 1) for k, v in items[:_EVIDENCE_ITEMS]}
        if len(items) > _EVIDENCE_ITEMS:
            out["…"] = f"[cut {len(items) - _EVIDENCE_ITEMS} keys]"
        return out
    if isinstance(value, list):
        kept = [bounded(v, depth + 1) for v in value[:_EVIDENCE_ITEMS]]
        if len(value) > _EVIDENCE_ITEMS:
            kept.append(f"…[cut {len(value) - _EVIDENCE_ITEMS} items]")
        return kept
    return value


class Runtime:
    """Drives executions in whatever store their URI names.

    `condition` evaluates `check`/`when` expressions (CEL by default); `clock` gives timestamps.
    Trees are cached by hash: a hash names one tree, so the cache cannot go stale.
    """

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        condition: core.Condition = core.default_condition,
        root: str | None = None,
        default_store: str | None = None,
    ) -> None:
        self._clock = clock
        self._condition = condition
        self._trees: dict[str, dict[str, Any]] = {}
        self._root = os.path.realpath(root) if root is not None else None
        self._default_store = default_store or os.environ.get("TETHER_STORE") or None

    @property
    def root(self) -> str | None:
        """The folder file URIs are confined to, if any."""
        return self._root

    def _store(self, uri: str) -> tuple[Store, str]:
        """The store for `uri` and the URI's canonical spelling, confined to `root` if set."""
        anchored = self._anchor(uri)
        store = store_for(anchored)
        canonical = store.canonical(anchored)
        if self._root is not None and canonical.startswith("file://"):
            self._confine(canonical[len("file://") :], uri)
        return store, canonical

    def _anchor(self, uri: str, *, tree: bool = False) -> str:
        """Where a name that is not a URI lives: in the default store (`default_store`, else the
        `TETHER_STORE` environment variable) — `STORE#name` for a database, `memory://name`, or
        `FOLDER/name` for a folder (a path or `file://` URI) — or else as a file, relative to the
        root when there is one. Trees are always files, relative to the root."""
        if "://" in uri or uri.startswith("file:"):
            return uri
        store = None if tree else self._default_store
        if store:
            scheme = scheme_of(store)
            if scheme == "memory":
                return "memory://" + uri
            if scheme != "file":
                return f"{store}#{uri}"
            from tether.store.file import path_of

            return os.path.join(path_of(store), uri)
        if self._root is None or os.path.isabs(uri):
            return uri
        return os.path.join(self._root, uri)

    def _load_tree(self, tree_uri: str) -> Any:
        """The tree file at `tree_uri` (a path or `file:` URI), loaded and validated."""
        from tether.store.file import path_of
        from tether.tree.load import load_tree

        path = path_of(self._anchor(tree_uri, tree=True))
        if self._root is not None:
            self._confine(path, tree_uri)
        return load_tree(path)

    def _confine(self, path: str, given: str) -> None:
        """Refuse a file outside the root, however it is reached (`..`, symbolic links); the
        error names the file as it was `given`."""
        assert self._root is not None
        real = os.path.realpath(path)
        if os.path.commonpath([real, self._root]) != self._root:
            raise TetherError(
                "forbidden",
                f"{given!r} is outside the allowed root {self._root} (the server's --root)",
                path=given,
            )

    # -- lifecycle -----------------------------------------------------------------------------

    def start(
        self,
        tree_uri: str,
        trace: str,
        *,
        var: dict[str, Any] | None = None,
        const: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        import secrets

        store, uri = self._store(trace)
        if store.exists(uri):
            raise TetherError(
                "already_exists",
                f"an execution already exists at {uri}; resume it, reset it, or choose another",
                uri=uri,
            )
        tree = self._load_tree(tree_uri)
        now = self._clock()
        state = core.initial_state(
            tree.data,
            uri=uri,
            tree_uri="file://" + tree.source,
            tree_hash=tree.hash,
            now=now,
            salt=secrets.token_hex(4),
            var=var,
            const=const,
        )
        stored = store.create(uri, state, tree.data)
        self._trees[tree.hash] = tree.data
        return {
            "status": "started",
            "uri": uri,
            "tree": tree.data["name"],
            "tree_hash": tree.hash,
            "message": "Execution created. Call next: the first request is the protocol.",
            "current": core.current(stored),
        }

    def resume(self, trace: str) -> dict[str, Any]:
        store, uri = self._store(trace)
        state = store.load(uri)
        self._tree(store, uri, state)
        return {
            "status": "resumable" if state["status"] == "running" else state["status"],
            "uri": uri,
            "tree": state.get("tree_name"),
            "phase": state["phase"],
            "revision": state["revision"],
            "current": core.current(state),
        }

    def reset(self, trace: str) -> dict[str, Any]:
        return self._answer(trace, core.Reset())

    def replace_tree(self, trace: str, tree_uri: str) -> dict[str, Any]:
        """Swap the execution's embedded tree for the tree file at `tree_uri`, keeping the trace
        and the cursor, if the execution still fits it (`tether.engine.replay.refit`: its trace
        must replay against the new tree to the same entries and state); else `invalid_tree`."""
        from tether.engine.replay import refit

        store, uri = self._store(trace)
        new = self._load_tree(tree_uri)
        with store.transaction(uri) as tx:
            if tx.state["tree_hash"] == new.hash:
                return {"status": "unchanged", "uri": uri, "tree_hash": new.hash}
            state = refit(
                tx.tree(), new.data, tx.state, list(store.read_trace(uri)), self._condition
            )
            state.update(
                tree_hash=new.hash, tree_uri="file://" + new.source, tree_name=new.data["name"]
            )
            tx.replace_tree(new.data, state)
        self._trees[new.hash] = new.data
        return {
            "status": "replaced",
            "uri": uri,
            "tree_hash": new.hash,
            "current": core.current(state),
        }

    # -- the loop ------------------------------------------------------------------------------

    def next(self, trace: str, *, all: bool = False) -> Any:
        store, uri = self._store(trace)
        state = store.load(uri)
        return core.all_open(state) if all else core.current(state)

    def eval(
        self, trace: str, result: bool, *, note: str | None = None, step: str | None = None
    ) -> dict[str, Any]:
        return self._answer(trace, core.Eval(result, note, step))

    def submit(
        self, trace: str, status: str, *, note: str | None = None, step: str | None = None
    ) -> dict[str, Any]:
        return self._answer(trace, core.Submit(status, note, step))

    def think(self, trace: str, thought: str, *, step: str | None = None) -> dict[str, Any]:
        return self._answer(trace, core.Think(thought, step))

    def jump(self, trace: str, path: list[int], *, note: str | None = None) -> dict[str, Any]:
        """Move the cursor to the action at `path`, out of order (bot tools)."""
        return self._answer(trace, core.Jump(path, note))

    def close(
        self, trace: str, *, note: str | None = None, step: str | None = None
    ) -> dict[str, Any]:
        """Mark the current action done once its checks hold and its writes were made."""
        return self._answer(trace, core.Close(note, step))

    # -- scopes --------------------------------------------------------------------------------

    def var_read(self, trace: str, path: str | None = None) -> Any:
        store, uri = self._store(trace)
        return read_path(store.load(uri)["var"], path, "var")

    def var_write(
        self, trace: str, path: str, value: Any, *, step: str | None = None
    ) -> dict[str, Any]:
        return self._answer(trace, core.VarWrite(path, value, step))

    def const_read(self, trace: str, path: str | None = None) -> Any:
        store, uri = self._store(trace)
        return read_path(store.load(uri)["const"], path, "const")

    # -- inspection ----------------------------------------------------------------------------

    def get(self, trace: str) -> dict[str, Any]:
        store, uri = self._store(trace)
        state, entries = store.read_execution(uri)
        doc = {k: v for k, v in state.items() if k not in _INTERNAL}
        doc["tree"] = self._tree(store, uri, state)
        doc["trace"] = entries
        return doc

    def trace(self, trace: str, *, start: int | None = None, stop: int | None = None) -> list[Any]:
        """Trace entries with `start <= seq < stop` (either bound may be omitted)."""
        store, uri = self._store(trace)
        return [
            e
            for e in store.read_trace(uri)
            if (start is None or e["seq"] >= start) and (stop is None or e["seq"] < stop)
        ]

    def verify(self, trace: str) -> dict[str, Any]:
        from tether.engine.replay import verify

        store, uri = self._store(trace)
        state, entries = store.read_execution(uri)
        tree = self._tree(store, uri, state)
        diffs = verify(tree, state, entries, self._condition)
        return {
            "ok": not diffs,
            "uri": uri,
            "entries": len(entries),
            "revision": state["revision"],
            "differences": diffs,
        }

    # -- a bound agent session (tether.guard.binding) ------------------------------------------

    def stop(self, trace: str, *, cap: int) -> dict[str, Any]:
        """Record that the agent tried to stop while the execution runs: `refused`, or `allowed`
        once `cap` refusals in a row went without an answer (a `stop` entry either way)."""
        return self._answer(trace, core.Stop(cap))

    def record_tool(
        self, trace: str, tool: str, input: Any, *, ok: bool, step: str | None = None
    ) -> dict[str, Any]:
        """Record a tool call the agent made while a step was open (a `tool` entry); every
        string of `input` is cut at `EVIDENCE_TEXT` characters, and marked where cut."""
        return self._answer(trace, core.ToolCall(tool, bounded(input), ok, step))

    def open_steps(self, trace: str) -> dict[str, Any]:
        """The execution's status, its refused stops in a row (`stop_blocks`), its current
        request and every open one (each with the `tools` policy that applies to it, when a
        node declares one), read from the state alone."""
        store, uri = self._store(trace)
        state = store.load(uri)
        return {
            "uri": uri,
            "status": state["status"],
            "stop_blocks": state.get("stops", 0),
            "current": core.current(state),
            "open": core.all_open(state) if state["status"] == "running" else [],
        }

    # -- internals -----------------------------------------------------------------------------

    def _tree(self, store: Any, uri: str, state: dict[str, Any]) -> dict[str, Any]:
        cached = self._trees.get(state["tree_hash"])
        if cached is None:
            cached = self._trees[state["tree_hash"]] = store.load_tree(uri)
        return cached

    def _answer(self, trace: str, answer: core.Answer) -> dict[str, Any]:
        store, uri = self._store(trace)
        with store.transaction(uri) as tx:
            state = tx.state
            cached = self._trees.get(state["tree_hash"])
            tree = cached if cached is not None else tx.tree()
            self._trees[state["tree_hash"]] = tree
            # Checks that read TOOLS see the tool entries of their action's attempt.
            since = core.tools_since(state) if isinstance(answer, _MOVES) else None
            tools = None if since is None else core.tool_records(store.read_trace(uri), since)
            outcome = core.apply(tree, state, answer, self._clock(), self._condition, tools)
            if outcome.changed:
                outcome.state["updated_at"] = outcome.entries[-1]["ts"]
                tx.commit(
                    outcome.state, outcome.entries, reset_trace=isinstance(answer, core.Reset)
                )
        return outcome.response
