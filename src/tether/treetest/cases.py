"""Tree test cases: the two file formats, their JSON Schema, and reading a file into `Case`s.

Owns: Tether's own format (a tree and a list of named cases, each a walk of expected requests
with their answers and the expected end), abtree's recorded-case format read unchanged (one case
per file: `description`, `tree`, `files`, `initial.local`, `steps`, `final`), the JSON Schema
that describes both (`case_schema`, also `schema/case.schema.json`), and validating a file
against that same schema, so the two cannot disagree: every problem is an `invalid_value` error
naming the file, line, column and key path. Files are read and parsed like tree files (bounded,
no YAML anchors, aliases or tags), by `tether.tree.locations`.

Tether's format:

```yaml
tree: hello-world.yaml            # relative to this file
cases:
  - name: an evening greeting
    var: {time_of_day: null}      # initial $VAR (and const:) over the tree's
    steps:
      - instruct: Determine_Time  # the request expected next, by type and name...
        write: {time_of_day: evening}   # ...the writes made while it is open
        submit: success           # ...and the answer (default success)
      - evaluate: Morning_Greeting
        result: false
      - human: Approve            # a human step's decision (approve | reject)
        decision: approve
    end:
      status: done                # done | failure
      var: {greeting: Good evening!}   # dotted paths; only these are compared
      retries: {Greet: 0}         # retries used, by node name (or a Root/Child path)
```

A step may also say `refused: CODE`: the answer must be refused with that error code, and the
same request stays open for the next step. A team's steps say which `agent` answers and may name
the loop `item` (the request is then picked by name, and item, among all those open); a
`{claim: NAME, agent: A}` step claims the action of that open request (`lease`, `outcome`), and
`{wait: SECONDS}` moves the case's clock on (a lease lapses). Does not own running a case
(`run.py`) or printing results (`cli.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from tether.engine.names import RequestType
from tether.errors import TetherError
from tether.tree.locations import (
    MAX_LOAD_BYTES,
    Document,
    Unreadable,
    Where,
    format_path,
    parse,
    read_text,
)
from tether.tree.locations import Path as KeyPath

# A relative path that stays where it is put: not absolute, no `..` segment, no NUL.
STAGED_PATH = r"^(?!/)(?!(.*/)?\.\.(/|$))[^\u0000]+$"

_TEXT = {"type": "string", "minLength": 1}
_NOTE = {"type": "string", "description": "A note recorded with the answer in the trace."}
_VALUES = {
    "type": "object",
    "description": "$VAR values by dotted path (`review.notes`); JSON values of any kind.",
}
_WRITE = {
    **_VALUES,
    "description": "What is written to $VAR while the request is open, before the answer: "
    "values by dotted path, in order.",
}
_REFUSED = {
    **_TEXT,
    "description": "The error code the answer must be refused with (`writes_missing`, "
    "`check_failed`, ...); the request stays open for the next step.",
}


_AGENT = {
    **_TEXT,
    "description": "The agent that answers (or claims): a team's step. It picks the open "
    "request by name among all those open, not only the first.",
}
_ITEM = {
    "description": "The loop item whose request this step answers (its value, as JSON): an "
    "item of a fanned-out for_each. The open request is picked by name and item among all "
    "those open.",
}


def _step(kind: str, answer: str, answer_schema: dict[str, Any], required: bool) -> dict[str, Any]:
    properties = {
        kind: {**_TEXT, "description": f"The name of the {kind} request expected next."},
        "write": _WRITE,
        answer: answer_schema,
        "note": _NOTE,
        "refused": _REFUSED,
        "agent": _AGENT,
        "item": _ITEM,
    }
    return {
        "type": "object",
        "description": f"Expect a {kind} request and answer it.",
        "properties": properties,
        "required": [kind, answer] if required else [kind],
        "additionalProperties": False,
    }


_CLAIM_STEP = {
    "type": "object",
    "description": "A claim of an open step's action for one agent (tether claim).",
    "properties": {
        "claim": {**_TEXT, "description": "The name of the open request whose action is claimed."},
        "agent": {**_TEXT, "description": "The agent that claims it."},
        "item": _ITEM,
        "lease": {
            "type": "integer",
            "minimum": 1,
            "description": "The lease in seconds (default 900).",
        },
        "outcome": {
            "enum": ["claimed", "renewed", "taken_over"],
            "description": "What the claim must do (default: any of them).",
        },
        "refused": _REFUSED,
    },
    "required": ["claim", "agent"],
    "additionalProperties": False,
}
_WAIT_STEP = {
    "type": "object",
    "description": "Time passes: the case's clock moves on (a lease lapses, a deadline passes).",
    "properties": {
        "wait": {"type": "integer", "minimum": 1, "description": "The seconds that pass."},
    },
    "required": ["wait"],
    "additionalProperties": False,
}

_TETHER_STEP = {
    "description": "The request expected next, by type and name, and its answer: exactly one "
    "of instruct, evaluate or human; or a claim, or a wait.",
    "oneOf": [
        _step(
            "instruct",
            "submit",
            {
                "enum": ["success", "failure", "running"],
                "description": "The submit status (default success).",
            },
            required=False,
        ),
        _step("evaluate", "result", {"type": "boolean", "description": "The eval result."}, True),
        _step(
            "human",
            "decision",
            {
                "enum": ["approve", "reject"],
                "description": "The person's decision, as tether approve or reject gives it.",
            },
            True,
        ),
        _CLAIM_STEP,
        _WAIT_STEP,
    ],
}

_TETHER_CASE = {
    "type": "object",
    "description": "One recorded walk: the initial scopes, the requests with their answers, the "
    "expected end.",
    "properties": {
        "name": {**_TEXT, "description": "The case's name, shown on its result line."},
        "description": {"type": "string", "description": "What the case shows."},
        "tree": {**_TEXT, "description": "This case's tree file, instead of the file's tree."},
        "var": {**_VALUES, "description": "Initial $VAR values over the tree's, key by key."},
        "const": {"type": "object", "description": "Initial $CONST values over the tree's."},
        "steps": {
            "type": "array",
            "items": {"$ref": "#/$defs/step"},
            "description": "The requests expected, in order, each with its answer. The "
            "protocol gate is accepted before the first.",
        },
        "end": {
            "type": "object",
            "description": "How the execution ends after the last step.",
            "properties": {
                "status": {
                    "enum": ["done", "failure"],
                    "description": "What next answers at the end.",
                },
                "var": {
                    **_VALUES,
                    "description": "Expected $VAR values by dotted path; only these are compared.",
                },
                "retries": {
                    "type": "object",
                    "description": "Retries each node used in the end, by node name (unique in "
                    "the tree) or a path of names from the root (`Root/Child`); 0 when none.",
                    "additionalProperties": {"type": "integer", "minimum": 0},
                },
            },
            "required": ["status"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "steps", "end"],
    "additionalProperties": False,
}

_ABTREE_STEP = {
    "description": "abtree: the request expected next, by type and name, and its answer.",
    "oneOf": [
        {
            "type": "object",
            "description": "An instruct request: write, then submit (default success).",
            "properties": {
                "type": {"const": "instruct", "description": "The request's type."},
                "name": {**_TEXT, "description": "The request's name."},
                "write": _WRITE,
                "submit": {
                    "enum": ["success", "failure", "running"],
                    "description": "The submit status (default success).",
                },
            },
            "required": ["type", "name"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "description": "An evaluate request and its result.",
            "properties": {
                "type": {"const": "evaluate", "description": "The request's type."},
                "name": {**_TEXT, "description": "The request's name."},
                "result": {"type": "boolean", "description": "The eval result."},
            },
            "required": ["type", "name", "result"],
            "additionalProperties": False,
        },
    ],
}

_ABTREE_CASE = {
    "type": "object",
    "description": "abtree's recorded case, read unchanged: one case per file.",
    "properties": {
        "name": {"type": "string", "description": "The case's name (default: the file's)."},
        "description": {"type": "string", "description": "What the case shows."},
        "tree": {
            **_TEXT,
            "description": "The tree: staged from files (NAME/TREE.yaml), else "
            "trees/NAME/TREE.yaml beside this file or its folder, else a file path.",
        },
        "files": {
            "type": "object",
            "description": "Files written into a fresh folder before the walk, by relative path.",
            "propertyNames": {"pattern": STAGED_PATH},
            "additionalProperties": {"type": "string"},
        },
        "initial": {
            "type": "object",
            "description": "Initial state over the tree's.",
            "properties": {
                "local": {"type": "object", "description": "Initial $LOCAL ($VAR) values."},
                "global": {"type": "object", "description": "Initial $GLOBAL ($CONST) values."},
            },
            "additionalProperties": False,
        },
        "steps": {
            "type": "array",
            "items": {"$ref": "#/$defs/abtree_step"},
            "description": "The requests expected, in order (the protocol is accepted first).",
        },
        "final": {
            "type": "object",
            "description": "How the execution ends.",
            "properties": {
                "status": {"enum": ["done", "failure"], "description": "What next answers."},
                "local": {"type": "object", "description": "Expected $LOCAL values by key."},
                "runtime": {
                    "type": "object",
                    "description": "Expected runtime counters.",
                    "properties": {
                        "retry_count": {
                            "type": "object",
                            "description": "Retries used by node path ('' the root, '1' its "
                            "second child, '1.0' that child's first).",
                            "additionalProperties": {"type": "integer", "minimum": 0},
                        }
                    },
                    "additionalProperties": False,
                },
            },
            "required": ["status"],
            "additionalProperties": False,
        },
    },
    "required": ["tree", "steps", "final"],
    "additionalProperties": False,
}

_TETHER_FILE = {
    "type": "object",
    "description": "Tether's tree tests: a tree and the walks recorded against it.",
    "properties": {
        "$schema": {"type": "string", "description": "This schema, for editors; ignored."},
        "tree": {**_TEXT, "description": "The tree file, relative to this file."},
        "description": {"type": "string", "description": "What these cases cover."},
        "cases": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/case"},
            "description": "The cases, run in order, each on a fresh execution.",
        },
    },
    "required": ["tree", "cases"],
    "additionalProperties": False,
}


def case_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of tree test files, both formats (a fresh dict)."""
    import copy

    return copy.deepcopy(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Tether tree tests",
            "description": "Recorded walks of a tree, run by `tether test`: Tether's format "
            "(`tree` and `cases`) or abtree's recorded case (`tree`, `steps`, `final`).",
            "anyOf": [{"$ref": "#/$defs/tether"}, {"$ref": "#/$defs/abtree"}],
            "$defs": {
                "tether": _TETHER_FILE,
                "case": _TETHER_CASE,
                "step": _TETHER_STEP,
                "abtree": _ABTREE_CASE,
                "abtree_step": _ABTREE_STEP,
            },
        }
    )


