"""Every example validates and walks to the end the way its author meant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.results import Answered
from tether.tree.load import load_tree
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def rt() -> Runtime:
    return Runtime()


def _start(rt: Runtime, name: str, tmp_path: Path, **scopes: Any) -> str:
    uri = str(tmp_path / f"{name}.run.json")
    rt.start(str(EXAMPLES / f"{name}.yaml"), uri, **scopes)
    assert rt.submit(uri, "success")["status"] == "protocol_accepted"
    return uri


def _answer(
    rt: Runtime,
    uri: str,
    name: str,
    *answer: Any,
    writes: dict[str, Any] | None = None,
    step: str | None = None,
) -> Answered:
    request = rt.next(uri)
    if step is None:
        assert request.get("name") == name, request
    for path, value in (writes or {}).items():
        rt.var_write(uri, path, value)
    token = step or request["step"]
    if isinstance(answer[0], bool):
        return rt.eval(uri, answer[0], step=token)
    return rt.submit(uri, answer[0], step=token)


@pytest.mark.parametrize("name", ["hello-world", "deploy", "code-review", "review-changes"])
def test_every_example_validates(name: str) -> None:
    tree = load_tree(EXAMPLES / f"{name}.yaml")
    assert tree.hash.startswith("sha256:")


def test_hello_world_in_the_evening(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "hello-world", tmp_path)
    _answer(rt, uri, "Determine_Time", "success", writes={"time_of_day": "evening"})
    _answer(rt, uri, "Morning_Greeting", False)
    _answer(rt, uri, "Afternoon_Greeting", False)
    _answer(rt, uri, "Evening_Greeting", True)
    _answer(rt, uri, "Evening_Greeting", "success", writes={"greeting": "Good evening!"})
    assert rt.next(uri) == {"status": "done"}
    checks = [e for e in rt.trace(uri) if e["kind"] == "check"]
    assert [(e["name"], e["outcome"]) for e in checks] == [("Confirm_Greeting", "passed")]
    assert rt.verify(uri)["ok"]


def test_deploy_passes_its_global_thresholds(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "deploy", tmp_path)
    _answer(rt, uri, "Run_Tests", "success", writes={"tests_passed": True, "coverage": 86.5})
    _answer(rt, uri, "Build_And_Push", "success", writes={"image_tag": "v1.4.2"})
    _answer(rt, uri, "Verify_Rollout", "success", writes={"error_rate": 0.002})
    _answer(rt, uri, "Verify_Rollout", True)
    assert rt.next(uri) == {"status": "done"}
    assert rt.verify(uri)["ok"]


def test_deploy_stops_below_the_coverage_threshold(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "deploy", tmp_path, const={"coverage_threshold": 90})
    response = _answer(
        rt, uri, "Run_Tests", "success", writes={"tests_passed": True, "coverage": 86.5}
    )
    assert response["status"] == "action_failed"
    assert "coverage_threshold" in response["message"]
    assert rt.next(uri)["status"] == "failure"


def test_deploy_retries_a_failed_push_once(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "deploy", tmp_path)
    _answer(rt, uri, "Run_Tests", "success", writes={"tests_passed": True, "coverage": 99})
    assert "attempt 2 of 2" in _answer(rt, uri, "Build_And_Push", "failure")["message"]
    _answer(rt, uri, "Build_And_Push", "failure")
    assert rt.next(uri)["status"] == "failure"


def test_code_review_approves_after_a_test_retry(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "code-review", tmp_path)
    _answer(rt, uri, "Gather_Context", "success", writes={"summary": "Adds retries."})
    style, tests = rt.next(uri, all=True)
    assert (style["name"], tests["name"]) == ("Review_Style", "Run_Tests")
    rt.var_write(uri, "tests_passed", False)
    failed = rt.submit(uri, "success", step=tests["step"])
    assert failed["status"] == "action_failed" and "Retrying" in failed["message"]
    retry = rt.next(uri, all=True)[1]
    assert retry["name"] == "Run_Tests" and retry["step"] != tests["step"]
    rt.var_write(uri, "tests_passed", True)
    rt.submit(uri, "success", step=retry["step"])
    _answer(rt, uri, "Review_Style", "success", writes={"findings": ["rename x"]})
    _answer(rt, uri, "Approve", True)
    _answer(rt, uri, "Approve", "success", writes={"verdict": "approved"})
    assert rt.next(uri) == {"status": "done"}
    assert rt.var_read(uri, "verdict") == "approved"
    assert rt.verify(uri)["ok"]


def test_code_review_requests_changes_when_findings_pile_up(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "code-review", tmp_path)
    _answer(rt, uri, "Gather_Context", "success", writes={"summary": "Big refactor."})
    _answer(rt, uri, "Review_Style", "success", writes={"findings": ["a", "b", "c", "d"]})
    _answer(rt, uri, "Run_Tests", "success", writes={"tests_passed": True})
    _answer(rt, uri, "Request_Changes", "success", writes={"verdict": "changes_requested"})
    assert rt.next(uri) == {"status": "done"}
    approve_check = next(
        e for e in rt.trace(uri) if e["kind"] == "check" and e["name"] == "Approve"
    )
    assert approve_check["outcome"] == "failed"
    assert rt.verify(uri)["ok"]


def _item(rt: Runtime, uri: str) -> Any:
    return rt.next(uri)["item"]["value"]


def test_review_changes_reviews_each_file_until_it_is_clean(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "review-changes", tmp_path)
    _answer(rt, uri, "List_Changes", "success", writes={"files": ["src/app.py", "README.md"]})
    assert rt.next(uri)["item"] == {"name": "file", "index": 0, "value": "src/app.py"}
    _answer(rt, uri, "No_Secrets", False)
    looped = _answer(rt, uri, "Review_File", "success", writes={"verdict": "fixed"})
    assert "Looping: 'Review_File' run 2 of 3." in looped["message"]
    assert _item(rt, uri) == "src/app.py", "a second pass over the same file"
    _answer(rt, uri, "Review_File", "success", writes={"verdict": "clean"})
    assert _item(rt, uri) == "README.md"
    _answer(rt, uri, "No_Secrets", False)
    _answer(rt, uri, "Review_File", "success", writes={"verdict": "clean"})
    _answer(rt, uri, "Summarise", "success", writes={"summary": "Two files, one fix."})
    assert rt.next(uri) == {"status": "done"}
    answered = [(e["name"], e.get("item")) for e in rt.trace(uri) if e["kind"] == "evaluate"]
    assert answered == [("No_Secrets", 0), ("No_Secrets", 1)]
    assert rt.verify(uri)["ok"]


def test_review_changes_stops_at_a_file_that_holds_a_secret(rt: Runtime, tmp_path: Path) -> None:
    uri = _start(rt, "review-changes", tmp_path)
    _answer(rt, uri, "List_Changes", "success", writes={"files": ["a.py", ".env", "b.py"]})
    _answer(rt, uri, "No_Secrets", False)
    _answer(rt, uri, "Review_File", "success", writes={"verdict": "clean"})
    assert _item(rt, uri) == ".env"
    _answer(rt, uri, "No_Secrets", True)
    assert rt.next(uri) == {"status": "failure"}
    assert "'Each_File' failed at item 2 of 3." in rt.get(uri)["failure"]
    assert rt.verify(uri)["ok"]
