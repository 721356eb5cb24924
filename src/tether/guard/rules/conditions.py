"""Rule conditions: compiling the `condition:` mapping and evaluating it against one call.

Owns: the 14 condition types, the `all` / `any` / `not` composites, the `Context` a condition
reads (the call, the session state, the phase), argument checking at load time, and the
explanation of an evaluation (every leaf with the value it saw). It does not know where rules come
from or what happens when one fires.

Counts are seen "including the current call": in `pre_tool` the call about to run is added to
the state's counts, in `post_tool` the state already includes it, in `on_text` there is no call.
A condition that needs a target and finds none is false. An unknown condition key is logged and
makes its condition false, so a rule written for a newer engine never fires by accident.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tether.guard.rules.patterns import Pattern, pattern_error
from tether.guard.rules.state import DEFAULT_TARGET_KEYS, SessionState, extract_target

PRE, POST, TEXT = "pre_tool", "post_tool", "on_text"


class ConditionError(ValueError):
    """A malformed condition; `path` is the key path inside the `condition:` mapping."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(slots=True)
class Context:
    """What a condition or a message template sees: one call (or text) against one state."""

    phase: str
    state: SessionState
    set_keys: dict[str, tuple[str, ...]]
    cwd: str | None
    tool: str = ""
    canon: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    text: str = ""
    _targets: dict[tuple[str, ...], str | None] = field(default_factory=dict, init=False)

    def target(self, keys: tuple[str, ...] = DEFAULT_TARGET_KEYS) -> str | None:
        if keys not in self._targets:
            self._targets[keys] = extract_target(self.params, keys, self.cwd)
        return self._targets[keys]

    def set_target(self, name: str) -> str | None:
        return self.target(self.set_keys.get(name, DEFAULT_TARGET_KEYS))

    @property
    def calls_this_turn(self) -> int:
        if self.phase == PRE:
            return self.state.tool_calls_this_turn + 1
        return self.state.tool_calls_this_turn

    @property
    def streak(self) -> int:
        state = self.state
        if self.phase == PRE:
            return state.streak + 1 if state.last_tool == self.canon else 1
        return state.streak

    def param(self, name: str) -> str | None:
        value = self.params.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            return value
        return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


class Condition(ABC):
    """A compiled condition: `test` is the fast path, `explain` records what each leaf saw."""

    @abstractmethod
    def test(self, ctx: Context) -> bool: ...

    @abstractmethod
    def explain(self, ctx: Context) -> dict[str, Any]: ...


class Always(Condition):
    def test(self, ctx: Context) -> bool:
        return True

    def explain(self, ctx: Context) -> dict[str, Any]:
        return {"condition": "always", "result": True}


class Leaf(Condition):
    """One condition type: `saw` reads the value, `judge` compares it with the argument."""

    def __init__(
        self,
        key: str,
        arg: Any,
        saw: Callable[[Context], Any],
        judge: Callable[[Any], bool],
    ) -> None:
        self.key = key
        self.arg = arg
        self.saw = saw
        self.judge = judge

    def test(self, ctx: Context) -> bool:
        return self.judge(self.saw(ctx))

    def explain(self, ctx: Context) -> dict[str, Any]:
        value = self.saw(ctx)
        return {"condition": self.key, "args": self.arg, "saw": value, "result": self.judge(value)}


class Unknown(Condition):
    def __init__(self, key: str) -> None:
        self.key = key

    def test(self, ctx: Context) -> bool:
        return False

    def explain(self, ctx: Context) -> dict[str, Any]:
        return {"condition": self.key, "unknown": True, "result": False}


class Composite(Condition):
    """`all` or `any` over a list of conditions (short-circuit when testing)."""

    def __init__(self, kind: str, parts: list[Condition]) -> None:
        self.kind = kind
        self.parts = parts
        self.combine = all if kind == "all" else any

    def test(self, ctx: Context) -> bool:
        return self.combine(part.test(ctx) for part in self.parts)

    def explain(self, ctx: Context) -> dict[str, Any]:
        parts = [part.explain(ctx) for part in self.parts]
        return {self.kind: parts, "result": self.combine(p["result"] for p in parts)}


class Not(Condition):
    def __init__(self, part: Condition) -> None:
        self.part = part

    def test(self, ctx: Context) -> bool:
        return not self.part.test(ctx)

    def explain(self, ctx: Context) -> dict[str, Any]:
        inner = self.part.explain(ctx)
        return {"not": inner, "result": not inner["result"]}


class References:
    """The sets, counters and flags a condition names, and the unknown keys it holds.

    With `validating` (loading a configuration) regular expressions are compiled at once so that
    a bad one is reported; otherwise they are compiled on first use."""

    def __init__(self, validating: bool = True) -> None:
        self.validating = validating
        self.sets: list[tuple[tuple[str | int, ...], str]] = []
        self.counters: list[tuple[tuple[str | int, ...], str]] = []
        self.flags: list[tuple[tuple[str | int, ...], str]] = []
        self.unknown: list[tuple[tuple[str | int, ...], str]] = []


def _need(path: tuple[str | int, ...], ok: bool, message: str) -> None:
    if not ok:
        raise ConditionError(path, message)


def _bool(path: tuple[str | int, ...], value: Any) -> bool:
    _need(path, isinstance(value, bool), f"expected true or false, got {value!r}")
    return bool(value)


