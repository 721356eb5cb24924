"""The JSON Schema (draft 2020-12) of tree files, for editors and other tools.

Owns: `json_schema()`, built from the same tables (`model.py`) the loader validates with, so a
key, kind or description changes in one place. It accepts all three spellings (native wrapper,
abtree wrapper, behaviors-sh root node) and carries a description on every field, which gives
completion and hover in editors that use yaml-language-server.

Does not own: the checks a schema cannot express, which only the loader makes: CEL that
compiles, sibling names that differ, a parallel `policy` no larger than its children, `$ref`
files that exist and do not form a cycle, state declared twice with different values.
"""

from __future__ import annotations

from typing import Any

from tether.tree.model import (
    COMMON_FIELDS,
    FOR_EACH_FIELDS,
    KIND_SCHEMAS,
    NODE_FIELDS,
    REF_FIELDS,
    REPEAT_FIELDS,
    STATE_FIELDS,
    STEP_FIELDS,
    STEP_KINDS,
    STEP_KINDS_TEXT,
    TOOLS_FIELDS,
    TYPE_ALIASES,
    TYPE_DESCRIPTIONS,
    WRAPPER_FIELDS,
    Field,
)


def _object(
    fields: dict[str, Field], title: str, description: str, **overrides: Any
) -> dict[str, Any]:
    properties = {
        key: {"description": field.description, **KIND_SCHEMAS[field.kind]}
        for key, field in fields.items()
    }
    for key, fragment in overrides.items():
        properties[key] = {**properties[key], **fragment}
    out: dict[str, Any] = {
        "title": title,
        "description": description,
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [key for key, field in fields.items() if field.required]
    if required:
        out["required"] = required
    return out


def _node_type(kind: str) -> dict[str, Any]:
    names = [kind, *(alias for alias, target in TYPE_ALIASES.items() if target == kind)]
    type_fragment = {"const": kind} if len(names) == 1 else {"enum": names}
    return _object(
        {**COMMON_FIELDS, **NODE_FIELDS[kind]},
        f"{kind} node",
        " ".join(TYPE_DESCRIPTIONS[n] for n in names),
        type=type_fragment,
    )


def _step(kind: str) -> dict[str, Any]:
    fields = {kind: STEP_FIELDS[kind]}
    if kind == "instruct":
        fields["writes"] = STEP_FIELDS["writes"]
    if kind == "human":
        fields.update(timeout=STEP_FIELDS["timeout"], on_timeout=STEP_FIELDS["on_timeout"])
    return {**_object(fields, f"{kind} step", STEP_FIELDS[kind].description), "required": [kind]}


def json_schema() -> dict[str, Any]:
    """The schema document (a fresh dict on every call)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Tether tree file",
        "description": "A behavior tree for Tether: a wrapper (`name`, `version`, `state`, "
        "`tree`; abtree's `state.local`/`state.global` too) or, behaviors-sh style, a node at "
        "the root.",
        "anyOf": [{"$ref": "#/$defs/wrapper"}, {"$ref": "#/$defs/node"}],
        "$defs": {
            "wrapper": _object(WRAPPER_FIELDS, "tree file", "A tree with its name and state."),
            "state": {
                **_object(STATE_FIELDS, "state", WRAPPER_FIELDS["state"].description),
                "type": ["object", "null"],
            },
            "node": {
                "title": "node",
                "description": "A sequence, selector (fallback), parallel or action node, or a "
                "$ref to a fragment file holding one.",
                "anyOf": [
                    {"$ref": "#/$defs/ref"},
                    *({"$ref": f"#/$defs/{kind}"} for kind in NODE_FIELDS),
                ],
            },
            "ref": _object(REF_FIELDS, "$ref", REF_FIELDS["$ref"].description),
            "for_each": _object(FOR_EACH_FIELDS, "for_each", COMMON_FIELDS["for_each"].description),
            "repeat": _object(REPEAT_FIELDS, "repeat", COMMON_FIELDS["repeat"].description),
            "tools": {
                **_object(TOOLS_FIELDS, "tools", COMMON_FIELDS["tools"].description),
                "minProperties": 1,
            },
            **{kind: _node_type(kind) for kind in NODE_FIELDS},
            "step": {
                "title": "step",
                "description": f"Exactly one of {STEP_KINDS_TEXT}.",
                "oneOf": [{"$ref": f"#/$defs/{kind}_step"} for kind in STEP_KINDS],
            },
            **{f"{kind}_step": _step(kind) for kind in STEP_KINDS},
        },
    }
