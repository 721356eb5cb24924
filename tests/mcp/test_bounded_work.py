"""No expression stalls the server: the review's attack, `map` three deep over 200 items, ran for
minutes inside one call and froze a real `tether mcp --http` (health and every other client timed
out). Now it is refused, where it sits in the tree, and the server answers the others meanwhile.
And the ordinary call runs on the event loop, while a call that would wait for a lock waits on a
worker thread."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tether.locking import WouldWait, hold, may_wait, without_waiting
from tether.mcp.tools import _unless_waiting

pytestmark = pytest.mark.anyio

THREE_DEEP = "VAR.xs.map(a, VAR.xs.map(b, VAR.xs.map(c, a + b + c))).size() > 0"
TWO_DEEP = "VAR.xs.map(a, VAR.xs.map(b, [a, b])).size() > 0"


def _costly_tree(root: Path, name: str, check: str) -> str:
    items = ", ".join(str(i) for i in range(200))
    (root / name).write_text(
        f"name: costly\nversion: '1'\nstate:\n  var:\n    xs: [{items}]\ntree:\n"
        "  type: sequence\n  name: root\n  children:\n    - type: action\n      name: Costly\n"
        f"      steps:\n        - check: '{check}'\n"
    )
    return name


def _result(reply: tuple[int, Any]) -> tuple[bool, Any]:
    status, body = reply
    assert status == 200, body
    result = body["result"]
    return bool(result.get("isError")), result.get("structuredContent") or result["content"]


def _meanwhile_the_server_answers(http_server: Any, trace: str) -> None:
    assert http_server.request("GET", "/health")[0] == 200
    started = _result(
        http_server.call("start_execution", tree_uri="hello-world.yaml", trace_output=trace)
    )
    assert started[1]["status"] == "started"
    assert _result(http_server.call("next_step", trace_output=trace))[1]["name"] == (
        "Acknowledge_Protocol"
    )


def test_the_reviews_expression_is_refused_and_stalls_nobody(http_server: Any, root: Path) -> None:
    tree = _costly_tree(root, "three-deep.yaml", THREE_DEEP)
    with ThreadPoolExecutor(1) as pool:
        costly = pool.submit(
            http_server.call, "start_execution", tree_uri=tree, trace_output="memory://costly"
        )
        _meanwhile_the_server_answers(http_server, "memory://other")
        failed, content = _result(costly.result(timeout=60))
    assert failed
    text = content[0]["text"]
    assert '"code": "invalid_tree"' in text
    assert "three-deep.yaml:13:18: CEL expression too costly" in text
    assert "tree.children[0].steps[0].check: 1:36: map is nested 3 comprehensions deep" in text


def test_a_costly_check_at_run_time_fails_its_action_and_stalls_nobody(
    http_server: Any, root: Path
) -> None:
    tree = _costly_tree(root, "two-deep.yaml", TWO_DEEP)
    trace = "memory://two-deep"
    assert not _result(http_server.call("start_execution", tree_uri=tree, trace_output=trace))[0]
    with ThreadPoolExecutor(1) as pool:
        costly = pool.submit(http_server.call, "submit", trace_output=trace, status="success")
        _meanwhile_the_server_answers(http_server, "memory://another")
        failed, answer = _result(costly.result(timeout=60))
    assert not failed
    assert answer["next"] == {"status": "failure"}
    failed, execution = _result(http_server.call("get_execution", trace_output=trace))
    assert not failed
    assert execution["failure"].startswith(
        "The check of 'Costly' could not be evaluated: too costly: its work grows as n**3 and "
        "its longest list or map has 200 items (8,000,000 > 100,000)"
    )


async def test_a_call_that_need_not_wait_runs_where_it_was_called() -> None:
    ran: list[threading.Thread] = []

    def call() -> int:
        ran.append(threading.current_thread())
        return 1

    assert await _unless_waiting(call) == 1
    assert ran == [threading.current_thread()]


async def test_a_call_that_would_wait_runs_again_on_a_worker_thread_and_waits_there() -> None:
    ran: list[threading.Thread] = []

    def work(x: int) -> int:
        ran.append(threading.current_thread())
        may_wait()  # what a database call does: outside the loop it may wait
        return x + 1

    assert await _unless_waiting(work, 1) == 2
    assert ran[0] is threading.current_thread()
    assert ran[1] is not threading.current_thread()


def test_only_the_first_lock_of_a_call_may_refuse_to_wait() -> None:
    # Once a call holds a lock it may have committed: from then on it waits, not runs again.
    free, busy = threading.Lock(), threading.Lock()
    with without_waiting():
        with pytest.raises(WouldWait):
            may_wait()
        with hold(free):
            may_wait()
    with busy, without_waiting(), pytest.raises(WouldWait), hold(busy):
        pass
    # A read commits nothing: the locks after it may still refuse.
    with without_waiting():
        with hold(free, reading=True):
            pass
        with pytest.raises(WouldWait):
            may_wait()


def test_r2_string_work_is_bounded_and_health_answers_meanwhile(
    http_server: Any, root: Path
) -> None:
    """R2: the red team's check, string concatenation inside a one-level comprehension over
    130,000 items with a 1 MiB string (18.9 s at 1,000 items, and /health unanswered while it
    ran): while the answer that runs it is in flight, /health and other clients are answered,
    and the check fails with the budget's reason instead of running."""
    (root / "strings.yaml").write_text(
        "name: strings\nversion: '1'\nstate:\n  var:\n"
        f"    l: [{', '.join(['0'] * 130_000)}]\n    s: {'x' * (1 << 20)}\ntree:\n"
        "  type: sequence\n  name: root\n  children:\n    - type: action\n      name: Costly\n"
        "      steps:\n        - check: 'VAR.l.exists(a, size(VAR.s + VAR.s + VAR.s + VAR.s) < 0)'"
        "\n"
    )
    trace = "memory://strings"
    started = http_server.call("start_execution", tree_uri="strings.yaml", trace_output=trace)
    assert not _result(started)[0]
    with ThreadPoolExecutor(1) as pool:
        costly = pool.submit(http_server.call, "submit", trace_output=trace, status="success")
        _meanwhile_the_server_answers(http_server, "memory://beside-strings")
        failed, answer = _result(costly.result(timeout=120))
    assert not failed and answer["next"] == {"status": "failure"}
    failed, execution = _result(http_server.call("get_execution", trace_output=trace))
    assert execution["failure"].startswith(
        "The check of 'Costly' could not be evaluated: too costly: it may copy or scan"
    )
