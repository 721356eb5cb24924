"""Running tree test cases: each walk on a fresh execution, through the verbs, compared with what
it expected.

Owns: finding a case's tree (abtree cases: staged from `files` into a fresh folder that is
removed afterwards and never written outside, else `trees/NAME/TREE.yaml`); driving one
`memory://` execution per case through `tether.verbs.Runtime`, as an agent would: the protocol
accepted, then for each step the open request checked by type and name, the step's writes made
and its answer given (a human step's decision as `tether approve`/`reject` gives it), both with
the request's step token; a team's steps, each by its agent (the request picked by name and
item among all those open), its claims, and its waits on the case's clock (`CaseClock`);
comparing the end (what `next` answers, `var` values, the retries each node used, counted by
replaying the trace with `tether.engine.replay`); and the first difference, with the step it
came at. A tree that cannot load counts as an execution that failed before its first step, with
the load error beside it.

Does not own the case formats (`cases.py`) or how results are printed (`cli.py`).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.engine import public as core
from tether.engine.deadlines import deadline_after
from tether.engine.names import Kind, RequestType
from tether.engine.replay import apply_entry
from tether.errors import TetherError
from tether.files import is_inside
from tether.treetest.cases import Case, Step
from tether.verbs import Runtime, utc_now

# Codes with which `start` says the tree itself cannot be loaded.
LOAD_ERRORS = ("invalid_tree", "invalid_expression", "forbidden")


@dataclass(frozen=True)
class Result:
    """How one case went: passed, or where it first differed (`at`: a step with its place in
    the file, `start` or `end`) with what was expected and what came; `load_error` when the
    tree did not load (shown whether or not the case expected that)."""

    case: Case
    passed: bool
    at: str | None = None
    expected: str | None = None
    got: str | None = None
    load_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.case.file, "name": self.case.name}
        out["passed"] = self.passed
        for key in ("at", "expected", "got", "load_error"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


class _Differs(Exception):
    """The first difference between a case and its run."""

    def __init__(self, at: str, expected: str, got: str) -> None:
        super().__init__(at)
        self.at, self.expected, self.got = at, expected, got


class CaseClock:
    """The clock of the runtime that runs the cases: the time now, moved on by each case's
    `wait` steps (`wait`), and back to now for each case (`reset`)."""

    def __init__(self) -> None:
        self.seconds = 0

    def __call__(self) -> str:
        now = utc_now()
        return deadline_after(now, self.seconds) if self.seconds else now

    def wait(self, seconds: int) -> None:
        self.seconds += seconds

    def reset(self) -> None:
        self.seconds = 0


def run_case(rt: Runtime, case: Case, clock: CaseClock | None = None) -> Result:
    """Run one case on a fresh execution of `rt`, whose clock is `clock` (needed by a case
    that waits)."""
    if clock is not None:
        clock.reset()
    with tempfile.TemporaryDirectory(prefix="tether-test-") as folder:
        staged = Path(folder).resolve()
        try:
            tree = _tree_file(case, staged)
            uri = f"memory://tether-test-{uuid.uuid4().hex}"
            try:
                rt.start(str(tree), uri, var=case.var, const=case.const)
            except TetherError as exc:
                if exc.code == "not_found":
                    raise _Differs(
                        "start", f"the tree {case.tree} to start", f"no such tree file {tree}"
                    ) from None
                if exc.code not in LOAD_ERRORS:
                    raise _Differs("start", f"the tree {case.tree} to start", _error(exc)) from None
                error = exc.message.replace(str(staged) + os.sep, "")
                return _unloaded(case, error)
            _walk(rt, case, uri, clock)
        except _Differs as differs:
            return Result(case, False, differs.at, differs.expected, differs.got)
        except TetherError as exc:  # the runtime refused something the walk did not answer
            return Result(case, False, "run", "the walk to go on", _error(exc))
    return Result(case, True)


def _error(exc: TetherError) -> str:
    return f"{exc.code}: {exc.message}"


def _unloaded(case: Case, error: str) -> Result:
    """The result of a case whose tree did not load: an execution that failed before its first
    step, which passes only when that is exactly what the case expected."""
    ended = "failure before the first step (the tree did not load)"
    if case.steps:
        step = case.steps[0]
        return Result(case, False, _place(1, step), _request(step), ended, error)
    if case.status != core.Reply.FAILURE:
        return Result(case, False, "end", f"status {case.status}", ended, error)
    if case.expect_var or case.retries:
        what = "var values" if case.expect_var else "retry counts"
        return Result(case, False, "end", what, "nothing: the tree did not load", error)
    return Result(case, True, load_error=error)


def _tree_file(case: Case, staged: Path) -> Path:
    """The tree file of `case`; abtree's `files` are written under `staged` first."""
    if not case.by_path:
        return case.base / case.tree
    if case.files:
        _stage(case.files, staged)
        candidate = staged / case.tree / "TREE.yaml"
        if candidate.is_file():
            return candidate
    for trees in (case.base / "trees", case.base.parent / "trees"):
        candidate = trees / case.tree / "TREE.yaml"
        if candidate.is_file():
            return candidate
    if (case.base / case.tree).is_file():
        return case.base / case.tree
    raise _Differs(
        "start",
        f"tree {case.tree!r}",
        f"not in files, not at trees/{case.tree}/TREE.yaml beside the case or its folder, "
        "not a file",
    )


