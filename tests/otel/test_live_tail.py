"""Live export reads a trace's tail (`tether.otel.send.emit`) and sends what `tether export
otel` sends: an execution whose trace grows long, with branches that interleave, retries, a
check and loop items, driven in process with a receiver on 127.0.0.1, on the file store and on
PostgreSQL; every span the receiver got is the span of the whole trace with the same id. A step
that ends a branch's attempt inside a `parallel` reads from where that attempt began."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel.test_live_private import _Recorder, recorder  # noqa: F401 (the fixture)
from otel.test_tail import _shape
from support.postgres import shared_server
from tether.otel import send
from tether.otel.spans import spans, without_content
from tether.store import store_for
from tether.verbs import Runtime

TREE = """\
name: long
version: 1
tree:
  type: sequence
  name: Root
  children:
    - type: parallel
      name: Both
      children:
        - {type: action, name: Left, steps: [{instruct: Do the left part.}]}
        - type: action
          name: Right
          retries: 1
          steps: [{instruct: Do the right part.}, {evaluate: Is it right?}]
    - type: action
      name: Each
      for_each: {in: '[1, 2, 3]', as: item}
      steps: [{evaluate: Is $ITEM ready?}]
    - type: action
      name: Measure
      retries: 2
      steps:
        - {instruct: Measure x., writes: [x]}
        - check: $VAR.x > 1
"""


@pytest.fixture
def live(recorder: tuple[str, type[_Recorder]]) -> Iterator[type[_Recorder]]:  # noqa: F811
    endpoint, handler = recorder
    send._live, send._said = None, False  # this process's sender, made for this receiver
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        patch.delenv("TETHER_OTEL_CONTENT", raising=False)
        yield handler
    send._live = None


def _drive(rt: Runtime, uri: str) -> None:
    """Walk the tree to its end, with 30 thoughts before each answer (the trace grows to
    hundreds of entries), answering the branches in turn and failing some attempts first."""
    answers = 0
    while True:
        requests = rt.next(uri, all=True)
        if requests[0].get("status") in ("done", "failure"):
            return
        request = requests[answers % len(requests)]
        for n in range(30):
            rt.think(uri, f"thought {n}", step=request["step"])
        answers += 1
        fail = answers % 3 == 0 and request["name"] in ("Right", "Measure")  # with retries
        if request["type"] == "evaluate":
            rt.eval(uri, not fail, step=request["step"])
        elif request["name"] == "Measure":
            rt.submit(uri, "success", values={"x": 1 if fail else 2}, step=request["step"])
        else:
            rt.submit(uri, "failure" if fail else "success", step=request["step"])


def _received(handler: type[_Recorder], count: int) -> dict[int, Any]:
    """The spans the receiver got, by span id, once it has `count` of them (or after 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        got = {}
        for body in list(handler.bodies):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    got.update({int.from_bytes(s.span_id, "big"): s for s in scope.spans})
        if len(got) >= count or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@pytest.mark.parametrize("where", ["file", "postgresql"])
def test_live_spans_read_from_the_tail_are_the_exported_spans(
    live: type[_Recorder], tmp_path: Path, where: str
) -> None:
    tree = tmp_path / "long.yaml"
    tree.write_text(TREE)
    uri = str(tmp_path / "run.json")
    if where == "postgresql":
        uri = shared_server().uri(f"live-tail-{tmp_path.name}")
    rt = Runtime()
    rt.start(str(tree), uri)
    rt.submit(uri, "success")
    _drive(rt, uri)
    store = store_for(uri)
    state, entries = store.read_execution(uri)
    tid, made = spans(state, store.load_tree(uri), entries)
    expected = {s.span_id: s for s in without_content(made)}
    assert state["status"] == "complete" and len(entries) > 300 and len(expected) >= 9
    got = _received(live, len(expected))
    assert sorted(got) == sorted(expected)
    for span_id, span in expected.items():
        sent = got[span_id]
        assert int.from_bytes(sent.trace_id, "big") == tid
        assert (sent.name, sent.start_time_unix_nano, sent.end_time_unix_nano) == (
            span.name,
            span.start,
            span.end,
        )
        assert [e.time_unix_nano for e in sent.events] == [e.time for e in span.events]
        attributes = {a.key for a in sent.attributes}
        assert attributes == set(span.attributes)


class _Reads:
    """A store whose `read_tail` calls are counted: the entries each read returned."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.read: list[int] = []

    def read_tail(self, uri: str, since: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        state, tail = self.store.read_tail(uri, since)
        self.read.append(len(tail))
        return state, tail

    def trace_length(self, state: dict[str, Any]) -> int:
        return int(self.store.trace_length(state))


def test_a_step_that_ends_a_branch_reads_from_where_its_attempt_began(tmp_path: Path) -> None:
    tree = tmp_path / "long.yaml"
    tree.write_text(TREE)
    uri = str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(str(tree), uri)
    rt.submit(uri, "success")
    left, right = rt.next(uri, all=True)
    for n in range(200):  # the other branch's attempt goes on beside it
        rt.think(uri, f"thought {n}", step=left["step"])
    rt.submit(uri, "failure", step=right["step"])  # Right's second attempt begins here
    rt.submit(uri, "success", step=rt.next(uri, all=True)[1]["step"])
    store = store_for(uri)
    before = store.load(uri)
    assert before["status"] == "running" and len(store.read_execution(uri)[1]) > 200
    rt.eval(uri, True, step=rt.next(uri, all=True)[1]["step"])  # ends it, inside the parallel
    reads = _Reads(store)
    tid, made = send._completed(reads, uri, store.load_tree(uri), before["seq"], before)
    assert [s.name for s in made] == ["invoke_agent Right"]
    assert made[0].attributes["tether.attempt.retry"] == 1
    assert reads.read == [17]  # 16 entries back and its own: Right's attempt began there
    state, entries = store.read_execution(uri)
    whole = spans(state, store.load_tree(uri), entries, before["seq"])
    assert (tid, _shape(made)) == (whole[0], _shape(whole[1]))
