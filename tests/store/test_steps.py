"""One call per step, human steps and fork on every store (file, memory, PostgreSQL), through
the verbs, and fork from each store into each other one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from support.stores import BACKENDS, Backend
from tether.errors import TetherError
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GATED_REVIEW = """\
name: gated-review
version: 1
state:
  var: {summary: null, tests_passed: null, findings: []}
tree:
  type: sequence
  name: Gated_Review
  children:
    - type: action
      name: Gather
      steps:
        - instruct: Summarise the change at $VAR.summary.
          writes: [summary]
    - type: parallel
      name: Review
      children:
        - type: action
          name: Style
          steps:
            - instruct: Store the findings at $VAR.findings.
              writes: [findings]
        - type: action
          name: Tests
          retries: 1
          steps:
            - instruct: Run the tests; store true or false at $VAR.tests_passed.
              writes: [tests_passed]
            - check: VAR.tests_passed == true
    - type: action
      name: Sign_Off
      steps:
        - human: Read the summary and the findings. Approve to merge.
"""


def _walk(rt: Runtime, uri: str) -> dict[int, dict[str, Any]]:
    """Drive the gated review to done, one call per step; what next returned at each length."""
    seen: dict[int, dict[str, Any]] = {}

    def answered(response: Mapping[str, Any]) -> dict[str, Any]:
        seen[len(rt.trace(uri))] = response["next"]
        return dict(response["next"])

    gate = rt.next(uri)
    seen[0] = dict(gate)
    gather = answered(rt.submit(uri, "success", step=gate["step"]))
    style = answered(rt.submit(uri, "success", step=gather["step"], values={"summary": "fix"}))
    tests = rt.next(uri, all=True)[1]
    answered(rt.submit(uri, "success", step=tests["step"], values={"tests_passed": False}))
    retry = rt.next(uri, all=True)[1]
    assert retry["name"] == "Tests" and retry["step"] != tests["step"]
    answered(rt.submit(uri, "success", step=retry["step"], values={"tests_passed": True}))
    human = answered(rt.submit(uri, "success", step=style["step"], values={"findings": []}))
    assert human["type"] == "human"
    with pytest.raises(TetherError) as refused:
        rt.submit(uri, "success", step=human["step"], values={"findings": ["sneaky"]})
    assert refused.value.code == "human_only"
    assert answered(rt.approve(uri, note="merge it")) == {"status": "done"}
    return seen


@pytest.fixture
def gated(tmp_path: Path) -> str:
    path = tmp_path / "gated-review.yaml"
    path.write_text(GATED_REVIEW)
    return str(path)


def test_one_call_per_step_and_a_human_sign_off_on_every_store(
    backend: Backend, gated: str
) -> None:
    rt = Runtime()
    uri = backend.new_uri()
    rt.start(gated, uri)
    _walk(rt, uri)
    document = rt.get(uri)
    assert document["var"] == {"summary": "fix", "tests_passed": True, "findings": []}
    human = [e for e in document["trace"] if e["kind"] == "human"]
    assert [(e["outcome"], e["note"], e["by"]) for e in human] == [("success", "merge it", "api")]
    assert rt.verify(uri)["ok"] is True


PAIRS = [(a, b) for a in sorted(BACKENDS) for b in sorted(BACKENDS)]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_fork_at_several_points_into_any_store(
    source: str, target: str, gated: str, tmp_path: Path
) -> None:
    rt = Runtime()
    origin_store, fork_store = BACKENDS[source](tmp_path), BACKENDS[target](tmp_path)
    uri = origin_store.new_uri()
    rt.start(gated, uri)
    seen = _walk(rt, uri)
    original = rt.get(uri)
    points = sorted(seen)
    for at in (points[0], points[2], points[3], points[-2], points[-1]):
        new = fork_store.new_uri()
        forked = rt.fork(uri, new, at=at)
        assert forked["forked_from"] == {"uri": original["uri"], "at": at}
        document = rt.get(new)
        assert document["forked_from"] == forked["forked_from"]
        assert document["trace"] == original["trace"][:at]
        mine, theirs = rt.next(new), seen[at]
        assert mine == forked["next"]
        assert {**mine, "step": None} == {**theirs, "step": None}, at
        assert rt.verify(new)["ok"] is True, rt.verify(new)
    assert rt.get(uri) == original


def test_a_fork_can_be_driven_on_and_forked_back(tmp_path: Path, gated: str) -> None:
    rt = Runtime()
    file_store, memory = BACKENDS["file"](tmp_path), BACKENDS["memory"](tmp_path)
    uri = file_store.new_uri()
    rt.start(gated, uri)
    _walk(rt, uri)
    human_at = next(i for i, e in enumerate(rt.trace(uri)) if e["kind"] == "human")
    branch = memory.new_uri()
    rt.fork(uri, branch, at=human_at)
    rejected = rt.reject(branch, note="not this time")
    assert rejected["next"]["status"] == "failure"
    back = file_store.new_uri()
    rt.fork(branch, back, at=len(rt.trace(branch)))
    assert rt.next(back)["status"] == "failure"
    assert rt.get(back)["forked_from"]["uri"] == branch
    assert rt.verify(back)["ok"] is True
    assert rt.next(uri) == {"status": "done"}


def test_fork_refuses_an_existing_target_and_a_bad_point(
    backend: Backend, gated: str, tmp_path: Path
) -> None:
    rt = Runtime()
    uri, other = backend.new_uri(), backend.new_uri()
    rt.start(gated, uri)
    rt.start(gated, other)
    rt.submit(uri, "success")
    kept = rt.get(other)
    for target, at, code in (
        (other, 0, "already_exists"),
        (uri, 0, "already_exists"),
        (backend.new_uri(), 5, "invalid_value"),
        (backend.new_uri(), -1, "invalid_value"),
    ):
        with pytest.raises(TetherError) as err:
            rt.fork(uri, target, at=at)
        assert err.value.code == code
        assert code == "already_exists" or not backend.store.exists(target)
    assert rt.get(other) == kept


def test_r11_a_refused_answer_does_not_echo_a_huge_step_token(backend: Backend, gated: str) -> None:
    """R11: `submit --step <1,000,000 characters>` is refused, and its record keeps at most
    `EVIDENCE_TEXT` characters of the token and of the message."""
    rt = Runtime()
    uri = backend.new_uri()
    rt.start(gated, uri)
    with pytest.raises(TetherError):
        rt.submit(uri, "success", step="0:0:" + "9" * 1_000_000)
    (record,) = backend.store.refusals(backend.store.canonical(uri))
    assert len(json.dumps(record)) < 3 * 1000