# -- the cases, as the runner takes them --------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One expected request (`kind`: instruct, evaluate or human; its `name`), what is written
    while it is open, and the answer: a submit status, an eval result or a human decision. A
    team's step names its `agent` and may name its loop `item` (`picked`: the request is
    found by name among all those open); a `claim` step claims the request's action (`answer`:
    the outcome expected, or "" for any; `lease` its seconds); a `wait` step moves the case's
    clock on by `lease` seconds."""

    kind: str
    name: str
    answer: str | bool
    where: str
    write: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    refused: str | None = None
    agent: str | None = None
    item: tuple[Any, ...] = ()  # the item's value, when the step names one
    picked: bool = False
    lease: int = 900


@dataclass(frozen=True)
class Case:
    """One walk to run. `tree` is the tree file, or, for abtree cases, the name to look for in
    `files` and `trees/`; `retries` keys are node names or name paths (`by_path` False) or
    abtree's index paths (`by_path` True)."""

    file: str
    name: str
    where: str
    tree: str
    base: Path
    steps: tuple[Step, ...]
    status: str
    var: dict[str, Any] = field(default_factory=dict)
    const: dict[str, Any] = field(default_factory=dict)
    expect_var: dict[str, Any] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    by_path: bool = False
    files: dict[str, str] | None = None


