"""The human step kind: a request only a person answers. Each test proves one row of
docs/semantics.md ("The person in the loop")."""

from __future__ import annotations

from support.trees import Walk, action, ins, par, refused, seq, tree
from tether.engine import public as engine
from tether.engine.replay import verify

SIGN_OFF = tree(
    seq(
        "S",
        action("Draft", ins("draft")),
        action("Sign_Off", {"human": "Approve the draft?"}, ins("publish"), retries=1),
    )
)


def _to_the_human_step() -> Walk:
    w = Walk(SIGN_OFF)
    w.submit("success")
    return w


def test_next_returns_a_human_request_with_its_prompt() -> None:
    w = _to_the_human_step()
    request = w.next()
    assert {k: request[k] for k in ("type", "name", "prompt", "path", "index")} == {
        "type": "human",
        "name": "Sign_Off",
        "prompt": "Approve the draft?",
        "path": [1],
        "index": 0,
    }
    assert request["step"]


def test_the_agents_answers_are_refused_with_human_only_and_the_current_request() -> None:
    w = _to_the_human_step()
    request = w.next()
    for answer in (
        engine.Submit("success"),
        engine.Submit("failure", step=request["step"]),
        engine.Submit("running", values={"x": 1}),
        engine.Eval(True),
        engine.Eval(False, step=request["step"]),
    ):
        err = refused("human_only", w, answer)
        assert err.details["current"] == request
        assert err.exit_code == 5
        verb = "eval" if isinstance(answer, engine.Eval) else "submit"
        assert f"not for {verb}: tell the user" in err.message


def test_approve_advances_and_is_recorded_with_outcome_note_and_source() -> None:
    w = _to_the_human_step()
    response = w.apply(engine.Human(True, "cli", "looks right"))
    assert response["status"] == "approved"
    assert response["next"]["type"] == "instruct" and response["next"] == w.next()
    entry = w.trace[-1]
    assert {k: entry[k] for k in ("kind", "name", "outcome", "note", "by", "cursor")} == {
        "kind": "human",
        "name": "Sign_Off",
        "outcome": "success",
        "note": "looks right",
        "by": "cli",
        "cursor": {"path": [1], "step": 0},
    }
    assert verify(w.tree, w.state, w.trace) == []


def test_reject_fails_the_action_and_retries_ask_the_person_again() -> None:
    w = _to_the_human_step()
    first = w.next()
    response = w.apply(engine.Human(False, "viewer", "too long"))
    assert response["status"] == "rejected" and "Retrying" in response["message"]
    again = w.next()
    assert again["type"] == "human" and again["step"] != first["step"]
    assert w.trace[-1]["outcome"] == "failure" and w.trace[-1]["by"] == "viewer"
    final = w.apply(engine.Human(False, "cli"))
    assert final["next"]["status"] == "failure" == w.next()["status"]
    assert verify(w.tree, w.state, w.trace) == []


def test_approve_or_reject_with_no_human_step_open_is_wrong_phase() -> None:
    w = Walk(SIGN_OFF)
    err = refused("wrong_phase", w, engine.Human(True, "cli"))
    assert err.details["current"]["name"] == "Draft"
    human = _to_the_human_step()
    refused("stale_step", human, engine.Human(True, "cli", step="1:0:0:9:00000000"))
    gated = Walk(SIGN_OFF, accept=False)
    refused("wrong_phase", gated, engine.Human(False, "cli"))


def test_in_a_parallel_the_agent_goes_on_while_the_person_decides() -> None:
    t = tree(par("P", action("Ask", {"human": "OK?"}), action("Work", ins("work"))))
    w = Walk(t)
    human, work = w.open()
    assert (human["type"], work["type"]) == ("human", "instruct")
    refused("human_only", w, engine.Submit("success"))
    refused("wrong_phase", w, engine.Human(True, "cli", step=work["step"]))
    done = w.submit("success", step=work["step"])
    assert done["next"] == human
    refused("human_only", w, engine.Eval(True))
    last = w.apply(engine.Human(True, "cli"))
    assert last["next"] == {"status": "done"}
    assert verify(w.tree, w.state, w.trace) == []


def test_a_person_may_name_which_human_step_by_token() -> None:
    t = tree(par("P", action("A", {"human": "A?"}), action("B", {"human": "B?"})))
    w = Walk(t)
    a, b = w.open()
    w.apply(engine.Human(True, "cli", step=b["step"]))
    assert w.open() == [a]
    refused("stale_step", w, engine.Human(True, "cli", step=b["step"]))
    w.apply(engine.Human(False, "cli"))
    assert w.next()["status"] == "failure"
    assert verify(w.tree, w.state, w.trace) == []


# A sign-off beside the agent's work: the agent may still write what the person is asked about.
RELEASE = tree(
    par(
        "Release",
        action("Sign_Off", {"human": "Publish $VAR.release.version to $CONST.target? ($VAR.nope)"}),
        action("Prepare", ins("bump the version", writes=["release.version"])),
    ),
    var={"release": {"version": "1.2"}},
    const={"target": "prod"},
)


def test_a_human_request_shows_the_values_its_prompt_names() -> None:
    w = Walk(RELEASE)
    human = w.open()[0]
    assert human["prompt"] == "Publish $VAR.release.version to $CONST.target? ($VAR.nope)"
    assert human["shows"] == {
        "$VAR.release.version": "1.2",
        "$CONST.target": "prod",
        "$VAR.nope": None,
    }


def test_an_answer_to_values_that_changed_since_they_were_shown_is_stale() -> None:
    w = Walk(RELEASE)
    shown = w.open()[0]
    prepare = w.open()[1]
    w.apply(engine.VarWrite("release.version", "1.3", prepare["step"]))
    err = refused("stale_step", w, engine.Human(True, "viewer", step=shown["step"]))
    assert err.details["current"]["name"] == "Sign_Off"
    again = w.open()[0]
    assert again["shows"]["$VAR.release.version"] == "1.3" and again["step"] != shown["step"]
    # A write that leaves what the prompt names as it was re-opens nothing.
    w.apply(engine.VarWrite("other", "x", prepare["step"]))
    assert w.open()[0]["step"] == again["step"]
    w.apply(engine.Human(True, "viewer", step=again["step"]))
    entry = w.trace[-1]
    assert entry["kind"] == "human" and entry["outcome"] == "success"
    assert entry["shown"] == {
        "$VAR.release.version": "1.3",
        "$CONST.target": "prod",
        "$VAR.nope": None,
    }
    assert verify(w.tree, w.state, w.trace) == []


def test_a_recorded_approval_of_other_values_does_not_verify() -> None:
    w = Walk(RELEASE)
    w.apply(engine.Human(True, "cli"))
    forged = [dict(e) for e in w.trace]
    forged[-1]["shown"] = {**forged[-1]["shown"], "$VAR.release.version": "9.9"}
    assert [d["field"] for d in verify(w.tree, w.state, forged)] == [f"trace[{len(forged) - 1}]"]


def test_a_prompt_that_names_no_value_shows_none() -> None:
    w = _to_the_human_step()
    assert "shows" not in w.next()
    w.apply(engine.Human(True, "cli"))
    assert "shown" not in w.trace[-1]
