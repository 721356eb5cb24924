"""The store conformance suite: every store passes all of it (docs/semantics.md, "Storage")."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from support.stores import Backend
from tether.errors import TetherError
from tether.store.base import Summary
from tether.store.shared import REFUSAL_LOG_BYTES
from tether.verbs import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TREE = {
    "name": "t",
    "version": "1",
    "state": {"var": {}, "const": {}},
    "root": {"type": "action", "name": "A", "steps": [{"instruct": "x"}]},
}


def _state(uri: str, **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "uri": uri,
        "status": "running",
        "revision": 0,
        "var": {"a": 1},
        "const": {},
        "open": [],
        "runtime": {},
        "tree_hash": "sha256:t",
        **extra,
    }


def _entry(seq: int) -> dict[str, Any]:
    return {
        "seq": seq,
        "ts": "2026-01-01T00:00:00.000Z",
        "kind": "think",
        "cursor": None,
        "name": "A",
        "submitted": f"thought {seq}",
        "outcome": "recorded",
    }


def _code(call: Any, *args: Any) -> str:
    with pytest.raises(TetherError) as err:
        call(*args)
    return err.value.code


def test_create_then_load(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    state = backend.store.load(uri)
    assert state["revision"] == 0 and state["var"] == {"a": 1}
    assert backend.store.trace_length(state) == 0
    assert backend.store.load_tree(uri) == TREE
    assert list(backend.store.read_trace(uri)) == []
    assert backend.store.exists(uri)


def test_canonical_is_idempotent(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    assert backend.store.canonical(uri) == uri


def test_create_refuses_an_existing_uri_and_keeps_it(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    assert _code(backend.store.create, uri, _state(uri, var={"b": 2}), TREE) == "already_exists"
    assert backend.store.load(uri)["var"] == {"a": 1}


def test_missing_execution_is_not_found(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    assert not backend.store.exists(uri)
    assert _code(backend.store.load, uri) == "not_found"
    with pytest.raises(TetherError) as err, backend.store.transaction(uri):
        pass
    assert err.value.code == "not_found"


def test_commit_bumps_revision_and_appends(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    for seq in range(3):
        with backend.store.transaction(uri) as tx:
            tx.commit(dict(tx.state, var={"n": seq}), [_entry(seq)])
    state = backend.store.load(uri)
    assert state["revision"] == 3 and state["var"] == {"n": 2}
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [0, 1, 2]
    assert backend.store.trace_length(state) == 3


def test_reset_trace_replaces_the_trace(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(0), _entry(1)])
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(2)], reset_trace=True)
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(3)])
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [2, 3]
    assert backend.store.load(uri)["revision"] == 3


def test_a_failed_transaction_commits_nothing(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    with pytest.raises(RuntimeError), backend.store.transaction(uri) as tx:
        tx.state["var"] = {"changed": True}
        raise RuntimeError("the engine refused")
    state = backend.store.load(uri)
    assert state["revision"] == 0 and state["var"] == {"a": 1}


def test_loaded_documents_are_copies(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    backend.store.load(uri)["var"]["a"] = 99
    backend.store.load_tree(uri)["name"] = "changed"
    assert backend.store.load(uri)["var"] == {"a": 1}
    assert backend.store.load_tree(uri)["name"] == "t"


def test_concurrent_transactions_are_serialised(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, counter=0), TREE)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                with backend.store.transaction(uri) as tx:
                    n = tx.state["counter"]
                    tx.commit(dict(tx.state, counter=n + 1), [_entry(n)])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    state = backend.store.load(uri)
    assert state["counter"] == 60 and state["revision"] == 60
    assert [e["seq"] for e in backend.store.read_trace(uri)] == list(range(60))


def test_runtime_walks_an_example_on_the_store(backend: Backend) -> None:
    rt = Runtime()
    uri = backend.new_uri()
    rt.start(str(EXAMPLES / "hello-world.yaml"), uri)
    rt.submit(uri, "success")
    rt.var_write(uri, "time_of_day", "evening")
    rt.submit(uri, "success")
    rt.eval(uri, False)
    rt.eval(uri, False)
    rt.eval(uri, True)
    rt.var_write(uri, "greeting", "Good evening!")
    rt.submit(uri, "success")
    assert rt.next(uri) == {"status": "done"}
    report = rt.verify(uri)
    assert report["ok"], report["differences"]
    doc = rt.get(uri)
    assert doc["status"] == "complete" and doc["var"]["greeting"] == "Good evening!"
    assert [e["seq"] for e in doc["trace"]] == list(range(len(doc["trace"])))


def test_replace_tree_swaps_the_tree_and_keeps_the_trace(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(0), _entry(1)])
    edited = {**TREE, "name": "t2"}
    with backend.store.transaction(uri) as tx:
        committed = tx.replace_tree(edited, dict(tx.state, tree_hash="sha256:t2"))
        assert tx.tree() == edited
    assert committed["revision"] == 2
    state = backend.store.load(uri)
    assert state["revision"] == 2 and state["tree_hash"] == "sha256:t2"
    assert backend.store.load_tree(uri) == edited
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [0, 1]
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(2)])
    assert backend.store.trace_length(backend.store.load(uri)) == 3
    assert backend.store.load_tree(uri) == edited


def test_read_execution_is_the_state_with_its_own_trace(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    assert backend.store.read_execution(uri) == (backend.store.load(uri), [])
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(0), _entry(1)])
    state, entries = backend.store.read_execution(uri)
    assert state["revision"] == 1 and [e["seq"] for e in entries] == [0, 1]
    assert backend.store.trace_length(state) == len(entries)
    assert _code(backend.store.read_execution, backend.store.canonical(backend.new_uri())) == (
        "not_found"
    )


def test_read_execution_and_its_tail_stay_consistent_while_others_commit(
    backend: Backend,
) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, counter=0, seq=0), TREE)
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set() and n < 300:
            with backend.store.transaction(uri) as tx:
                state, reset = dict(tx.state, counter=n + 1, seq=n + 1), n % 50 == 49
                tx.commit(state, [_long_entry(n)], reset_trace=reset)
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(100):
            state, entries = backend.store.read_execution(uri)
            assert backend.store.trace_length(state) == len(entries)
            if entries:
                assert entries[-1]["seq"] == state["counter"] - 1
            since = int(backend.store.load(uri)["seq"]) - 3  # others commit before the read
            state, tail = backend.store.read_tail(uri, since)
            first = state["seq"] - backend.store.trace_length(state)
            assert [e["seq"] for e in tail] == list(range(max(since, first), state["seq"]))
    finally:
        stop.set()
        thread.join()


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), {"a": [float("-inf")]}, _deep(1000), "caf\udce9", {1: 2}],
    ids=["nan", "inf", "nested-inf", "deep", "not-utf8", "int-key"],
)
def test_values_json_cannot_hold_are_refused_from_any_caller(backend: Backend, value: Any) -> None:
    rt, uri = Runtime(), backend.new_uri()
    rt.start(str(EXAMPLES / "hello-world.yaml"), uri)
    before = rt.get(uri)
    assert _code(rt.var_write, uri, "x", value) == "invalid_value"
    with pytest.raises(TetherError) as err:
        rt.start(str(EXAMPLES / "hello-world.yaml"), backend.new_uri(), var={"x": value})
    assert err.value.code == "invalid_value"
    assert rt.get(uri) == before


def test_a_store_encodes_only_standard_json(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    with backend.store.transaction(uri) as tx:
        assert _code(tx.commit, dict(tx.state, var={"x": float("nan")}), []) == "invalid_value"
        assert _code(tx.commit, tx.state, [dict(_entry(0), value=float("inf"))]) == "invalid_value"
    assert _code(
        backend.store.create, backend.new_uri(), _state(uri, var={"x": float("nan")}), TREE
    ) == ("invalid_value")
    state = backend.store.load(uri)
    assert state["revision"] == 0 and state["var"] == {"a": 1}
    assert list(backend.store.read_trace(uri)) == []


# -- listing and revisions -------------------------------------------------------------------


def _listed(backend: Backend, uri: str, status: str | None = None) -> Summary | None:
    found = [s for s in backend.store.list(backend.where, status=status) if s.uri == uri]
    assert len(found) <= 1
    return found[0] if found else None


def test_list_shows_each_execution_and_how_it_stands(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    request = {"type": "instruct", "name": "A", "step": "a:0", "path": [], "index": 0}
    when = "2026-01-01T09:30:00.000Z"
    state = _state(uri, tree_name="t", phase="performing", open=[request], updated_at=when)
    backend.store.create(uri, state, TREE)
    name = backend.store.place(uri)[1]
    assert name is not None
    assert _listed(backend, uri) == Summary(
        uri,
        name,
        tree="t",
        status="running",
        phase="performing",
        open_step={"name": "A", "type": "instruct"},
        revision=0,
        updated_at=when,
    )
    with backend.store.transaction(uri) as tx:
        tx.commit(dict(tx.state, status="complete", phase="done", open=[]), [_entry(0)])
    listed = _listed(backend, uri)
    assert listed is not None
    assert (listed.status, listed.phase, listed.open_step, listed.revision) == (
        "complete",
        "done",
        None,
        1,
    )
    assert listed.to_dict()["open_step"] is None and "error" not in listed.to_dict()


def test_list_names_what_locate_and_place_address(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    where, name = backend.store.place(uri)
    assert name is not None
    assert backend.store.place(where) == (where, None), "a place names no execution"
    assert backend.store.locate(where, name) == uri
    assert backend.store.locate(backend.where, name) == uri
    assert uri in [s.uri for s in backend.store.list(where)]
    names = [s.name for s in backend.store.list(backend.where)]
    assert names == sorted(names)


def test_list_filters_on_status(backend: Backend) -> None:
    running, done = (backend.store.canonical(backend.new_uri()) for _ in range(2))
    for uri in (running, done):
        backend.store.create(uri, _state(uri), TREE)
    with backend.store.transaction(done) as tx:
        tx.commit(dict(tx.state, status="complete"), [])
    assert _listed(backend, running, "running") is not None
    assert _listed(backend, running, "complete") is None
    assert _listed(backend, done, "complete") is not None
    assert _listed(backend, done, "running") is None
    assert _listed(backend, done, "failed") is None


def test_list_refuses_a_uri_naming_one_execution(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE)
    assert _code(backend.store.list, uri) == "invalid_value"
    assert backend.store.load(uri)["revision"] == 0


def test_revision_is_the_committed_one(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    assert _code(backend.store.revision, uri) == "not_found"
    backend.store.create(uri, _state(uri), TREE)
    assert backend.store.revision(uri) == 0
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(0)])
    assert backend.store.revision(uri) == 1
    with pytest.raises(RuntimeError), backend.store.transaction(uri):
        raise RuntimeError("the engine refused")
    assert backend.store.revision(uri) == 1
    with backend.store.transaction(uri) as tx:
        tx.replace_tree({**TREE, "name": "t2"}, tx.state)
    assert backend.store.revision(uri) == backend.store.load(uri)["revision"] == 2


def test_runtime_lists_the_executions_of_a_place(backend: Backend) -> None:
    rt, uri = Runtime(), backend.new_uri()
    started = rt.start(str(EXAMPLES / "hello-world.yaml"), uri)
    rt.submit(uri, "success")
    (row,) = [r for r in rt.list_executions(backend.where) if r["uri"] == started["uri"]]
    assert row["tree"] == "hello-world" and row["status"] == "running"
    assert row["open_step"] == {"name": "Determine_Time", "type": "instruct"}
    assert row["revision"] == 1 and row["phase"] == "performing"
    failed = rt.list_executions(backend.where, status="failed")
    assert started["uri"] not in [r["uri"] for r in failed]
    with pytest.raises(TetherError) as err:
        rt.list_executions(backend.where, status="done")
    assert err.value.code == "invalid_value"


def test_create_with_a_trace_is_one_commit(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri), TREE, [_entry(0), _entry(1)])
    state, entries = backend.store.read_execution(uri)
    assert state["revision"] == 0 and backend.store.trace_length(state) == 2
    assert [e["seq"] for e in entries] == [0, 1]
    with backend.store.transaction(uri) as tx:
        tx.commit(tx.state, [_entry(2)])
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [0, 1, 2]
    assert _code(backend.store.create, uri, _state(uri), TREE, [_entry(9)]) == "already_exists"
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [0, 1, 2]


def test_a_refusal_record_sits_beside_the_trace(backend: Backend) -> None:
    """`refuse` keeps its record even when the verb then raises, and changes neither the state,
    its revision nor the trace; a new execution at a URI starts with an empty log."""
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, seq=1, since_reset=1), TREE, [_entry(0)])
    before = backend.store.read_execution(uri)
    record = {"seq": 1, "kind": "answer", "code": "stale_step", "cursor": None}
    with backend.store.transaction(uri) as tx:
        tx.refuse(record)
    assert backend.store.read_execution(uri) == before
    assert backend.store.revision(uri) == 0
    assert backend.store.refusals(uri) == [record]
    assert _code(backend.store.refusals, backend.store.canonical(backend.new_uri())) == "not_found"


def test_tally_counts_the_executions_of_a_place(backend: Backend) -> None:
    rt = Runtime()
    uri = backend.new_uri()
    rt.start(str(EXAMPLES / "hello-world.yaml"), uri)
    with pytest.raises(TetherError):
        rt.eval(uri, True)
    counted = backend.store.tally(backend.where, tree="hello-world")
    assert counted["unreadable"] == 0
    (tree,) = [t for t in counted["trees"] if t["name"] == "hello-world"]
    assert tree["executions"]["running"] >= 1 and tree["refused"]["wrong_phase"] >= 1
    assert backend.store.tally(backend.where, tree="no-such-tree")["trees"] == []
    assert backend.store.tally(backend.where, since="2999-01-01T00:00:00.000Z")["trees"] == []


def test_r11_the_refusal_log_is_capped(backend: Backend) -> None:
    """R11: the log stops growing at `REFUSAL_LOG_BYTES`: records past it are not kept (a cap,
    not a rotation), and the execution is untouched."""
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, seq=1, since_reset=1), TREE, [_entry(0)])
    record = {"seq": 1, "kind": "answer", "code": "stale_step", "message": "x" * (1 << 20)}
    for _ in range(6):
        with backend.store.transaction(uri) as tx:
            tx.refuse(record)
    kept = backend.store.refusals(uri)
    assert len(kept) == 3 and sum(len(json.dumps(r)) for r in kept) <= REFUSAL_LOG_BYTES
    assert [e["seq"] for e in backend.store.read_trace(uri)] == [0]


def _long_entry(seq: int) -> dict[str, Any]:
    return dict(_entry(seq), submitted=f"thought {seq} " + "x" * 700)  # 60 fill blocks of 16 KiB


def test_read_tail_is_the_state_with_its_entries_from_a_seq(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, seq=0), TREE)
    assert backend.store.read_tail(uri, 0) == (backend.store.load(uri), [])
    for start in range(0, 60, 7):
        with backend.store.transaction(uri) as tx:
            seqs = range(start, min(start + 7, 60))
            tx.commit(dict(tx.state, seq=seqs[-1] + 1), [_long_entry(n) for n in seqs])
    state, entries = backend.store.read_execution(uri)
    for since in (-3, 0, 1, 29, 58, 59, 60, 100):
        assert backend.store.read_tail(uri, since) == (
            state,
            [e for e in entries if e["seq"] >= since],
        )
    assert _code(backend.store.read_tail, backend.store.canonical(backend.new_uri()), 0) == (
        "not_found"
    )


def test_read_tail_after_a_reset_reads_the_new_trace(backend: Backend) -> None:
    uri = backend.store.canonical(backend.new_uri())
    backend.store.create(uri, _state(uri, seq=0), TREE)
    with backend.store.transaction(uri) as tx:
        tx.commit(dict(tx.state, seq=2), [_entry(0), _entry(1)])
    with backend.store.transaction(uri) as tx:
        tx.commit(dict(tx.state, seq=3), [_entry(2)], reset_trace=True)
    with backend.store.transaction(uri) as tx:
        tx.commit(dict(tx.state, seq=4), [_entry(3)])
    assert [e["seq"] for e in backend.store.read_tail(uri, 0)[1]] == [2, 3]
    assert [e["seq"] for e in backend.store.read_tail(uri, 3)[1]] == [3]