def read_cases(path: str) -> list[Case]:
    """The cases in the file at `path` (either format), validated against `case_schema()`."""
    doc = _read(path)
    data = doc.data
    schema = case_schema()
    defs = schema["$defs"]
    if isinstance(data, dict) and "cases" in data:
        _check(data, defs["tether"], Where(doc), defs)
        return [_tether_case(doc, c, i) for i, c in enumerate(data["cases"])]
    if isinstance(data, dict):
        _check(data, defs["abtree"], Where(doc), defs)
        return [_abtree_case(doc)]
    _fail(Where(doc), "a test file must be a mapping with `tree` and `cases` (or abtree's case)")


def _read(path: str) -> Document:
    try:
        text = read_text(path, MAX_LOAD_BYTES)
    except Unreadable as exc:
        if not Path(path).exists():
            raise TetherError("not_found", f"{path}: no such test file", file=path) from None
        raise TetherError("invalid_value", f"{path}: cannot read it: {exc}", file=path) from None
    try:
        return parse(text, path, as_json=path.endswith(".json"))
    except TetherError as exc:
        raise TetherError("invalid_value", exc.message, **exc.details) from None


def _fail(where: Where, problem: str, **details: Any) -> NoReturn:
    where.fail(problem, code="invalid_value", **details)


