"""Counting across executions: what every store's `tally` returns, and the count in Python.

Owns the raw figures `tether.stats` shapes (per tree hash, per action), how each is read from a
committed execution — its state, its trace and its refusal log (`Store.refusals`) — and the
plan of a tree that the count needs (`plan`: each action's path, own `retries` and last step);
one execution's count as a store keeps it (`record_of`, `Counted`), counted from its trace for a
store that keeps none (`count_each`), the counts of many added up per tree hash and day as
stores keep them (`Sums`), and the figures of many added up (`tally_of`), the one way
every store's `tally` counts.

The figures, for one execution (the entries since its last reset, less the first
`forked_from.at` entries a fork copied, which are counted in the execution they happened in;
refusals recorded since then):

- an attempt of an action ends as `tether.engine.trace.settles` reads its entries (the reading
  spans and the viewer share): in failure at a false evaluate, a failed instruct, a rejected or
  timed-out human step, or a check step that failed or could not be evaluated; in success at a
  passed answer or check of its last step, or a close. Its own `retries: N` are used by the failures
  before the (N+1)th in a row (a success, or the failure that used up its retries, starts the
  count again), so of a run of m failures in a row, m - m // (N+1) were retried; a fork's run
  goes on from the failures it copied (`tether.engine.trace.next_retry`); a timeout that fails
  the execution is retried by none. Its attempts are its ends plus the one open now; it was
  reached attempts - retries times.
- a step was requested at the latest answer, check, timeout, close, jump or reset recorded
  before its answer, or when the execution was created (a fork) if that is later (the commit that
  opened it; inside a `parallel`, the latest of any branch): the agent's answer time (evaluate and
  instruct, not a `running` answer) and a person's wait (human) run from there.
- per agent (the name a claim or an answer carries): its answers (evaluate, instruct), the
  attempts it carried to their end (an attempt ends at the entry `settles` reads; it is the
  agent's whose answer or claim on that action, or that item of a fanned-out loop, came last)
  and how many of them failed, its claims, renewals and takeovers, the times its lease lapsed
  and another agent took the action over, and its answers and claims refused, by reason (the
  refusal records name the agent);
- the entries of the items of a fanned-out `for_each` count for its action (the path without
  the items' indices, `tether.engine.ticking.tree_path`), each item's run of failures apart;
- `stop` entries refused and `tool` entries, by the action of the step they were recorded
  against; refused answers by reason (all, and by the action they were aimed at); tool calls
  denied by a policy; per check expression, the times it failed and the closes it refused.

Durations are whole milliseconds, parsed from the entries' UTC timestamps, kept as histograms:
exact below a second, above it rounded to three significant digits (`bucket`, within 0.05%), so
that counts add up (and subtract) exactly and stay small. Their median and 90th percentile
interpolate linearly between the closest ranks (as PostgreSQL's `percentile_cont`) of the
bucketed values: exact to the bucket, whatever executions `--tree` and `--since` choose.
It does not format the figures or choose the executions (the stores do; `tether.stats` shapes).
"""

from __future__ import annotations

import builtins
import calendar
import functools
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from tether.engine.names import Kind, Reply, Status
from tether.engine.ticking import tree_path
from tether.engine.trace import MOVING, next_retry, settles
from tether.errors import TetherError

STATUSES = tuple(Status)
# Of `record_of`'s count: 2 keeps durations as histograms (`bucket`), 3 adds the agents'. A
# folder's kept files of another format are counted again; PostgreSQL drops its kept counts when
# its schema version moves, so a new format moves `tether.store.postgres.SCHEMA_VERSION` too.
RECORD_FORMAT = 3
# Each agent's figures, in the order `tether stats` shows them (its refusals by reason follow).
AGENT_FIGURES = ("answers", "attempts", "failures", "claims", "renewals", "takeovers", "lapsed")
# The figure of each outcome of a claim entry.
_CLAIMS: dict[str, str] = {
    Reply.CLAIMED: "claims",
    Reply.RENEWED: "renewals",
    Reply.TAKEN_OVER: "takeovers",
}


def key_of(path: Iterable[int]) -> str:
    """An action's key: its path as compact JSON (`[0,2]`), as PostgreSQL reads it from a
    stored cursor."""
    return "[" + ",".join(str(int(i)) for i in path) + "]"


