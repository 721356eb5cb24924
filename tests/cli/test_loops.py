"""Loop trees through the real `tether` command: a walk driven by each answer's `next`, with the
item each request carries, verified afterwards; a loop that cannot run names why; a wrong loop
key is refused before anything is started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.command import ok, refused, snapshot
from tether.errors import EXIT_CONFLICT, EXIT_INVALID

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _answer(request: dict[str, Any], passes: dict[str, int]) -> list[str]:
    """The agent's part of review-changes: no file holds a secret; each file needs one fix
    before a pass finds it clean."""
    name = request["name"]
    if name == "Acknowledge_Protocol":
        return ["submit", "success"]
    if name == "List_Changes":
        return ["submit", "success", "--set-json", 'files=["src/app.py", "README.md"]']
    if name == "No_Secrets":
        return ["eval", "false"]
    if name == "Review_File":
        file = request["item"]["value"]
        passes[file] = passes.get(file, 0) + 1
        verdict = "fixed" if passes[file] == 1 else "clean"
        return ["submit", "success", "--set", f"verdict={verdict}"]
    return ["submit", "success", "--set", "summary=Two files, one fix each."]


def test_a_loop_tree_walks_to_done_one_call_per_step_and_verifies(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    request = ok("start", EXAMPLES / "review-changes.yaml", run)["current"]
    passes: dict[str, int] = {}
    seen: list[tuple[str, Any]] = []
    while "step" in request:
        seen.append((request["name"], request.get("item")))
        verb, *rest = _answer(request, passes)
        request = ok(verb, run, *rest, "--step", request["step"])["next"]
    assert request == {"status": "done"}
    app = {"name": "file", "index": 0, "value": "src/app.py"}
    readme = {"name": "file", "index": 1, "value": "README.md"}
    assert seen == [
        ("Acknowledge_Protocol", None),
        ("List_Changes", None),
        ("No_Secrets", app),
        ("Review_File", app),
        ("Review_File", app),
        ("No_Secrets", readme),
        ("Review_File", readme),
        ("Review_File", readme),
        ("Summarise", None),
    ]
    assert passes == {"src/app.py": 2, "README.md": 2}
    assert ok("verify", run)["ok"] is True
    until = [e for e in ok("trace", run) if e.get("on") == "until"]
    assert [(e["item"], e["outcome"]) for e in until] == [
        (0, "repeat"),
        (0, "passed"),
        (1, "repeat"),
        (1, "passed"),
    ]


def test_a_list_longer_than_its_max_fails_the_walk_with_the_reason(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    files = [f"f{i}.py" for i in range(21)]
    ok("start", EXAMPLES / "review-changes.yaml", run, "--const", "max_files=99")
    ok("submit", run, "success")
    response = ok("submit", run, "success", "--set-json", f"files={files!r}".replace("'", '"'))
    assert response["next"] == {"status": "failure"} == ok("next", run)
    assert (
        "The for_each of 'Each_File' failed: the list has 21 items, more than its max 20."
        in response["message"]
    )
    listed = [e for e in ok("trace", run) if e.get("on") == "for_each"]
    assert [(e["outcome"], e["note"]) for e in listed] == [
        ("error", "the list has 21 items, more than its max 20")
    ]
    refused(EXIT_CONFLICT, "execution_finished", "submit", run, "success")
    assert ok("verify", run)["ok"] is True


def test_a_wrong_loop_key_is_refused_and_nothing_is_started(tmp_path: Path) -> None:
    tree = tmp_path / "bad.yaml"
    tree.write_text(
        "name: bad\ntree:\n  type: action\n  name: A\n  for_each: {in: VAR.files, max: -1}\n"
        "  steps: [{instruct: x}]\n"
    )
    error = refused(EXIT_INVALID, "invalid_tree", "start", tree, tmp_path / "run.json")
    assert error["key"] == "tree.for_each.max" and error["line"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]
    tree.write_text(
        "name: bad\ntree:\n  type: action\n  name: A\n  repeat: {until: 'VAR.x ==='}\n"
        "  steps: [{instruct: x}]\n"
    )
    error = refused(EXIT_INVALID, "invalid_expression", "validate", tree)
    assert error["key"] == "tree.repeat.until"


def test_an_answer_past_the_work_limit_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    # From a review: a for_each of 300 x 300 check-only actions ran 20 s inside one answer and
    # wrote 14 MB to the trace.
    tree = tmp_path / "grid.yaml"
    tree.write_text(
        "name: grid\nstate:\n  var:\n    xs: [" + ", ".join(map(str, range(300))) + "]\n"
        "tree:\n  type: sequence\n  name: Rows\n  for_each: {in: VAR.xs, as: row, max: 300}\n"
        "  children:\n    - type: action\n      name: Cell\n"
        "      for_each: {in: VAR.xs, as: col, max: 300}\n"
        "      steps: [{check: 'ITEMS.row + ITEMS.col >= 0'}]\n"
    )
    run = tmp_path / "runs" / "grid.json"
    ok("start", tree, run)
    before = snapshot(run.parent)
    error = refused(EXIT_INVALID, "work_limit", "submit", run, "success")
    assert error["loop"] == "Cell"
    assert (
        "(in the loop 'Cell' (for_each item 192 of 300, path [0]) inside 'Rows'"
        in (error["message"])
    )
    after = snapshot(run.parent)
    log = after.pop("grid.json.refused.jsonl")  # the refusal, for tether stats
    assert isinstance(log, bytes) and json.loads(log)["code"] == "work_limit"
    assert after == before
    assert ok("next", run)["name"] == "Acknowledge_Protocol"
    assert ok("verify", run)["ok"] is True