def _count(path: tuple[str | int, ...], value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    _need(path, ok, f"expected a whole number >= 0, got {value!r}")
    return int(value)


def _name(path: tuple[str | int, ...], value: Any) -> str:
    _need(path, isinstance(value, str) and bool(value), f"expected a name, got {value!r}")
    return str(value)


def _regex(path: tuple[str | int, ...], value: Any, refs: References) -> Pattern:
    _need(path, isinstance(value, str), f"expected a regular expression, got {value!r}")
    if refs.validating:
        error = pattern_error(value)
        if error is not None:
            raise ConditionError(path, error)
    return Pattern(value)


def _fields(path: tuple[str | int, ...], value: Any, names: tuple[str, ...]) -> dict[str, Any]:
    _need(path, isinstance(value, dict), f"expected a mapping with {', '.join(names)}")
    for key in value:
        _need((*path, key), key in names, f"unknown field {key!r} (expected {', '.join(names)})")
    for key in names:
        _need(path, key in value, f"missing field {key!r}")
    return dict(value)


def _lint_errors(result: Any) -> int:
    if not isinstance(result, dict):
        return 0
    lint = result.get("lint")
    if lint is None and isinstance(result.get("data"), dict):
        lint = result["data"].get("lint")
    if not isinstance(lint, list):
        return 0
    return sum(1 for item in lint if isinstance(item, dict) and item.get("severity") == "error")


def _destructive(command: str | None) -> str | None:
    """What makes a shell command line destructive (see `tether.guard.rules.shell`), or None."""
    if command is None:
        return None
    from tether.guard.rules.shell import destructive

    return destructive(command)


def _target_exists(ctx: Context) -> bool | None:
    target = ctx.target()
    return None if target is None else os.path.exists(target)


def _leaf(key: str, arg: Any, path: tuple[str | int, ...], refs: References) -> Condition:
    """Compile one condition type; raises ConditionError on a bad argument."""
    if key in ("target_not_in_set", "target_in_set"):
        name = _name(path, arg)
        refs.sets.append((path, name))
        wanted = key == "target_in_set"

        def saw_target(ctx: Context) -> Any:
            target = ctx.set_target(name)
            if target is None:
                return None
            return {"target": target, "in_set": target in ctx.state.sets.get(name, ())}

        return Leaf(key, name, saw_target, lambda v: v is not None and v["in_set"] is wanted)
    if key == "counter_gte":
        spec = _fields(path, arg, ("name", "value"))
        name, value = _name((*path, "name"), spec["name"]), _count((*path, "value"), spec["value"])
        refs.counters.append(((*path, "name"), name))
        return Leaf(key, spec, lambda c: c.state.counters.get(name, 0), lambda v: v >= value)
    if key == "flag_is":
        spec = _fields(path, arg, ("name", "value"))
        name, flag = _name((*path, "name"), spec["name"]), _bool((*path, "value"), spec["value"])
        refs.flags.append(((*path, "name"), name))
        return Leaf(key, spec, lambda c: c.state.flags.get(name, False), lambda v: v is flag)
    if key == "param_matches":
        spec = _fields(path, arg, ("param", "pattern"))
        param = _name((*path, "param"), spec["param"])
        pattern = _regex((*path, "pattern"), spec["pattern"], refs)
        return Leaf(
            key, spec, lambda c: c.param(param), lambda v: v is not None and pattern.search(v)
        )
    if key == "destructive_command":
        param = _name(path, arg)
        return Leaf(key, param, lambda c: _destructive(c.param(param)), lambda v: v is not None)
    if key == "param_contains":
        spec = _fields(path, arg, ("param", "value"))
        param = _name((*path, "param"), spec["param"])
        _need((*path, "value"), isinstance(spec["value"], str), "expected a string")
        needle = spec["value"].lower()
        return Leaf(
            key, spec, lambda c: c.param(param), lambda v: v is not None and needle in v.lower()
        )
    if key == "no_text_before_tools":
        want = _bool(path, arg)
        return Leaf(key, want, lambda c: not c.state.text_this_turn, lambda v: v is want)
    if key == "first_tool_this_turn":
        want = _bool(path, arg)
        return Leaf(key, want, lambda c: c.calls_this_turn, lambda v: (v == 1) is want)
    if key == "consecutive_gte":
        count = _count(path, arg)
        return Leaf(key, count, lambda c: c.streak, lambda v: v >= count)
    if key == "tool_calls_this_turn_eq":
        count = _count(path, arg)
        return Leaf(key, count, lambda c: c.calls_this_turn, lambda v: v == count)
    if key == "target_exists_on_disk":
        want = _bool(path, arg)
        return Leaf(key, want, _target_exists, lambda v: v is not None and v is want)
    if key == "text_matches":
        text_pattern = _regex(path, arg, refs)
        return Leaf(key, arg, lambda c: c.text, text_pattern.search)
    if key == "result_has_lint_errors":
        want = _bool(path, arg)
        return Leaf(key, want, lambda c: _lint_errors(c.result), lambda v: (v > 0) is want)
    refs.unknown.append((path, key))
    import logging

    logging.getLogger("tether.guard").warning("behavior: unknown condition type: %s", key)
    return Unknown(key)


def compile_condition(spec: Any, refs: References, path: tuple[str | int, ...] = ()) -> Condition:
    """Compile a `condition:` value (a mapping; several keys mean all of them)."""
    if spec is None:
        return Always()
    _need(path, isinstance(spec, dict), f"a condition is a mapping, got {spec!r}")
    parts: list[Condition] = []
    for key, arg in spec.items():
        here = (*path, key)
        if key in ("all", "any"):
            _need(here, isinstance(arg, list) and bool(arg), f"{key} takes a non-empty list")
            children = [compile_condition(item, refs, (*here, i)) for i, item in enumerate(arg)]
            parts.append(Composite(key, children))
        elif key == "not":
            parts.append(Not(compile_condition(arg, refs, here)))
        else:
            parts.append(_leaf(key, arg, here, refs))
    if not parts:
        return Always()
    return parts[0] if len(parts) == 1 else Composite("all", parts)