def _stage(files: dict[str, str], folder: Path) -> None:
    """Write each file under `folder`; a path that would leave it is refused (the case format
    already refuses `..` and absolute paths; this holds whatever the path)."""
    for relative, text in files.items():
        target = (folder / relative).resolve()
        if not is_inside(target, folder) or target == folder.resolve():
            raise _Differs("start", "files inside the case's folder", f"{relative!r} leaves it")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise _Differs("start", f"file {relative!r} written", str(exc.strerror)) from None


def _place(number: int, step: Step) -> str:
    return f"step {number} ({step.where})"


def _request(step: Step) -> str:
    item = f" for item {_json(step.item[0])}" if step.item else ""
    return f"{'a request to claim' if step.kind == Kind.CLAIM else step.kind} {step.name!r}{item}"


def _shown(response: Mapping[str, Any]) -> str:
    if "type" in response:
        return f"{response['type']} {response.get('name')!r}"
    return json.dumps(response, ensure_ascii=False)


def _walk(rt: Runtime, case: Case, uri: str, clock: CaseClock | None) -> None:
    gate = rt.next(uri)
    rt.submit(uri, core.Result.SUCCESS, step=gate["step"])
    for number, step in enumerate(case.steps, 1):
        at = _place(number, step)
        if step.kind == "wait":
            if clock is None:
                raise _Differs(at, f"{step.lease} s to pass", "a runner without a clock")
            clock.wait(step.lease)
            continue
        token = _expected(rt, uri, step, at)
        if step.kind == Kind.CLAIM:
            _claim(rt, uri, step, token, at)
        else:
            _answer(rt, uri, step, token, at)
    _compare_end(rt, case, uri)


def _expected(rt: Runtime, uri: str, step: Step, at: str) -> str:
    """The step token of the request `step` expects: the first open one, of its type and
    name; for a team's step (`picked`) or a claim, the open one of its name (and item)."""
    if not step.picked and step.kind != Kind.CLAIM:
        request: Mapping[str, Any] = rt.next(uri)
        if (request.get("type"), request.get("name")) != (step.kind, step.name):
            raise _Differs(at, _request(step), _shown(request))
        return str(request["step"])
    opened = rt.next(uri, all=True)
    for request in opened:
        kind = step.kind if step.kind != Kind.CLAIM else request.get("type")
        item = request.get("item")
        if (request.get("type"), request.get("name")) == (kind, step.name) and (
            not step.item or (item is not None and _json(item["value"]) == _json(step.item[0]))
        ):
            return str(request["step"])
    shown = "; ".join(_shown(r) for r in opened)
    raise _Differs(at, f"{_request(step)} open", shown or "nothing open")


def _claim(rt: Runtime, uri: str, step: Step, token: str, at: str) -> None:
    what = f"a claim by {step.agent!r}"
    try:
        done = rt.claim(uri, str(step.agent), step=token, lease=step.lease)
    except TetherError as exc:
        if exc.code == step.refused:
            return
        raise _Differs(at, f"{what} accepted", f"refused: {_error(exc)}") from None
    if step.refused is not None:
        raise _Differs(at, f"{what} refused with {step.refused}", str(done["status"]))
    if step.answer and done["status"] != step.answer:
        raise _Differs(at, f"{what}: {step.answer}", str(done["status"]))


