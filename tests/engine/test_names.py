"""The engine's names (`tether.engine.names`) and the rules written once inside the engine: the
named values are the stored format, each documented; a step token is looked up one way, so every
answer refuses a stale one alike; trace entries are numbered alike whoever writes them."""

from __future__ import annotations

import ast
import inspect
import json
from enum import StrEnum

from support.trees import Walk, action, chk, ins, refused, seq, tree
from tether.engine import names
from tether.engine import public as engine

# The stored and returned values, as executions already stored hold them: never to change.
STORED = {
    "Result": {
        "RUNNING": "running",
        "SUCCESS": "success",
        "FAILURE": "failure",
        "SKIPPED": "skipped",
    },
    "Status": {"RUNNING": "running", "COMPLETE": "complete", "FAILED": "failed"},
    "Phase": {
        "PROTOCOL": "protocol",
        "EVALUATING": "evaluating",
        "PERFORMING": "performing",
        "IDLE": "idle",
    },
    "RequestType": {"EVALUATE": "evaluate", "INSTRUCT": "instruct", "HUMAN": "human"},
    "Reply": {
        "DONE": "done",
        "FAILURE": "failure",
        "RUNNING": "running",
        "PROTOCOL_ACCEPTED": "protocol_accepted",
        "PROTOCOL_REJECTED": "protocol_rejected",
        "EVALUATION_PASSED": "evaluation_passed",
        "EVALUATION_FAILED": "evaluation_failed",
        "STEP_COMPLETE": "step_complete",
        "ACTION_COMPLETE": "action_complete",
        "ACTION_FAILED": "action_failed",
        "APPROVED": "approved",
        "REJECTED": "rejected",
        "WRITTEN": "written",
        "RECORDED": "recorded",
        "ALLOWED": "allowed",
        "REFUSED": "refused",
        "ENDED": "ended",
        "BACKGROUND": "background",
        "PARKED": "parked",
        "TIMED_OUT": "timed_out",
        "JUMPED": "jumped",
        "CALLED": "called",
        "CLOSED": "closed",
        "RESET": "reset",
        "CLAIMED": "claimed",
        "RENEWED": "renewed",
        "TAKEN_OVER": "taken_over",
        "LAPSED": "lapsed",
    },
    "Kind": {
        "PROTOCOL": "protocol",
        "EVALUATE": "evaluate",
        "INSTRUCT": "instruct",
        "HUMAN": "human",
        "TIMEOUT": "timeout",
        "CHECK": "check",
        "VAR_WRITE": "var_write",
        "THINK": "think",
        "TOOL": "tool",
        "STOP": "stop",
        "JUMP": "jump",
        "CLOSE": "close",
        "INDEPENDENT": "independent",
        "RESET": "reset",
        "CLAIM": "claim",
    },
    "Key": {
        "CHILD": "i",
        "RESULTS": "res",
        "STEP": "k",
        "OPENED": "o",
        "BEGAN": "b",
        "WRITTEN": "w",
        "DEADLINE": "d",
        "FAILING": "x",
        "RETRIES": "r",
        "TOOLS_FROM": "t",
        "ITEMS": "e",
        "ITEM": "n",
        "RUNS": "p",
        "CLAIM": "c",
    },
}


def _enums() -> dict[str, type[StrEnum]]:
    return {
        name: value
        for name, value in vars(names).items()
        if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    }


def test_the_named_values_are_the_stored_ones() -> None:
    found = {name: {m.name: m.value for m in enum} for name, enum in _enums().items()}
    assert found == STORED
    assert names.LEVELS == ("e", "n", "p", "r")


def test_every_name_and_value_has_a_docstring() -> None:
    """As `py_trees.common.Status` documents its values: a string right after each member."""
    module = ast.parse(inspect.getsource(names))
    classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
    assert {c.name for c in classes} == set(STORED)
    for cls in classes:
        assert ast.get_docstring(cls), cls.name
        body = cls.body[1:]
        members = [i for i, n in enumerate(body) if isinstance(n, ast.Assign)]
        assert len(members) == len(STORED[cls.name]), cls.name
        for i in members:
            after = body[i + 1] if i + 1 < len(body) else None
            assert isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant), (
                cls.name,
                ast.unparse(body[i]),
            )


def test_what_the_engine_returns_is_the_same_json_as_plain_strings() -> None:
    w = Walk(tree(seq("S", action("A", ins("a"), chk("true")))))
    response = w.submit("success")
    assert response["status"] is engine.Reply.ACTION_COMPLETE
    for document in (w.state, response, w.trace):
        text = json.dumps(document, sort_keys=True)
        assert json.loads(text) == document
        assert json.dumps(json.loads(text), sort_keys=True) == text
    assert '"status": "complete"' in json.dumps(w.state)
    assert [e["kind"] for e in w.trace] == ["protocol", "instruct", "check"]


def test_every_answer_refuses_a_stale_token_with_one_message_and_payload() -> None:
    """Eval, submit, a person's answer, a var write, a thought, a tool call and a close find
    the step a token names in one place: one refusal, naming the open requests."""
    w = Walk(tree(seq("S", action("A", ins("a"), ins("b")))))
    stale = w.next()["step"]
    w.submit("success")
    answers: list[engine.Answer] = [
        engine.Submit("success", step=stale),
        engine.Eval(True, step=stale),
        engine.Human(True, "cli", step=stale),
        engine.VarWrite("x", 1, step=stale),
        engine.Think("t", step=stale),
        engine.ToolCall("Bash", {}, True, step=stale),
        engine.Close(step=stale),
    ]
    errors = [refused("stale_step", w, answer) for answer in answers]
    assert {e.message for e in errors} == {
        f"step token {stale!r} does not name an open step of this execution (it was already "
        "answered, belongs to an earlier attempt, or to another execution)"
    }
    assert all(e.details == {"current": w.next(), "open": w.open()} for e in errors)


def test_every_trace_entry_is_numbered_in_one_sequence() -> None:
    """Answers, checks and resets number their entries alike: `seq` runs on without a gap and
    never goes back, even across a reset."""
    w = Walk(tree(seq("S", action("A", ins("a"), chk("true")), action("B", ins("b")))))
    w.write("x", 1)
    w.think("t")
    w.submit("success")
    w.reset()
    assert [e["seq"] for e in w.trace] == [5]
    assert w.trace[0]["kind"] == "reset"
    w.submit("success")
    assert [e["seq"] for e in w.trace] == [5, 6]
    assert w.state["since_reset"] == 1