def _line(where: Where) -> str:
    position = where.doc.locator.value(where.path)
    return f"{where.doc.display}:{position[0]}" if position else where.doc.display


def _tether_case(doc: Document, raw: dict[str, Any], index: int) -> Case:
    at = Where(doc, ("cases", index))
    base = Path(doc.display).parent
    tree = raw.get("tree", doc.data["tree"])
    steps = []
    for i, step in enumerate(raw["steps"]):
        kind = next(k for k in ("instruct", "evaluate", "human", "claim", "wait") if k in step)
        answer = {"instruct": "submit", "evaluate": "result", "human": "decision"}.get(kind)
        steps.append(
            Step(
                kind,
                "" if kind == "wait" else step[kind],
                step.get("outcome", "") if answer is None else step.get(answer, "success"),
                _line(at / "steps" / i),
                dict(step.get("write", {})),
                step.get("note"),
                step.get("refused"),
                step.get("agent"),
                (step["item"],) if "item" in step else (),
                "agent" in step or "item" in step,
                step["wait"] if kind == "wait" else step.get("lease", 900),
            )
        )
    end = raw["end"]
    return Case(
        doc.display,
        raw["name"],
        _line(at),
        tree,
        base,
        tuple(steps),
        end["status"],
        var=dict(raw.get("var", {})),
        const=dict(raw.get("const", {})),
        expect_var=dict(end.get("var", {})),
        retries=dict(end.get("retries", {})),
    )


def _abtree_case(doc: Document) -> Case:
    raw: dict[str, Any] = doc.data
    at = Where(doc)
    steps = tuple(
        Step(
            s["type"],
            s["name"],
            s["result"] if s["type"] == RequestType.EVALUATE else s.get("submit", "success"),
            _line(at / "steps" / i),
            dict(s.get("write", {})),
        )
        for i, s in enumerate(raw["steps"])
    )
    initial, final = raw.get("initial", {}), raw["final"]
    return Case(
        doc.display,
        raw.get("name") or Path(doc.display).stem,
        _line(at),
        raw["tree"],
        Path(doc.display).parent,
        steps,
        final["status"],
        var=dict(initial.get("local", {})),
        const=dict(initial.get("global", {})),
        expect_var=dict(final.get("local", {})),
        retries=dict(final.get("runtime", {}).get("retry_count", {})),
        by_path=True,
        files=dict(raw.get("files", {})),
    )