def _answer(rt: Runtime, uri: str, step: Step, token: str, at: str) -> None:
    for path, value in step.write.items():
        try:
            rt.var_write(uri, path, value, step=token)
        except TetherError as exc:
            raise _Differs(at, f"var {path} written", f"refused: {_error(exc)}") from None
    verb = {"evaluate": "eval", "instruct": "submit", "human": "the person's"}[step.kind]
    answer = json.dumps(step.answer) if isinstance(step.answer, bool) else step.answer
    try:
        if step.kind == RequestType.EVALUATE:
            rt.eval(uri, bool(step.answer), note=step.note, step=token, agent=step.agent)
        elif (
            step.kind == RequestType.HUMAN
        ):  # a person's decision, as `tether approve/reject` gives it
            decide = rt.approve if step.answer == "approve" else rt.reject
            decide(uri, note=step.note, step=token)
        else:
            rt.submit(uri, str(step.answer), note=step.note, step=token, agent=step.agent)
    except TetherError as exc:
        if exc.code == step.refused:
            return
        raise _Differs(at, f"{verb} {answer} accepted", f"refused: {_error(exc)}") from None
    if step.refused is not None:
        raise _Differs(at, f"{verb} {answer} refused with {step.refused}", "accepted")


def _compare_end(rt: Runtime, case: Case, uri: str) -> None:
    ended = rt.next(uri)
    if ended != {"status": case.status}:
        got = f"{_shown(ended)} still open" if "type" in ended else _shown(ended)
        raise _Differs("end", json.dumps({"status": case.status}), got)
    for path, expected in case.expect_var.items():
        try:
            value = rt.var_read(uri, path)
        except TetherError:
            raise _Differs("end", f"var {path} = {_json(expected)}", "nothing there") from None
        if _json(value) != _json(expected):
            raise _Differs("end", f"var {path} = {_json(expected)}", _json(value))
    if case.retries:
        document = rt.get(uri)
        used = retries_used(document["tree"], document["trace"], case.var, case.const)
        for name, expected in case.retries.items():
            key = _node_key(document["tree"], name, case.by_path)
            if used.get(key, 0) != expected:
                got = f"{used.get(key, 0)} retries"
                raise _Differs("end", f"{expected} retries used by {name!r}", got)


def _json(value: Any) -> str:
    """`value` as canonical JSON: equal texts mean equal values (and 1, 1.0, true differ)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def retries_used(
    tree: dict[str, Any],
    trace: list[dict[str, Any]],
    var: dict[str, Any],
    const: dict[str, Any],
) -> dict[str, int]:
    """The retries each node (by runtime key: "" the root, "1.0" its second child's first) had
    used when the execution stopped, re-derived by replaying `trace` from the start given
    `var` and `const`: a retry of a node resets the counts of the nodes below it."""
    state = core.initial_state(
        tree, uri="", tree_uri="", tree_hash="", now="", salt="", var=var, const=const
    )
    used: dict[str, int] = {}
    for entry in trace:
        outcome = apply_entry(tree, state, entry)
        if outcome is None:
            continue
        state = outcome.state
        for key, event in outcome.events:
            if event == "retry":
                below = key + "." if key else ""
                count = used.get(key, 0) + 1
                for other in [k for k in used if k != key and k.startswith(below)]:
                    del used[other]
                used[key] = count
    return used


def _node_key(tree: dict[str, Any], name: str, by_path: bool) -> str:
    """The runtime key of the node `name` names: an index path as abtree writes it (`by_path`),
    else a node name unique in the tree or a `/` path of names from the root."""
    found: list[str] = []
    stack: list[tuple[dict[str, Any], str, str]] = [(tree["root"], "", tree["root"]["name"])]
    while stack:
        node, key, names = stack.pop()
        if (key if by_path else names) == name or (not by_path and node["name"] == name):
            found.append(key)
        for i, child in enumerate(node.get("children", [])):
            stack.append((child, f"{key}.{i}" if key else str(i), f"{names}/{child['name']}"))
    if len(found) != 1:
        problem = "no node" if not found else f"{len(found)} nodes (give a Root/Child path)"
        what = "at path" if by_path else "named"
        raise _Differs("end", f"retries of the node {what} {name!r}", problem)
    return found[0]