def plan(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tree's actions by key, depth first: `{path, name, retries, last, checks}` (last: the
    index of its last step; checks: its check steps' expressions by index)."""
    out: dict[str, dict[str, Any]] = {}
    pending: list[tuple[dict[str, Any], list[int]]] = [(tree["root"], [])]
    while pending:
        node, path = pending.pop()
        if node["type"] == "action":
            steps = node["steps"]
            out[key_of(path)] = {
                "path": path,
                "name": node["name"],
                "retries": int(node.get("retries", 0)),
                "last": len(steps) - 1,
                "checks": {i: s["check"] for i, s in enumerate(steps) if "check" in s},
            }
        children = node.get("children", [])
        pending.extend((child, [*path, i]) for i, child in reversed(list(enumerate(children))))
    return out


def millis(stamp: str) -> int:
    """A stored UTC timestamp (`2026-01-01T09:30:00.123Z`, as `tether.verbs.utc_now` writes
    it) as milliseconds since the epoch."""
    if len(stamp) == 24 and stamp[19] == "." and stamp[23] == "Z":
        return (
            _day(stamp[:10])
            + int(stamp[11:13]) * 3_600_000
            + int(stamp[14:16]) * 60_000
            + int(stamp[17:19]) * 1000
            + int(stamp[20:23])
        )
    whole, _, rest = stamp.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + (int(rest[:3].ljust(3, "0")) if rest else 0)


def stamp(seconds: float) -> str:
    """`seconds` since the epoch written as a stored UTC timestamp (`millis`'s inverse, to the
    millisecond)."""
    whole, rest = divmod(round(seconds * 1000), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{rest:03d}Z"


@functools.lru_cache(maxsize=4096)
def _day(date: str) -> int:
    return calendar.timegm(time.strptime(date, "%Y-%m-%d")) * 1000


def bucket(ms: int) -> int:
    """The histogram bucket of a duration of `ms` milliseconds: itself below 1,000, else rounded
    to three significant digits (within 0.05%), so that kept counts merge and stay small."""
    size = abs(ms)
    if size < 1000:
        return ms
    scale = 10 ** (len(str(size)) - 3)
    return (size + scale // 2) // scale * scale * (1 if ms > 0 else -1)


def spread(buckets: dict[str, int]) -> dict[str, Any]:
    """`{count, median, p90}` of the durations in `buckets` (bucket in milliseconds, as text:
    how many), each percentile as PostgreSQL's `percentile_cont` over the bucketed values."""
    ordered = sorted((int(value), n) for value, n in buckets.items() if n)
    count = sum(n for _, n in ordered)
    return {
        "count": count,
        "median": percentile(ordered, count, 0.5),
        "p90": percentile(ordered, count, 0.9),
    }


def percentile(
    ordered: builtins.list[tuple[int, int]], count: int, fraction: float
) -> float | None:
    """The `fraction` percentile of the `count` values that sorted `ordered` (value, how many)
    holds, interpolating linearly between the closest ranks."""
    if not count:
        return None
    position = fraction * (count - 1)
    low, high = math.floor(position), math.ceil(position)
    first = float(_ranked(ordered, low))
    if low == high:
        return first
    return first + (float(_ranked(ordered, high)) - first) * (position - low)


def _ranked(ordered: builtins.list[tuple[int, int]], rank: int) -> int:
    for value, n in ordered:
        if rank < n:
            return value
        rank -= n
    raise IndexError(rank)


def empty_action() -> dict[str, Any]:
    return {
        "reached": 0,
        "attempts": 0,
        "failures": 0,
        "retries": 0,
        "refused": {},
        "answer_time": spread({}),
        "stops_refused": 0,
        "tools_denied": 0,
        "tools_recorded": 0,
        "human_wait": spread({}),
    }


_PLANS: dict[str, dict[str, dict[str, Any]]] = {}  # each tree hash's plan, made once


class _Tree:
    """The running count of one tree hash. Durations are histograms (`bucket`, as text: how
    many), so that counts add up and subtract (`merge`) exactly."""

    def __init__(self, tree: dict[str, Any], tree_hash: str) -> None:
        self.tree = tree
        self.hash = tree_hash
        self.statuses: Counter[str] = Counter()
        self.finish: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.counts: dict[str, Counter[str]] = {}
        self.action_refused: dict[str, Counter[str]] = {}
        self.answers: dict[str, Counter[str]] = {}
        self.waits: dict[str, Counter[str]] = {}
        self.checks: Counter[tuple[str, str, str]] = Counter()  # (key, expression, failed|refused)
        self.agents: dict[str, Counter[str]] = {}  # each agent's figures (`AGENT_FIGURES`)
        self.agent_refused: dict[str, Counter[str]] = {}  # each agent's refusals by reason
        # While one execution is counted: the agent that last answered or claimed each action
        # (by its cursor path: each item of a fanned-out loop apart), whose attempt it is.
        self.holding: dict[tuple[int, ...], str] = {}

    def key(self, path: list[int] | None) -> str | None:
        """The key of the action at `path` (an item's path counts for its loop's action);
        None when the path names no action of the tree."""
        at = tuple(path or ())
        found = self.keys.get(at)
        if found is not None or not at:
            return found
        try:
            return self.keys.get(tuple(tree_path(self.tree, list(at))))
        except TetherError:
            return None

    def agent(self, name: str, figure: str) -> None:
        self.agents.setdefault(name, Counter())[figure] += 1

    def agent_figures(self, name: str) -> dict[str, Any]:
        """The figures of the agent `name`: `AGENT_FIGURES`, and `refused` by reason."""
        counts = self.agents.get(name, Counter())
        return {
            **{figure: counts[figure] for figure in AGENT_FIGURES},
            "refused": dict(self.agent_refused.get(name, {})),
        }

    @functools.cached_property
    def plan(self) -> dict[str, dict[str, Any]]:
        """The tree's plan (`plan`), made once per tree hash: counting a trace reads it, adding
        up counts does not (so a sum can be taken from with the tree unknown)."""
        return _PLANS.get(self.hash) or _PLANS.setdefault(self.hash, plan(self.tree))

    @functools.cached_property
    def keys(self) -> dict[tuple[int, ...], str]:
        return {tuple(action["path"]): key for key, action in self.plan.items()}

    def count(self, key: str, figure: str, n: int = 1) -> None:
        self.counts.setdefault(key, Counter())[figure] += n

    def record(self) -> dict[str, Any]:
        """This count as JSON, which `merge` adds to another count of the same tree hash: what
        a store keeps of one execution (or of many) so that it need not count their traces
        again."""
        return {
            "format": RECORD_FORMAT,
            "statuses": _kept(self.statuses),
            "finish": _kept(self.finish),
            "refused": _kept(self.refused),
            "counts": _kept_each(self.counts),
            "action_refused": _kept_each(self.action_refused),
            "answers": _kept_each(self.answers),
            "waits": _kept_each(self.waits),
            "checks": [[*check, n] for check, n in self.checks.items() if n],
            "agents": _kept_each(self.agents),
            "agent_refused": _kept_each(self.agent_refused),
        }

    def merge(self, record: dict[str, Any], sign: int = 1) -> None:
        """Add a count `record` made (`sign` -1: take it away again)."""
        _add(self.statuses, record["statuses"], sign)
        _add(self.finish, record["finish"], sign)
        _add(self.refused, record["refused"], sign)
        for mine, theirs in (
            (self.counts, record["counts"]),
            (self.action_refused, record["action_refused"]),
            (self.answers, record["answers"]),
            (self.waits, record["waits"]),
            (self.agents, record.get("agents", {})),  # by agent (a count of format 2 has none)
            (self.agent_refused, record.get("agent_refused", {})),
        ):
            for key, counts in theirs.items():
                _add(mine.setdefault(key, Counter()), counts, sign)
        for key, expression, what, n in record["checks"]:
            self.checks[(key, expression, what)] += sign * n

    def action(self, key: str) -> dict[str, Any] | None:
        """The figures of the action `key`, None when nothing was counted of it."""
        return _action(
            *(
                part.get(key, {})
                for part in (self.counts, self.action_refused, self.answers, self.waits)
            )
        )

    def result(self) -> dict[str, Any]:
        actions = {}
        for key in {*self.counts, *self.action_refused, *self.answers, *self.waits}:
            action = self.action(key)
            if action is not None:
                actions[key] = action
        checks: dict[tuple[str, str], dict[str, Any]] = {}
        for (key, expression, what), n in (+self.checks).items():
            check = checks.setdefault(
                (key, expression), {"key": key, "expression": expression, "failed": 0, "refused": 0}
            )
            check[what] += n
        return {
            "hash": self.hash,
            "name": self.tree["name"],
            "version": version_of(self.tree),
            "tree": self.tree,
            "executions": {status: self.statuses[status] for status in STATUSES},
            "time_to_finish": spread(self.finish),
            "refused": dict(self.refused),
            "actions": actions,
            "checks": sorted(checks.values(), key=lambda c: (c["key"], c["expression"])),
            "agents": {
                name: self.agent_figures(name) for name in {*self.agents, *self.agent_refused}
            },
        }


def _action(
    counts: dict[str, int],
    refused: dict[str, int],
    answers: dict[str, int],
    waits: dict[str, int],
) -> dict[str, Any] | None:
    """An action's figures from its own parts of a count (None: nothing was counted of it)."""
    if not any(n for part in (counts, refused, answers, waits) for n in part.values()):
        return None
    attempts = counts.get("ends", 0) + counts.get("open", 0)
    return {
        **empty_action(),
        "reached": attempts - counts.get("retries", 0),
        "attempts": attempts,
        "failures": counts.get("failures", 0),
        "retries": counts.get("retries", 0),
        "refused": {code: n for code, n in refused.items() if n},
        "answer_time": spread(answers),
        "stops_refused": counts.get("stops_refused", 0),
        "tools_denied": counts.get("tools_denied", 0),
        "tools_recorded": counts.get("tools_recorded", 0),
        "human_wait": spread(waits),
    }


def action_of(record: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The figures of the action `key` in the one execution whose count is `record`."""
    parts = ("counts", "action_refused", "answers", "waits")
    return _action(*(record.get(part, {}).get(key, {}) for part in parts))


MARKS = ("failures", "retries", "stops_refused", "answer_time")


def mark(measure: str, action: dict[str, Any]) -> float:
    """The action's figure of `measure` (one of `MARKS`): the share of its attempts that failed
    (0 to 1), a count, or its median answer time (in the unit its spread is in)."""
    if measure == "failures":
        return action["failures"] / action["attempts"] if action["attempts"] else 0.0
    if measure == "answer_time":
        return float(action["answer_time"]["median"] or 0.0)
    return float(action[measure])


def marks_of(record: dict[str, Any]) -> dict[str, list[float]]:
    """Each action's failures, attempts, retries, stops refused and median answer time (0: none)
    in the one execution whose count is `record`, where any figure of `MARKS` is not 0: what a
    store keeps to find the executions behind a figure (`Behind.of`) without reading counts."""
    keys = {
        key for part in ("counts", "action_refused", "answers", "waits") for key in record[part]
    }
    out = {}
    for key in keys:
        action = action_of(record, key)
        if action is not None and any(mark(measure, action) for measure in MARKS):
            median = action["answer_time"]["median"] or 0
            out[key] = [*(action[k] for k in _MARKED), int(median) if median % 1 == 0 else median]
    return out


_MARKED = ("failures", "attempts", "retries", "stops_refused")


class Behind(NamedTuple):
    """One execution behind a figure (`Store.behind`): its figure, name, status and last
    change, and the action's figures there that say it (failures, attempts, retries, stops
    refused, the answer time's median)."""

    value: float
    name: str
    status: str | None
    updated_at: str | None
    action: dict[str, Any]

    @classmethod
    def of(cls, marks: list[float], measure: str, name: str, listed: dict[str, Any]) -> Behind:
        """The execution `name` behind `measure`, from its action's `marks_of` and `listed`."""
        action: dict[str, Any] = dict(zip(_MARKED, marks, strict=False))
        action["answer_time"] = {"median": marks[len(_MARKED)] or None}
        value = mark(measure, action)
        return cls(value, name, listed.get("status"), listed.get("updated_at"), action)


def behind_of(
    marked: Iterable[tuple[str, dict[str, Any], str, dict[str, list[float]]]],
    tree: str,
    tree_hash: str,
    key: str,
    measure: str,
    page: slice,
) -> tuple[int, builtins.list[Behind]]:
    """`Store.behind` over the executions `marked` holds: (name, what a listing reads of it,
    its tree hash, its `marks_of`), taken one at a time; only the rows up to the page's end are
    held (`page` is a slice without a step)."""
    import heapq

    found = (
        row
        for name, listed, counted_hash, marks in marked
        if counted_hash == tree_hash and listed.get("tree_name") == tree and key in marks
        if (row := Behind.of(marks[key], measure, name, listed)).value
    )
    total = 0

    def counted() -> Iterator[Behind]:
        nonlocal total
        for row in found:
            total += 1
            yield row

    def order(row: Behind) -> tuple[float, str]:
        return -row.value, row.name

    if page.stop is None:
        rows = sorted(counted(), key=order)
    else:
        rows = heapq.nsmallest(page.stop, counted(), key=order)
    return total, rows[page.start :]


def marked(
    counts: Iterable[Counted],
) -> Iterator[tuple[str, dict[str, Any], str, dict[str, list[float]]]]:
    """Each readable execution of `counts` as `behind_of` takes it."""
    for counted in counts:
        if counted.record is not None:
            yield counted.name, counted.listed, counted.tree_hash, marks_of(counted.record)


def _kept(counts: Counter[str]) -> dict[str, int]:
    return {name: n for name, n in counts.items() if n}


def _kept_each(counts: dict[str, Counter[str]]) -> dict[str, dict[str, int]]:
    return {key: kept for key, part in counts.items() if (kept := _kept(part))}


def _add(counts: Counter[str], other: dict[str, int], sign: int) -> None:
    for name, n in other.items():
        counts[name] += sign * n


def version_of(tree: dict[str, Any]) -> str | None:
    """The tree's `version` as text; None when it declares none."""
    version = tree.get("version")
    return None if version in (None, "") else str(version)


class Tally:
    """The count over executions, added one at a time (`add`), read with `result`."""

    def __init__(self) -> None:
        self._trees: dict[str, _Tree] = {}
        self.unreadable = 0

    def add(
        self,
        state: dict[str, Any],
        tree: dict[str, Any],
        entries: Iterable[dict[str, Any]],
        refusals: Iterable[dict[str, Any]],
    ) -> None:
        """Count one committed execution: its state, its embedded tree, its trace entries and
        its refusal records."""
        counted = self._tree(str(state["tree_hash"]), tree)
        status = state["status"]
        counted.statuses[status] += 1
        if status != Status.RUNNING:
            took = millis(state["updated_at"]) - millis(state["created_at"])
            counted.finish[str(bucket(took))] += 1
        copied = int((state.get("forked_from") or {}).get("at", 0))
        _count_trace(counted, entries, copied, str(state["created_at"]))
        if status == Status.RUNNING:
            opened = {counted.key(r["path"]) for r in state["open"] if r.get("path") is not None}
            for key in opened - {None}:
                counted.count(str(key), "open")
        since = int(state["seq"]) - int(state["since_reset"])
        for record in refusals:
            if int(record.get("seq", 0)) >= since:
                _count_refusal(counted, record)

    def _tree(self, tree_hash: str, tree: dict[str, Any]) -> _Tree:
        counted = self._trees.get(tree_hash)
        if counted is None:
            counted = self._trees[tree_hash] = _Tree(tree, tree_hash)
        return counted

    def merge(self, tree_hash: str, tree: dict[str, Any], record: dict[str, Any]) -> None:
        """Add one execution's count as `record_of` made it."""
        self._tree(tree_hash, tree).merge(record)

    def result(self) -> dict[str, Any]:
        trees = sorted(self._trees.values(), key=lambda t: t.hash)
        return {"trees": [t.result() for t in trees], "unreadable": self.unreadable}


def _count_trace(
    counted: _Tree, entries: Iterable[dict[str, Any]], copied: int, created: str
) -> None:
    """Count the entries an execution recorded itself: a fork's first `copied` entries happened
    in the execution it was forked from and are counted there, but its runs of failures go on
    from them (retries are used across the fork point)."""
    # When the open step was requested: the latest moving entry's time, kept as its stored text
    # (the stored format orders as time does) and read as milliseconds only for an answer; a
    # fork opened its first step when it was created.
    requested = created
    # The retry number of each action's next attempt (each item of a fanned-out loop apart).
    runs: Counter[tuple[int, ...]] = Counter()
    counted.holding = {}
    for entry in entries:
        kind = entry["kind"]
        cursor = entry["cursor"]
        ts = entry["ts"]
        if cursor is not None:
            key = counted.key(cursor["path"])
            if key is not None:
                action = counted.plan[key]
                at = tuple(cursor["path"] or ())
                ended = settles(entry, action["last"])
                if ended is not None:  # a failure that fails the execution is retried by none
                    retries = 0 if entry.get("on_timeout") == "fail" else action["retries"]
                    runs[at] = next_retry(runs[at], ended, retries)
                retried = ended is not None and runs[at] > 0
                if entry["seq"] >= copied:
                    _count_entry(counted, key, cursor["step"], entry, ts, requested, ended)
                    if retried:
                        counted.count(key, "retries")
        if kind in MOVING and entry.get("submitted") != Reply.RUNNING:
            requested = ts if ts > requested else requested


def _count_entry(
    counted: _Tree,
    key: str,
    step: int | None,
    entry: dict[str, Any],
    ts: str,
    requested: str,
    ended: bool | None,
) -> None:
    kind = entry["kind"]
    _count_agent(counted, entry, ended)
    if kind == Kind.TOOL:
        counted.count(key, "tools_recorded")
        return
    if kind == Kind.STOP:
        if entry.get("outcome") == Reply.REFUSED:
            counted.count(key, "stops_refused")
        return
    if (
        kind in (Kind.EVALUATE, Kind.INSTRUCT, Kind.HUMAN)
        and entry.get("submitted") != Reply.RUNNING
    ):
        durations = (counted.waits if kind == Kind.HUMAN else counted.answers).setdefault(
            key, Counter()
        )
        durations[str(bucket(millis(ts) - millis(requested)))] += 1
    if kind == Kind.CHECK and step is not None and ended is False:
        counted.checks[(key, str(entry.get("submitted")), "failed")] += 1
    if ended is not None:
        counted.count(key, "ends")
    if ended is False:
        counted.count(key, "failures")


def _count_agent(counted: _Tree, entry: dict[str, Any], ended: bool | None) -> None:
    """An entry's figures for the agent it names (an answer, a claim), and the end of an
    attempt for the agent whose attempt it was."""
    at = tuple(entry["cursor"]["path"] or ())
    agent = entry.get("agent")
    if agent is not None:
        counted.holding[at] = str(agent)
        if entry["kind"] == Kind.CLAIM:
            counted.agent(str(agent), _CLAIMS.get(str(entry.get("outcome")), "claims"))
            lapsed = entry.get("lapsed")
            if isinstance(lapsed, dict) and lapsed.get("agent") is not None:
                counted.agent(str(lapsed["agent"]), "lapsed")
        elif entry["kind"] in (Kind.EVALUATE, Kind.INSTRUCT):
            counted.agent(str(agent), "answers")
    if ended is not None and at in counted.holding:
        holder = counted.holding.pop(at)
        counted.agent(holder, "attempts")
        if ended is False:
            counted.agent(holder, "failures")


def _count_refusal(counted: _Tree, record: dict[str, Any]) -> None:
    cursor = record.get("cursor")
    key = counted.key(cursor["path"]) if cursor and cursor.get("path") is not None else None
    if record.get("agent") is not None and record.get("kind") != Kind.TOOL:
        codes = counted.agent_refused.setdefault(str(record["agent"]), Counter())
        codes[str(record.get("code"))] += 1
    if record.get("kind") == Kind.TOOL:
        if key is not None:
            counted.count(key, "tools_denied")
        return
    code = str(record.get("code"))
    counted.refused[code] += 1
    if key is not None:
        counted.action_refused.setdefault(key, Counter())[code] += 1
        if code == "check_failed" and record.get("check") is not None:
            counted.checks[(key, str(record["check"]), "refused")] += 1


class Counted:
    """One execution's count, as a store keeps it or counts it: its name in the place, what a
    listing reads of its state (`tether.store.shared.listed`), its tree and the tree's hash, and
    `record` (`record_of`); `record` is None for an execution that cannot be read."""

    __slots__ = ("listed", "name", "record", "tree", "tree_hash")

    def __init__(
        self,
        name: str,
        listed: dict[str, Any],
        tree_hash: str,
        tree: dict[str, Any],
        record: dict[str, Any] | None,
    ) -> None:
        self.name, self.listed, self.tree_hash = name, listed, tree_hash
        self.tree, self.record = tree, record

    def chosen(self, tree: str | None, since: str | None) -> bool:
        """Whether the execution is of the tree named `tree` and created at or after `since`
        (one whose state cannot be read may be: it is)."""
        if not self.listed:
            return True
        return (tree is None or self.listed.get("tree_name") == tree) and (
            since is None or str(self.listed.get("created_at", "")) >= since
        )


def count_each(store: Any, where: str) -> Iterator[Counted]:
    """Each execution at `where` counted from its trace (for a store that keeps no counts)."""
    from tether.store.shared import listed

    trees: dict[str, dict[str, Any]] = {}
    for summary in store.list(where):
        state: dict[str, Any] = {}
        try:
            state, entries = store.read_execution(summary.uri)
            tree_hash = str(state["tree_hash"])
            if tree_hash not in trees:
                trees[tree_hash] = store.load_tree(summary.uri)
            tree = trees[tree_hash]
            record = record_of(state, tree, entries, store.refusals(summary.uri))
        except (TetherError, KeyError, TypeError, ValueError):  # not a state the verbs wrote
            yield Counted(summary.name, listed(state) if state else {}, "", {}, None)
            continue
        yield Counted(summary.name, listed(state), tree_hash, tree, record)


def tally_of(
    counts: Iterable[Counted],
    *,
    tree: str | None = None,
    since: str | None = None,
    sums: Iterable[tuple[str, dict[str, Any], str, dict[str, Any]]] = (),
) -> dict[str, Any]:
    """The figures (`Tally.result`) of the executions `counts` holds and of the kept `sums`
    (tree hash, tree, day created, record: `Sums.cells`), only those of the tree named `tree`
    and created at or after `since` when given (of the sums, the days `since` holds whole: the
    store gives the executions of its first day as `counts`); one that cannot be read counts in
    `unreadable`."""
    count = Tally()
    first = whole_days(since)
    for tree_hash, kept_tree, day, record in sums:
        if (tree is None or kept_tree.get("name") == tree) and (first is None or day >= first):
            count.merge(tree_hash, kept_tree, record)
    for counted in counts:
        if not counted.chosen(tree, since):
            continue
        if counted.record is None:
            count.unreadable += 1
        else:
            count.merge(counted.tree_hash, counted.tree, counted.record)
    return count.result()


def whole_days(since: str | None) -> str | None:
    """The first day (`YYYY-MM-DD`) of the executions created at or after `since` that holds
    nothing before it; None for all of them."""
    if since is None or since[10:] in ("", "T00:00:00.000Z"):
        return None if since is None else since[:10]
    return time.strftime("%Y-%m-%d", time.gmtime(_day(since[:10]) // 1000 + 86_400))


def settled(state: dict[str, Any]) -> bool:
    """Whether an execution has ended, so that only a reset, a refusal recorded later or its
    removal changes its count again."""
    return state.get("status") in (Status.COMPLETE, Status.FAILED)


class Sums:
    """Counts of executions added up per tree hash and day created, kept by a store so that
    `tally` reads a cell per tree and day rather than a count per execution. The store keeps
    which executions it added (and their counts, to take one away when it changes)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str], _Tree] = {}

    def add(
        self, tree_hash: str, tree: dict[str, Any], day: str, record: dict[str, Any], sign: int = 1
    ) -> None:
        """Add one execution's count to the cell of its tree hash and day (`sign` -1: take it
        away)."""
        cell = self.cells.get((tree_hash, day))
        if cell is None:
            cell = self.cells[(tree_hash, day)] = _Tree(tree, tree_hash)
        cell.merge(record, sign)

    def each(self) -> Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]:
        """Each cell as `tally_of` takes it."""
        for (tree_hash, day), cell in sorted(self.cells.items()):
            yield tree_hash, cell.tree, day, cell.record()


def record_of(
    state: dict[str, Any],
    tree: dict[str, Any],
    entries: Iterable[dict[str, Any]],
    refusals: Iterable[dict[str, Any]],
) -> dict[str, Any]:
    """One execution's count (`Tally.add`) as JSON a store keeps and `Tally.merge` adds."""
    count = Tally()
    count.add(state, tree, entries, refusals)
    (counted,) = count._trees.values()
    return counted.record()
