"""What an action needs before it may finish: its `writes` written and its `check` steps held.

Owns the refusals of a step submitted as success without its `writes` (`require_writes`) and of
a close (`hold_to_close`: of an action in the workflow or of an independent action), with the
rule of when a written var path covers a required one (`missing_writes`).

It does not own how a check is evaluated (`tether.engine.ticking.judge`), nor what a close does
once allowed (`tether.engine.answers`). Pure: no I/O, no clock.
"""

from __future__ import annotations

from tether.engine.ticking import Condition, judge
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def require_writes(req: dict[str, Any], written: list[str]) -> None:
    """`writes_missing` while the open step `req` has `writes` not among `written`: it is not
    submitted as success before they are."""
    missing = missing_writes(req.get("writes", []), written)
    if missing:
        raise TetherError(
            "writes_missing",
            f"step {req['name']!r} must write {', '.join('$VAR.' + m for m in missing)} "
            "before it is submitted as success",
            missing=missing,
            current=dict(req),
        )


def hold_to_close(
    what: str,
    steps: list[dict[str, Any]],
    index: int,
    written: list[str],
    scopes: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]],
    names: dict[str, Any],
    condition: Condition,
    **details: Any,
) -> None:
    """Refuse to close `what` (its steps from `index` on still to come) while one of those is a
    human step (`human_only`), one of their `writes` is not among `written` (`writes_missing`),
    or a `check` of all its `steps` does not hold on `scopes`, its var, const and tool records
    (`check_failed`); `details` go into every refusal."""
    remaining = steps[index:]
    if any("human" in step for step in remaining):
        raise TetherError(
            "human_only",
            f"{what} cannot close: a person still has to answer its human step (tether approve "
            "or reject, or the viewer)",
            **details,
        )
    required = [w for step in remaining for w in step.get("writes", [])]
    missing = missing_writes(required, written)
    if missing:
        raise TetherError(
            "writes_missing",
            f"{what} cannot close: it must write {', '.join('$VAR.' + m for m in missing)} first",
            missing=missing,
            **details,
        )
    for check in [step["check"] for step in steps if "check" in step]:
        verdict, why = judge(condition, check, scopes, names)
        if verdict:
            continue
        reason = (
            "could not be evaluated: " if verdict is None else ("is false: " if why else "is false")
        )
        raise TetherError(
            "check_failed",
            f"{what} cannot close: its check {check!r} {reason}{why}",
            check=check,
            **details,
        )


def missing_writes(required: list[str], written: list[str]) -> list[str]:
    """The paths of `required` that no path of `written` covers (the path itself, a path inside
    it, or one it lies inside)."""

    def covered(path: str) -> bool:
        return any(
            w == path or path.startswith(w + ".") or w.startswith(path + ".") for w in written
        )

    return [p for p in required if not covered(p)]
