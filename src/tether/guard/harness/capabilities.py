"""What each agent harness lets the guard do, per version tested: the table `tether guard
harnesses` prints and the docs show.

Owns: the capabilities a harness is tested for (`CAPABILITIES`), the table built from the field
tests' `harness_capability(harness, capability)` marks (`build`; the test suite's
`--harness-capabilities FILE` option writes it, and a test holds that the shipped
`capabilities.json` equals what the tests yield), the harnesses only documented, not tested
here (`DOCUMENTED`, each with what its documentation says and where), reading the shipped table
(`shipped`) and drawing it as text (`render`, `markdown`). It runs no harness and no test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CAPABILITIES = ("events", "deny", "stop", "context", "evidence", "person")
HEADINGS = {
    "events": "receives events",
    "deny": "denies a call",
    "stop": "refuses a stop",
    "context": "injects context",
    "evidence": "reads a failure",
    "person": "person's step",
}
DATA = Path(__file__).with_name("capabilities.json")

# The package each tested harness is pinned by (npm, or PyPI for the SDK): the version column.
# A harness is named as `tether guard install` names it.
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "claude-agent-sdk": "claude-agent-sdk",
    "opencode": "opencode-ai",
    "copilot": "@github/copilot",
    "qwen": "@qwen-code/qwen-code",
    "droid": "droid",
}

# Harnesses not tested here, with what their own documentation says (and where).
DOCUMENTED: list[dict[str, Any]] = [
    {
        "harness": "cline",
        "tested": "not tested here",
        "says": "PreToolUse may answer cancel: true, which ends the whole task: there is no "
        "per-call refusal, and TaskComplete only notifies (no stop to refuse)",
        "source": "https://docs.cline.bot/features/hooks/hook-reference",
    },
    {
        "harness": "cursor",
        "tested": "not tested here (no CLI here)",
        "says": "beforeShellExecution and preToolUse may deny a call; a stop hook may answer "
        "followup_message, sent as the next user message, bounded by loop_limit; "
        "`tether guard install cursor` writes these hooks",
        "source": "https://cursor.com/docs/agent/hooks",
    },
    {
        "harness": "antigravity-cli",
        "tested": "not tested here (not installable here)",
        "says": "no vendor documentation of its hooks was found; a third-party connector "
        "reports Claude-shaped PreToolUse hooks from hooks.json that can deny a call",
        "source": "https://cisco-ai-defense.github.io/defenseclaw/docs/connectors/antigravity/",
    },
]


def _stop_cap(marks: list[tuple[str, str, str, dict[str, Any]]], harness: str) -> Any:
    caps = [
        {"cap": kw["cap"], "test": test}
        for name, capability, test, kw in marks
        if name == harness and capability == "stop" and "cap" in kw
    ]
    return caps[0] if caps else None


def build(
    marks: Iterable[tuple[str, str, str, dict[str, Any]]], versions: dict[str, str]
) -> dict[str, Any]:
    """The table from the tests' marks, each `(harness, capability, test id, keywords)` (a
    stop test marked `cap=N` shows the harness's own cap on refused stops; one marked
    `cannot="why"` proves the harness cannot do it), and the pinned version of each harness. A
    mark naming an unknown capability, or a harness without a pinned version, is an error
    saying which."""
    marks = sorted(marks, key=lambda mark: mark[:3])
    rows: dict[str, dict[str, Any]] = {}
    for harness, capability, test, kw in marks:
        if capability not in CAPABILITIES:
            raise ValueError(f"{test}: capability {capability!r} is not one of {CAPABILITIES}")
        if harness not in versions:
            raise ValueError(f"{test}: harness {harness!r} has no pinned version")
        row = rows.setdefault(
            harness,
            {
                "harness": harness,
                "package": PACKAGES.get(harness, harness),
                "version": versions[harness],
                "cells": {c: [] for c in CAPABILITIES},
                "cannot": {},
            },
        )
        if "cannot" in kw:
            row["cannot"][capability] = {"why": str(kw["cannot"]), "test": test}
        elif test not in row["cells"][capability]:
            row["cells"][capability].append(test)
    for harness, row in rows.items():
        row["stop_cap"] = _stop_cap(marks, harness)
    return {"capabilities": list(CAPABILITIES), "tested": [rows[h] for h in sorted(rows)]}


def shipped() -> dict[str, Any]:
    """The table the package ships, with the documented-only harnesses."""
    table: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return {**table, "documented": DOCUMENTED}


def stop_caps() -> dict[str, int]:
    """The refused stop in a row at which each tested harness ends a turn itself, as its field
    test saw it (harnesses with none seen are left out)."""
    return {r["harness"]: r["stop_cap"]["cap"] for r in shipped()["tested"] if r["stop_cap"]}


def _cell(row: dict[str, Any], capability: str) -> str:
    if row["cells"][capability]:
        return "yes"
    return "no" if capability in row.get("cannot", {}) else "not shown"


def _cap(row: dict[str, Any]) -> str:
    """The harness's own cap on refused stops in a row, where a test saw it."""
    return f"ends the turn at {row['stop_cap']['cap']}" if row.get("stop_cap") else "none seen"


def render(table: dict[str, Any]) -> str:
    """The table as aligned text, then the documented-only harnesses."""
    head = ["harness", "version", *(HEADINGS[c] for c in CAPABILITIES), "own stop cap"]
    lines = [head] + [
        [r["harness"], r["version"], *(_cell(r, c) for c in CAPABILITIES), _cap(r)]
        for r in table["tested"]
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = [
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]
    out += ["", "Not tested here (what their documentation says):"]
    out += [f"  {d['harness']}: {d['says']} ({d['source']})" for d in table["documented"]]
    return "\n".join(out) + "\n"


def markdown(table: dict[str, Any]) -> str:
    """The table in Markdown for the docs, each cell tied to the tests that prove it (numbered
    below the table)."""
    tests: list[str] = []

    def cite(names: list[str]) -> str:
        tests.extend(t for t in names if t not in tests)
        return ", ".join(f"[{tests.index(t) + 1}](#harness-tests)" for t in names)

    head = ["harness", "version", *(HEADINGS[c] for c in CAPABILITIES), "own stop cap"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table["tested"]:
        cannot = row.get("cannot", {})
        cells = [
            f"yes {cite(row['cells'][c])}"
            if row["cells"][c]
            else f"no: {cannot[c]['why']} {cite([cannot[c]['test']])}"
            if c in cannot
            else "not shown"
            for c in CAPABILITIES
        ]
        cap = row.get("stop_cap")
        cells.append(f"{_cap(row)} {cite([cap['test']])}" if cap else _cap(row))
        lines.append(
            f"| {row['harness']} | {row['package']} {row['version']} | {' | '.join(cells)} |"
        )
    for doc in table["documented"]:
        blank = " | ".join("—" for _ in range(len(CAPABILITIES) + 1))
        lines.append(f"| {doc['harness']} | {doc['tested']} | {blank} |")
    notes = [f"- {d['harness']}: {d['says']} ([docs]({d['source']}))" for d in table["documented"]]
    proofs = ['<a id="harness-tests"></a>Tests:', ""]
    proofs += [f"{n}. `{t}`" for n, t in enumerate(tests, 1)]
    return "\n".join([*lines, "", *notes, "", *proofs]) + "\n"