# -- validating against the schema ----------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}
_PHRASES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "boolean": "true or false",
    "integer": "a whole number",
}


def _check(value: Any, schema: dict[str, Any], where: Where, defs: dict[str, Any]) -> None:
    """Check `value` against `schema`, which uses only the keywords this module's schema uses;
    `oneOf` branches are told apart by their first required key (and its `const`)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    if "oneOf" in schema:
        _check(value, _branch(value, schema, where), where, defs)
        return
    kind = schema.get("type")
    if kind is not None and (
        not isinstance(value, _TYPES[kind]) or (isinstance(value, bool) and kind != "boolean")
    ):
        _fail(where, f"{_name(where)} must be {_PHRASES[kind]}, got {_shown(value)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(map(str, schema["enum"]))
        _fail(where, f"{_name(where)} must be one of {choices}, got {_shown(value)}")
    if "const" in schema and value != schema["const"]:
        _fail(where, f"{_name(where)} must be {schema['const']!r}, got {_shown(value)}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        _fail(where, f"{_name(where)} must not be empty")
    if isinstance(value, int) and value < schema.get("minimum", value):
        _fail(where, f"{_name(where)} must be {schema['minimum']} or more, got {value}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            _fail(where, f"{_name(where)} must not be empty")
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), where / i, defs)
    if isinstance(value, dict):
        _check_mapping(value, schema, where, defs)


def _check_mapping(
    value: dict[Any, Any], schema: dict[str, Any], where: Where, defs: dict[str, Any]
) -> None:
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key in schema.get("required", []):
        if key not in value:
            _fail(where, f"missing key {key!r}")
    for key, item in value.items():
        inner = where / str(key)
        if not isinstance(key, str):
            _fail(inner, f"key {key!r} is not text (quote it)")
        names = schema.get("propertyNames")
        if names is not None and not re.search(names["pattern"], key):
            _fail(inner, f"{key!r} must be a relative path inside the folder (no '..')")
        if key in properties:
            _check(item, properties[key], inner, defs)
        elif extra is False:
            known = ", ".join(properties)
            inner.fail(
                f"unknown key {key!r}",
                hint=f"{_name(where)} takes {known}",
                at_key=True,
                shown=where.path,
                code="invalid_value",
            )
        elif isinstance(extra, dict):
            _check(item, extra, inner, defs)


def _branch(value: Any, schema: dict[str, Any], where: Where) -> dict[str, Any]:
    """The `oneOf` branch `value` is meant for, by its first required key and that key's
    `const` when it has one."""

    def matches(branch: dict[str, Any]) -> bool:
        key = branch["required"][0]
        const = branch["properties"][key].get("const")
        return key in value and (const is None or value[key] == const)

    branches = schema["oneOf"]
    if not isinstance(value, dict):
        _fail(where, f"{_name(where)} must be a mapping, got {_shown(value)}")
    found = [b for b in branches if matches(b)]
    if len(found) != 1:
        keys = [b["required"][0] for b in branches]
        consts = [b["properties"][k].get("const") for b, k in zip(branches, keys, strict=True)]
        if all(c is not None for c in consts):
            choices = " or ".join(f"{keys[0]}: {c}" for c in consts)
        else:
            choices = ", ".join(keys[:-1]) + f" or {keys[-1]}"
        _fail(where, f"{_name(where)} takes exactly one of {choices}")
    return found[0]


def _name(where: Where) -> str:
    path: KeyPath = where.path
    return format_path(path) if path else "the file"


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, int | float):
        return str(value)
    return "a list" if isinstance(value, list) else "a mapping"
