"""Fixture cases for rule sets: given these calls, expect these decisions.

Owns: the cases file format (strict, errors located like configuration errors), running each case
in a fresh session, and comparing decisions with expectations. A cases file:

```yaml
config: guard.yaml            # relative to this file; `--config` overrides it
cases:
  - name: editing without reading warns
    cwd: /project             # optional, for relative paths
    steps:
      - user: "fix the bug"
      - text: "I will read the file first."
      - pre: {tool: Edit, params: {file_path: a.py}}
        expect: {action: warn, rules: [read_before_edit]}
      - post: {tool: Read, params: {file_path: a.py}, result: {}}
      - call: {tool: Edit, params: {file_path: a.py}}    # pre_tool, then post_tool
        expect: {rules: [verify_after_edit], contains: "Re-read"}
```

`expect` may give `action` (the strongest action: allow, remind, warn, block), `rules` (exactly
these rule ids fired, in order) and `contains` (a substring of the injected text). For `call`,
the expectation is checked against both decisions together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from tether.errors import TetherError
from tether.guard.rules.config import Strict, read_yaml, validate
from tether.guard.rules.ruleset import Decision, Guard, GuardSession


class Call(Strict):
    tool: str
    params: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None


class Expect(Strict):
    action: Literal["allow", "remind", "warn", "block"] | None = None
    rules: list[str] | None = None
    contains: str | None = None


class Step(Strict):
    user: str | None = None
    text: str | None = None
    pre: Call | None = None
    post: Call | None = None
    call: Call | None = None
    expect: Expect | None = None

    @model_validator(mode="after")
    def _one(self) -> Step:
        given = [k for k in ("user", "text", "pre", "post", "call") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a step is exactly one of user, text, pre, post, call")
        return self


class Case(Strict):
    name: str
    cwd: str | None = None
    steps: list[Step] = Field(min_length=1)


class CasesFile(Strict):
    config: str | None = None
    cases: list[Case] = Field(min_length=1)


def _run_step(session: GuardSession, step: Step, explain: bool) -> list[Decision]:
    if step.user is not None:
        return [session.on_user_message(step.user)]
    if step.text is not None:
        return [session.on_text(step.text, explain=explain)]
    if step.pre is not None:
        return [session.pre_tool(step.pre.tool, step.pre.params, explain=explain)]
    call = step.post or step.call
    assert call is not None
    decisions = []
    if step.call is not None:
        decisions.append(session.pre_tool(call.tool, call.params, explain=explain))
    decisions.append(
        session.post_tool(call.tool, call.params, call.result, error=call.error, explain=explain)
    )
    return decisions


def _mismatches(expect: Expect, decisions: list[Decision]) -> list[str]:
    fired = [rule for d in decisions for rule in d.rules]
    action = max((d.action for d in decisions), key=["allow", "remind", "warn", "block"].index)
    text = "\n\n".join(d.text for d in decisions if d.text)
    out = []
    if expect.action is not None and action != expect.action:
        out.append(f"expected action {expect.action}, got {action}")
    if expect.rules is not None and fired != expect.rules:
        out.append(f"expected rules {expect.rules}, got {fired}")
    if expect.contains is not None and expect.contains not in text:
        out.append(f"expected the text to contain {expect.contains!r}, got {text!r}")
    return out


def run_cases(path: str, config: str | None = None, explain: bool = False) -> dict[str, Any]:
    """Run every case of the cases file at `path`; returns a report with each failure."""
    doc = read_yaml(Path(path), path)
    cases = validate(CasesFile, doc, (), doc.data if doc.data is not None else {})
    config_path = config or (
        str(Path(path).parent / cases.config) if cases.config is not None else None
    )
    if config_path is None:
        raise TetherError("usage", "no configuration: give --config or `config:` in the cases file")
    guard = Guard.from_file(config_path)
    results = []
    for number, case in enumerate(cases.cases):
        session = guard.session(f"case-{number}", cwd=case.cwd)
        failures = []
        for index, step in enumerate(case.steps):
            decisions = _run_step(session, step, explain)
            problems = _mismatches(step.expect, decisions) if step.expect else []
            if problems:
                failures.append(
                    {
                        "step": index,
                        "where": doc.where(("cases", number, "steps", index)),
                        "problems": problems,
                        "decisions": [d.to_dict(explain=True) for d in decisions],
                    }
                )
        guard.end_session(f"case-{number}")
        results.append({"name": case.name, "passed": not failures, "failures": failures})
    failed = sum(1 for r in results if not r["passed"])
    return {"passed": len(results) - failed, "failed": failed, "cases": results}
