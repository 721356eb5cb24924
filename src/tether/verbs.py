"""The verb layer: the one place where a request becomes read → engine → one commit.

Owns:
- the verbs every interface calls (the CLI, the MCP server, the bot tools, the viewer): start,
  resume, reset, next, eval, submit (each answer may carry its step's var writes and the agent
  answering), claim (a branch's action for one agent of a team), approve and
  reject (a person's answer to a human step), think, var read/write, const, get, trace, verify,
  fork, the bot tools' jump, close, independent (a call of an action outside the workflow) and
  replace_tree; `list_executions` (through the store's `list`);
- what a bound agent session records (stop, record_tool, deny_tool) and reads (open_steps);
- the clock, and the phase rules that depend on storage (start refuses a URI that exists);
- the timeouts of human steps past their deadline, recorded at the next read or answer
  (`Runtime._time_out`, the one place a timeout is decided; `_load` for the reads);
- what the trace never holds, for `tether stats`: each answer the engine refuses and each tool
  call a step policy denied, in the execution's refusal log (`Transaction.refuse`), which
  nothing the engine, replay or `verify` reads;
- what follows each commit (`Runtime._committed`, the one listener): with an OTLP endpoint
  configured, the spans it completed handed to `tether.otel.send.emit` (nothing of OpenTelemetry
  is imported otherwise); with a notification target (those the runtime was given from the
  guard's configuration, `TETHER_NOTIFY`), what it raised that a person is told of, handed to
  `tether.notify`.

Each verb that changes an execution holds the store's transaction for the URI, runs the engine
once and commits once; a verb the engine refuses commits nothing. It does not check or parse
what callers hand in (`tether.values` does, called here before each commit), format output
(the edges do), know node semantics (the engine does) or encodings (the stores do).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

from tether.admission import Admission
from tether.engine import public as core
from tether.engine.trace import Token
from tether.engine.varpath import read_path
from tether.errors import TetherError
from tether.store import path_of, scheme_of, store_for
from tether.values import bounded, check_answer, check_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, overload

    from tether.results import (
        Answered,
        Forked,
        Replaced,
        Request,
        Resumed,
        Started,
        Verified,
    )
    from tether.store.base import Store, Transaction

Clock = Callable[[], str]

# The statuses an execution can have, what `list` filters on.
STATUSES = tuple(core.Status)

# The answers whose checks may read TOOLS.
_MOVES = (core.Eval, core.Submit, core.Human, core.Timeout, core.Close)
# The answers of an agent or a person: when the engine refuses one, the refusal is recorded
# (a claim too: `claimed` refusals are counted per agent).
_ANSWERS = (*_MOVES, core.Think, core.VarWrite, core.Jump, core.Independent, core.Claim)
# Execution-state keys that are engine or store bookkeeping, not part of the document.
_INTERNAL = ("salt", "seq", "since_reset", "initial", "trace", "tree_file")


def utc_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds (`2026-01-01T09:30:00.123Z`)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


LEASE_SECONDS = 900  # how long a claim holds without an answer from its holder, by default


class Runtime:
    """Drives executions in whatever store their URI names.

    `condition` evaluates `check`/`when` expressions (CEL by default); `clock` gives timestamps.
    `root`, `default_store` and `stores` say which files and databases it may reach
    (`tether.admission.Admission`). Trees are cached by hash: a hash names one tree, so the
    cache cannot go stale.
    """

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        condition: core.Condition = core.default_condition,
        root: str | None = None,
        default_store: str | None = None,
        stores: Iterable[str] | None = None,
        notify: Iterable[dict[str, Any]] = (),
        log: str | None = None,
    ) -> None:
        self._clock = clock
        self._condition = condition
        self._notify = list(notify)  # a person's targets (the guard's configuration), besides
        self._log = log  # TETHER_NOTIFY's; what cannot be told goes to the guard's log here
        self._trees: dict[str, dict[str, Any]] = {}
        self._admission = Admission(root, default_store, stores)

    @property
    def root(self) -> str | None:
        """The folder file URIs are confined to, if any."""
        return self._admission.root

    def _store(self, uri: str) -> tuple[Store, str]:
        """The store for `uri` and the URI's canonical spelling, as the admission allows."""
        return self._admission.store(uri)

    def _load_tree(self, tree_uri: str) -> Any:
        """The tree file at `tree_uri` (a path or `file:` URI), loaded and validated."""
        from tether.tree.load import load_tree

        return load_tree(self._admission.tree_path(tree_uri), root=self._admission.root)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(
        self,
        tree_uri: str,
        trace: str,
        *,
        var: dict[str, Any] | None = None,
        const: dict[str, Any] | None = None,
    ) -> Started:
        """Start an execution of the tree file `tree_uri` (a path or `file:` URI) at `trace` (a
        path, `file://`, `memory://NAME` or `postgresql://…#NAME`), its `$VAR` and `$CONST`
        seeded from `var` and `const`. Returns `Started`: the canonical `uri`, the tree's name
        and hash, and `current`, the protocol gate to accept first. `already_exists` when
        `trace` exists."""
        import secrets

        store, uri = self._store(trace)
        check_value(uri, "the execution's path")
        for scope, values in (("var", var), ("const", const)):
            for key, value in (values or {}).items():
                check_value(key, f"{scope} {key!r}")
                check_value(value, f"{scope} {key!r}", 1)
        if store.exists(uri):
            raise TetherError(
                "already_exists",
                f"an execution already exists at {uri}; resume it, reset it, or choose another",
                uri=uri,
            )
        tree = self._load_tree(tree_uri)
        check_value(tree.source, "the tree file's path")
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
            "ok": True,
            "status": "started",
            "uri": uri,
            "tree": tree.data["name"],
            "tree_hash": tree.hash,
            "message": "Execution created. `current` is the first request: the protocol.",
            "current": _request(core.current(stored)),
        }

    def resume(self, trace: str) -> Resumed:
        """Confirm the execution at `trace` can be driven. Returns `Resumed`: its status
        (`resumable` while running), phase, revision and current request."""
        store, uri = self._store(trace)
        state = self._load(store, uri)
        self._tree(store, uri, state)
        return {
            "status": "resumable" if state["status"] == core.Status.RUNNING else state["status"],
            "uri": uri,
            "tree": state.get("tree_name"),
            "phase": state["phase"],
            "revision": state["revision"],
            "current": _request(core.current(state)),
        }

    def reset(self, trace: str) -> Answered:
        """Clear the trace of the execution at `trace`, restore its scopes and re-arm the protocol
        gate (idempotent). Returns `Answered` with status `reset`."""
        return self._answer(trace, core.Reset())

    def replace_tree(self, trace: str, tree_uri: str) -> Replaced:
        """Swap the embedded tree of the execution at `trace` for the tree file at
        `tree_uri`, keeping the trace and the cursor, if the execution still fits it
        (`tether.engine.replay.refit`: its trace must replay against the new tree to the same
        entries and state); else `invalid_tree`. Returns `Replaced`: status `replaced` with
        `current`, or `unchanged` when the tree is the same."""
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
            "current": _request(core.current(state)),
        }

    # -- the loop ------------------------------------------------------------------------------

    if TYPE_CHECKING:  # what `next` returns, by `all`, for type checkers

        @overload
        def next(self, trace: str, *, all: Literal[False] = False) -> Request: ...
        @overload
        def next(self, trace: str, *, all: Literal[True]) -> list[Request]: ...

    def next(self, trace: str, *, all: bool = False) -> Request | list[Request]:
        """The open request of the execution at `trace` (a `Request`), or with `all` a list of
        every open request (several inside a `parallel`); a finished execution's is `{"status":
        "done"}` or `{"status": "failure"}` (`core.current`, which also builds every answer's
        `next`). It changes nothing, but for the timeout of a human step past its deadline,
        recorded first (`_load`)."""
        store, uri = self._store(trace)
        state = self._load(store, uri)
        return _requests(core.all_open(state)) if all else _request(core.current(state))

    def eval(
        self,
        trace: str,
        result: bool,
        *,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> Answered:
        """Answer the evaluate step of the execution at `trace` with `result` (true or false),
        with an optional `note`; `step` is the token of the request answered (a stale one is
        `stale_step`); `values` (var path → value) are written in the same commit, before it is
        judged; `agent` names who answers (a claimed branch's action takes its holder's answers
        only, `claimed`). Returns `Answered`, whose `next` is the request that follows."""
        return self._answer(trace, core.Eval(result, note, step, values, agent))

    def submit(
        self,
        trace: str,
        status: str,
        *,
        note: str | None = None,
        step: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> Answered:
        """Answer the instruct step (or the protocol gate) of the execution at `trace` with
        `status` (`success`, `failure` or `running`); `note`, `step`, `values` and `agent` as
        for `eval`. Returns `Answered`, whose `next` is the request that follows."""
        return self._answer(trace, core.Submit(status, note, step, values, agent))

    def claim(
        self, trace: str, agent: str, *, step: str | None = None, lease: int = LEASE_SECONDS
    ) -> dict[str, Any]:
        """Claim for `agent` the action of the open step `step` names (else the first) of the
        execution at `trace`, in a parallel branch or a for_each item, for `lease` seconds
        (renewed by each of its answers): `{status: claimed | renewed | taken_over, agent,
        until, current}`; another agent's unexpired claim is `claimed`."""
        return dict(self._answer(trace, core.Claim(agent, lease, step)))

    def approve(
        self,
        trace: str,
        *,
        note: str | None = None,
        step: str | None = None,
        by: str = "api",
        sent_by: int | None = None,
    ) -> Answered:
        """A person's success on the open human step of the execution at `trace` (or the one
        `step` names), with an optional `note`; `by` says where the answer came from (`cli`,
        `viewer`, `api`, `prompt`). Returns `Answered`, whose `next` is the request that
        follows; `wrong_phase` when no human step is open. Every person's answer passes the
        person gate (`_person_gate`): refused from inside an agent's process tree (this
        process's, or that of `sent_by`, the process it came from: the viewer's browser, which
        must be found), and one from the command line is first confirmed at the controlling
        terminal (`tether.person`); an execution in `memory://` belongs to the calling process
        alone and needs neither."""
        return self._human(trace, True, note, step, by, sent_by)

    def reject(
        self,
        trace: str,
        *,
        note: str | None = None,
        step: str | None = None,
        by: str = "api",
        sent_by: int | None = None,
    ) -> Answered:
        """A person's failure on the open human step of the execution at `trace`: the step's
        action fails. `note`, `step`, `by` and `sent_by` as for `approve`; returns `Answered`."""
        return self._human(trace, False, note, step, by, sent_by)

    def _human(
        self,
        trace: str,
        approved: bool,
        note: str | None,
        step: str | None,
        by: str,
        sent_by: int | None,
    ) -> Answered:
        from tether.person import source

        return self._answer(trace, core.Human(approved, source(by), note, step), sent_by)

    def think(self, trace: str, thought: str, *, step: str | None = None) -> Answered:
        """Record `thought`, a checkpoint on the action in flight of the execution at `trace`
        (`step` names its request). Returns `Answered` with status `recorded`; nothing moves."""
        return self._answer(trace, core.Think(thought, step))

    def jump(self, trace: str, path: list[int], *, note: str | None = None) -> Answered:
        """Move the cursor of the execution at `trace` to the action at `path` (child indices
        from the root), out of order, recording `note` (bot tools). Returns `Answered` with
        `current`."""
        return self._answer(trace, core.Jump(path, note))

    def close(self, trace: str, *, note: str | None = None, step: str | None = None) -> Answered:
        """Mark the current action of the execution at `trace` (or the one `step` names) done
        once its checks hold and its writes were made, recording `note` (bot tools). Returns
        `Answered` with `current`."""
        return self._answer(trace, core.Close(note, step))

    def independent(
        self,
        trace: str,
        name: str,
        *,
        close: bool = False,
        values: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> Answered:
        """Record a call of the independent action `name` of the execution at `trace`,
        moving nothing; with `close`, write `values` and close it once its writes and checks hold,
        recording `note` (bot tools). Returns `Answered`."""
        return self._answer(trace, core.Independent(name, close, values, note))

    # -- scopes --------------------------------------------------------------------------------

    def var_read(self, trace: str, path: str | None = None) -> Any:
        """The `$VAR` of the execution at `trace`, or the value at the dotted `path` in it
        (`not_found` when nothing is there)."""
        store, uri = self._store(trace)
        return read_path(store.load(uri)["var"], path, "var")

    def var_write(self, trace: str, path: str, value: Any, *, step: str | None = None) -> Answered:
        """Write `value` at the dotted `path` of the `$VAR` of the execution at `trace`, as
        part of the request `step` names when given. Returns `Answered` with status `written`,
        echoing `path` and `value`."""
        return self._answer(trace, core.VarWrite(path, value, step))

    def const_read(self, trace: str, path: str | None = None) -> Any:
        """The `$CONST` of the execution at `trace` (read-only after start), or the value
        at the dotted `path` in it."""
        store, uri = self._store(trace)
        return read_path(store.load(uri)["const"], path, "const")

    # -- inspection ----------------------------------------------------------------------------

    def get(self, trace: str) -> dict[str, Any]:
        """The whole document of the execution at `trace`: its state without the store's
        bookkeeping, its embedded `tree` and its `trace` entries, read at one revision."""
        store, uri = self._store(trace)
        self._load(store, uri)
        state, entries = store.read_execution(uri)
        doc = {k: v for k, v in state.items() if k not in _INTERNAL}
        doc["tree"] = self._tree(store, uri, state)
        doc["trace"] = entries
        return doc

    def list_executions(
        self,
        where: str | None = None,
        *,
        status: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """The executions at `where` — a folder (its sub-folders included), `memory://` or a
        database (`postgresql://...` without `#name`); by default the default store, else the
        root, else the current folder — as the store lists them (`tether.store.base.Summary`:
        name, uri, tree, status, phase, open step, revision, last update; or name, uri and
        `error`), only those whose status is `status` when given, and only `limit` of them from
        `offset` when given (`Store.page`). A relative folder is relative to the root; a folder
        outside the root is `forbidden`."""
        if status is not None and status not in STATUSES:
            raise TetherError(
                "invalid_value",
                f"status must be one of {', '.join(STATUSES)}, got {status!r}",
                argument="status",
            )
        place = self._admission.place(where)
        listed = store_for(place).page(place, status=status, limit=limit, offset=offset)[0]
        return [summary.to_dict() for summary in listed]

    def trace(self, trace: str, *, start: int | None = None, stop: int | None = None) -> list[Any]:
        """The trace entries of the execution at `trace` whose `seq` is at least `start` and
        below `stop` (either bound may be omitted), in order."""
        store, uri = self._store(trace)
        return [
            e
            for e in store.read_trace(uri)
            if (start is None or e["seq"] >= start) and (stop is None or e["seq"] < stop)
        ]

    def verify(self, trace: str) -> Verified:
        """Replay the trace of the execution at `trace` against its embedded tree and compare
        with the stored state. Returns `Verified`: `ok`, the number of entries, the revision and
        each difference."""
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

    def fork(self, trace: str, new: str, *, at: int, same_tokens: bool = False) -> Forked:
        """A new execution at `new` (any store) whose trace is the first `at` entries of
        `trace`'s, its state derived by replaying them (`tether.engine.replay.fork`), created in
        one commit; `trace` is not changed. `new` records `forked_from: {uri, at}`; it draws its
        own step tokens unless `same_tokens`. Returns `Forked`, with the new execution's `next`.
        Refuses a `new` that exists, and a `trace` that does not verify (`corrupt_execution`): a
        fork replays what the source recorded, so it must be what the source's answers made."""
        import secrets

        from tether.engine.replay import fork, verify

        store, uri = self._store(trace)
        new_store, new_uri = self._store(new)
        if new_store.exists(new_uri):
            raise TetherError(
                "already_exists",
                f"an execution already exists at {new_uri}; fork into a new name",
                uri=new_uri,
            )
        stored, entries = store.read_execution(uri)
        tree = self._tree(store, uri, stored)
        differences = verify(tree, stored, entries, self._condition)
        if differences:
            raise TetherError(
                "corrupt_execution",
                f"{uri} does not verify (its {differences[0]['field']} is not what replaying "
                "its trace gives), so it cannot be forked: tether verify names every difference",
                uri=uri,
            )
        state, kept = fork(
            tree,
            stored,
            entries,
            at,
            uri=new_uri,
            # Its own step tokens, unless `same_tokens`: a replay's copy (guard.sandbox) takes
            # the tokens a recorded session answered the original with.
            salt=stored["salt"] if same_tokens else secrets.token_hex(4),
            now=self._clock(),
            condition=self._condition,
        )
        origin = {"uri": uri, "at": at}
        new_store.create(new_uri, {**state, "forked_from": origin}, tree, kept)
        return {
            "status": "forked",
            "uri": new_uri,
            "forked_from": origin,
            "entries": len(kept),
            "next": _request(core.current(state)),
        }

    # -- a bound agent session (tether.guard.binding) ------------------------------------------

    def stop(
        self,
        trace: str,
        *,
        cap: int,
        ended: bool = False,
        background: bool = False,
        park: str | None = None,
        agent: str | None = None,
        step: str | None = None,
    ) -> dict[str, Any]:
        """Record that the agent bound to the execution at `trace` tried to stop while it runs:
        status `refused`, or once `cap` refusals in a row went without an answer `parked` (with
        the reason `park`) or `allowed`, or `ended` when its harness cannot refuse a stop
        (`ended`), or `background` while its harness runs work in the background (a `stop` entry
        each way); `agent` and `step`: a sub-agent's stop while it holds the claim on that
        step, counted in its claim. Returns the engine's response, with `blocks`, `cap` and
        `current`."""
        stop = core.Stop(cap, ended, background=background, park=park, agent=agent, step=step)
        return self._answer(trace, stop)

    def record_tool(
        self,
        trace: str,
        tool: str,
        input: Any,
        *,
        ok: bool | None,
        step: str | None = None,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Record a call of `tool` with `input` that the agent made while a step of the
        execution at `trace` was open (a `tool` entry; `ok` whether it succeeded, when known; `step`
        the request it belongs to; `agent` the sub-agent that made it); every string of `input`
        is cut at `EVIDENCE_TEXT` characters, and marked where cut. Returns the engine's
        response, status `recorded`."""
        return self._answer(trace, core.ToolCall(tool, bounded(input), ok, step, agent))

    def deny_tool(self, trace: str, tool: str, input: Any, *, reason: str) -> None:
        """Record a call of `tool` with `input` that the `tools` policy of the open steps of the
        execution at `trace` denied (the first open step's, which the denial names), with the
        denial's `reason`, in the execution's refusal log; the execution does not change. `input`
        is cut as `record_tool` cuts it. Returns nothing."""
        store, uri = self._store(trace)
        with store.transaction(uri) as tx:
            state = tx.state
            req = state["open"][0] if state["open"] else None
            record = _record(state, self._clock(), "tool", "denied", req, reason)
            record.update(tool=tool, input=bounded(input))
            tx.refuse(record)

    def open_steps(self, trace: str) -> dict[str, Any]:
        """The status of the execution at `trace`, its refused stops in a row (`stop_blocks`),
        its current request and every open one (each with the `tools` policy that applies to it,
        when a node declares one, and the `claim` on its action, `{agent, until}`, when one is
        held), and whether every open one waits on a person (`for_person`), read from the state
        alone."""
        store, uri = self._store(trace)
        state = self._load(store, uri)
        open_ = core.all_open(state) if state["status"] == core.Status.RUNNING else []
        for req in open_:
            held = core.holder(state, req) if req.get("path") is not None else None
            if held is not None:
                req["claim"] = held
        return {
            "uri": uri,
            "status": state["status"],
            "stop_blocks": state.get("stops", 0),
            "current": core.current(state),
            "open": open_,
            "for_person": core.waits_on_person(open_),
        }

    # -- internals -----------------------------------------------------------------------------

    def _tree(self, store: Any, uri: str, state: dict[str, Any]) -> dict[str, Any]:
        cached = self._trees.get(state["tree_hash"])
        if cached is None:
            cached = self._trees[state["tree_hash"]] = store.load_tree(uri)
        return cached

    def _answer(self, trace: str, answer: core.Answer, sent_by: int | None = None) -> Any:
        check_answer(answer)
        store, uri = self._store(trace)
        if isinstance(answer, core.Human):
            answer = self._person_gate(uri, answer, sent_by)
        with store.transaction(uri) as tx:
            before = tx.state
            outcome = self._apply(store, uri, tx, answer)
        if isinstance(outcome, TetherError):  # raised once the refusal's record is committed
            raise outcome
        self._committed(store, uri, before, outcome)
        return outcome.response

    def _committed(
        self, store: Store, uri: str, before: dict[str, Any], outcome: core.Outcome
    ) -> None:
        """What follows a commit that recorded `outcome` from the state `before`, and never
        fails it: the spans it completed, sent live (`tether.otel.send.emit`, when an OTLP
        endpoint is configured), and what it raised that a person is told of (`tether.notify`,
        when the runtime was given targets or the environment names one; never for a
        `memory://` execution, the calling process's own). What goes wrong there is logged."""
        tree = self._trees[outcome.state["tree_hash"]]
        if outcome.events and any(os.environ.get(name) for name in _OTLP_ENDPOINTS):
            from tether.otel.send import emit

            emit(store, uri, tree, outcome.entries[0]["seq"], before)
        if not outcome.entries or scheme_of(uri) == "memory":
            return
        if not (self._notify or os.environ.get("TETHER_NOTIFY")):
            return
        from tether import guardlog, notify
        from tether.inbox import raised

        log = self._log or guardlog.default_state_dir()
        try:
            given = notify.targets(self._notify)
            notify.send(
                notify.jobs(given, tree, raised(before, outcome.state, outcome.entries, uri)), log
            )
        except Exception as exc:  # the commit stands whatever happens here
            guardlog.record(
                log, {"code": "notify_failed", "message": f"{type(exc).__name__}: {exc}"}
            )

    def _person_gate(self, uri: str, answer: core.Human, sent_by: int | None) -> core.Human:
        """The one gate every person's answer passes on its way to the engine, whatever verb
        or private path it came by (`tether.person.gate`). An execution in `memory://` belongs
        to the calling process alone (tests, `tether test` walks) and needs none."""
        if scheme_of(uri) == "memory":
            return answer
        from tether import person

        return person.gate(answer, sent_by, uri, lambda: self.open_steps(uri)["open"])

    def _apply(
        self, store: Store, uri: str, tx: Transaction, answer: core.Answer
    ) -> core.Outcome | TetherError:
        """Run the engine on `answer` inside `tx` and commit what it did, after the timeouts of
        the human steps past their deadline (`_time_out`; a reset needs none); an answer it
        refuses commits nothing to the execution but those timeouts and is returned, recorded
        in the refusal log first."""
        tree = self._tree_in(tx)
        now = self._clock()
        lapsed = [] if isinstance(answer, core.Reset) else self._time_out(store, uri, tree, tx, now)
        state = lapsed[-1].state if lapsed else tx.state
        try:
            outcome = core.apply(
                tree, state, answer, now, self._condition, self._tools(store, uri, state, answer)
            )
        except TetherError as exc:
            if not isinstance(answer, _ANSWERS) and not lapsed:
                raise
            if isinstance(answer, core.Human):  # the trace before the timeouts commit, and them
                ended = [*store.read_trace(uri), *(e for o in lapsed for e in o.entries)]
                exc = _late(exc, answer, ended, state)
            self._commit(tx, lapsed)
            if isinstance(answer, _ANSWERS):
                tx.refuse(_refusal(tree, state, answer, exc, now))
            return exc
        outcome = core.Outcome(
            outcome.state,
            outcome.response,
            [e for o in lapsed for e in o.entries] + outcome.entries,
            [e for o in lapsed for e in o.events] + outcome.events,
        )
        self._commit(tx, [outcome], reset_trace=isinstance(answer, core.Reset))
        return outcome

    # -- deadlines -----------------------------------------------------------------------------

    def _load(self, store: Store, uri: str) -> dict[str, Any]:
        """The committed state of the execution at `uri`, as the reads (`next`, `resume`, `get`,
        `open_steps`) see it: a human step past its deadline is first timed out, in one commit
        under the store's lock, which records it once however many readers arrive together (a
        reader that finds it recorded commits nothing)."""
        state = store.load(uri)
        if not core.expired(state, self._clock()):
            return state
        with store.transaction(uri) as tx:
            before = tx.state
            lapsed = self._time_out(store, uri, self._tree_in(tx), tx, self._clock())
            self._commit(tx, lapsed)
            state = tx.state
        for outcome in lapsed:
            self._committed(store, uri, before, outcome)
            before = outcome.state
        return state

    def _time_out(
        self, store: Store, uri: str, tree: dict[str, Any], tx: Transaction, now: str
    ) -> list[core.Outcome]:
        """The one place a timeout is decided: a `Timeout` answer for each open human step of
        the execution in `tx` past its deadline at `now`, each on the state the one before left
        (its `timeout` entry is the first of its outcome's entries); the caller commits them.
        Ends: a step opened by a timeout waits until a deadline after `now`."""
        lapsed: list[core.Outcome] = []
        state = tx.state
        while due := core.expired(state, now):
            answer = core.Timeout(due[0]["step"])
            tools = self._tools(store, uri, state, answer)
            lapsed.append(core.apply(tree, state, answer, now, self._condition, tools))
            state = lapsed[-1].state
        return lapsed

    def _commit(
        self, tx: Transaction, outcomes: list[core.Outcome], *, reset_trace: bool = False
    ) -> None:
        """Commit the state the last of `outcomes` left, with all their trace entries (nothing
        when none recorded any)."""
        entries = [e for o in outcomes for e in o.entries]
        if entries:
            state = outcomes[-1].state
            state["updated_at"] = entries[-1]["ts"]
            tx.commit(state, entries, reset_trace=reset_trace)

    def _tree_in(self, tx: Transaction) -> dict[str, Any]:
        """The embedded tree of the execution in `tx`, cached by its hash."""
        cached = self._trees.get(tx.state["tree_hash"])
        tree = cached if cached is not None else tx.tree()
        self._trees[tx.state["tree_hash"]] = tree
        return tree

    def _tools(
        self, store: Store, uri: str, state: dict[str, Any], answer: core.Answer
    ) -> list[dict[str, Any]] | None:
        """What the checks an answer may reach see as TOOLS: the tool entries of their action's
        attempt (None for an answer that reaches no check)."""
        since = core.tools_since(state) if isinstance(answer, _MOVES) else None
        return None if since is None else core.tool_records(store.read_trace(uri), since)


def _record(
    state: dict[str, Any],
    now: str,
    kind: str,
    code: str,
    req: dict[str, Any] | None,
    message: str,
) -> dict[str, Any]:
    """A refusal record (`tether.store.tally` reads them): `seq` is the seq the next trace entry
    takes, so a reset leaves the records before it behind; `cursor` the step it was aimed at.
    The caller's strings (its step token, a message echoing them) are cut as `bounded` cuts."""
    aimed = req if req is not None and req.get("path") is not None else None
    return {
        "seq": state["seq"],
        "ts": now,
        "kind": kind,
        "code": code,
        "cursor": aimed and {"path": list(aimed["path"]), "step": aimed.get("index")},
        "name": aimed and aimed.get("name"),
        "step": None if req is None else bounded(req.get("step")),
        "message": bounded(message),
    }


def _refusal(
    tree: dict[str, Any],
    state: dict[str, Any],
    answer: core.Answer,
    exc: TetherError,
    now: str,
) -> dict[str, Any]:
    """The record of an answer the engine refused, aimed at the step its token names (even a
    stale one), else at the request the refusal names."""
    req = exc.details.get("current")
    token = getattr(answer, "step", None)
    if isinstance(token, str):
        req = _token_request(tree, token)
    req = req if isinstance(req, dict) else None
    record = _record(state, now, "answer", exc.code, req, exc.message)
    record["answer"] = type(answer).__name__.lower()
    agent = getattr(answer, "agent", None)
    if isinstance(agent, str) and agent:
        record["agent"] = bounded(agent)
    if isinstance(exc.details.get("check"), str):
        record["check"] = exc.details["check"]
    return record


def _late(
    exc: TetherError, answer: core.Human, entries: list[dict[str, Any]], state: dict[str, Any]
) -> TetherError:
    """The refusal of a person's answer to a human step that timed out (`timed_out`: when, and
    what it did), else `exc`: the step its token names has a `timeout` entry in `entries`, or,
    named by no token, no human step is open (or the execution is over) and the last human step
    to end timed out."""
    if exc.code not in ("stale_step", "wrong_phase", "execution_finished"):
        return exc
    ended = [e for e in entries if e["kind"] in (core.Kind.HUMAN, core.Kind.TIMEOUT)]
    if answer.step is not None:
        ended = [e for e in ended if e.get("step") == answer.step]
    last = ended[-1] if ended else None
    if last is None or last["kind"] != core.Kind.TIMEOUT:
        return exc
    return TetherError(
        "timed_out",
        f"human step {last['name']!r} timed out at {last['deadline']} (on_timeout: "
        f"{last['on_timeout']}) and is no longer open: a late answer is not taken",
        step=last["step"],
        deadline=last["deadline"],
        on_timeout=last["on_timeout"],
        current=core.current(state),
    )


def _token_request(tree: dict[str, Any], token: str) -> dict[str, Any] | None:
    """The step a token names (`KEY:STEP:...`), as a request's path, index and name; None for
    the gate's token or one that names no step of `tree`."""
    read = Token.parse(token)
    try:
        node = core.node_at(tree, read.path) if read is not None else None
    except (TetherError, IndexError, KeyError):
        return None
    if read is None or node is None:
        return None
    return {"path": read.path, "index": read.step, "name": node["name"], "step": token}


def _request(request: Any) -> Request:
    """A request the engine built (`core.current`), under its name for type checkers."""
    return request


def _requests(requests: Any) -> list[Request]:
    """Requests the engine built (`core.all_open`), under their name for type checkers."""
    return requests


def file_of(uri: str) -> str:
    """The file a `file:` URI (or a bare path) names, as the file store reads it."""
    return path_of(uri)


# The variables that configure an OTLP endpoint: with one set, commits are emitted live.
_OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
