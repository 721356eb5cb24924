"""The viewer's server over plain HTTP: what it lists and serves, what it refuses, and the
events it pushes when the CLI commits."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from support.hosts import FOREIGN_HOSTS
from viewer.driver import EXAMPLES, ViewServer, answer, tether


def _forbidden(server: ViewServer, path: str) -> str:
    status, body = server.get(path)
    assert status == 403, (path, body)
    assert body["error"]["code"] == "forbidden"
    return str(body["error"]["message"])


def test_listing_summarises_each_execution(server: ViewServer, hello: Path, runs: Path) -> None:
    (runs / "nested").mkdir()
    tether("start", EXAMPLES / "deploy.yaml", runs / "nested" / "deploy.json")
    (runs / "notes.json").write_text("{}")
    status, listing = server.get("/api/runs")
    assert status == 200
    assert listing["folder"] == "runs"
    rows = {r["path"]: r for r in listing["runs"]}
    assert set(rows) == {"hello.json", "nested/deploy.json"}
    assert rows["hello.json"]["tree"] == "hello-world"
    assert rows["hello.json"]["phase"] == "evaluating"
    assert rows["hello.json"]["progress"] == {"settled": 1, "actions": 5}
    assert rows["hello.json"]["entries"] == 3
    assert rows["hello.json"]["open_step"] == {"name": "Morning_Greeting", "type": "evaluate"}
    assert rows["nested/deploy.json"]["phase"] == "protocol"


def test_run_document_and_an_earlier_snapshot(server: ViewServer, hello: Path) -> None:
    status, doc = server.get("/api/run?path=hello.json")
    assert status == 200
    assert [n["name"] for n in doc["nodes"]][:2] == ["Hello_World", "Determine_Time"]
    assert doc["total"] == 3 and len(doc["trace"]) == 3
    assert doc["snapshot"]["open_keys"] == ["1.0"]
    assert doc["snapshot"]["var"]["time_of_day"] == "evening"
    assert 'data-key="1.0"' in doc["svg"]
    status, past = server.get("/api/run?path=hello.json&at=1")
    assert past["snapshot"]["open_keys"] == ["0"]
    assert past["snapshot"]["var"]["time_of_day"] is None
    last = doc["trace"][-1]["seq"]
    status, tail = server.get(f"/api/run?path=hello.json&since=3&last_seq={last}")
    assert (tail["trace_offset"], tail["trace"]) == (3, [])
    status, whole = server.get("/api/run?path=hello.json&since=3&last_seq=99")
    assert (whole["trace_offset"], len(whole["trace"])) == (0, 3), "a stale tail resends all"


def test_paths_outside_the_folder_are_refused(
    server: ViewServer, hello: Path, runs: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tether("start", EXAMPLES / "hello-world.yaml", outside / "secret.json")
    _forbidden(server, "/api/run?path=../outside/secret.json")
    _forbidden(server, "/api/run?path=" + quote(str(outside / "secret.json")))
    _forbidden(server, "/api/run?path=nested/../../outside/secret.json")
    _forbidden(server, "/api/events?path=../outside/secret.json")
    os.symlink(outside / "secret.json", runs / "link.json")
    os.symlink(outside / "secret.json.tree.json", runs / "link.json.tree.json")
    assert "outside" in _forbidden(server, "/api/run?path=link.json")
    os.symlink(outside, runs / "door")
    _forbidden(server, "/api/run?path=door/secret.json")
    _, listing = server.get("/api/runs")
    (row,) = [r for r in listing["runs"] if r["path"] == "link.json"]
    assert "symbolic link" in row["error"] and "tree" not in row, "the store refuses the link"
    assert server.get("/api/run?path=hello.json", host="attacker.example:80")[0] == 403


def test_a_symlink_that_stays_inside_is_served(server: ViewServer, hello: Path, runs: Path) -> None:
    (runs / "alias").symlink_to(runs)
    status, doc = server.get("/api/run?path=alias/hello.json")
    assert status == 200 and doc["tree"]["name"] == "hello-world"


def test_a_state_file_naming_a_trace_outside_is_refused(
    server: ViewServer, hello: Path, runs: Path, tmp_path: Path
) -> None:
    state = json.loads(hello.read_text())
    (tmp_path / "elsewhere.jsonl").write_text('{"secret": "outside"}\n')
    state["trace"] = {"file": "../elsewhere.jsonl", "entries": 1, "bytes": 22}
    (runs / "forged.json").write_text(json.dumps(state))
    (runs / "forged.json.tree.json").write_text((runs / "hello.json.tree.json").read_text())
    status, body = server.get("/api/run?path=forged.json")
    assert (status, body["error"]["code"]) == (409, "corrupt_execution")
    assert "secret" not in json.dumps(body)
    _, listing = server.get("/api/runs")
    rows = {r["path"]: r for r in listing["runs"]}
    assert "elsewhere.jsonl" in rows["forged.json"]["error"]
    assert rows["hello.json"]["tree"] == "hello-world"


def test_unknown_things_are_not_found(server: ViewServer, hello: Path) -> None:
    assert server.get("/api/run?path=missing.json")[0] == 404
    assert server.get("/static/../server.py")[0] == 404
    assert server.get("/static/model.py")[0] == 404
    assert server.get("/api/run?path=hello.json&at=-1")[0] == 400


def test_page_and_assets_come_from_the_package(server: ViewServer) -> None:
    with urllib.request.urlopen(server.base, timeout=10) as response:
        html = response.read().decode()
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert '<script src="/static/app.js"' in html
    assert "http" not in html.replace("http://www.w3.org/2000/svg", ""), "no remote assets"
    for asset in ("app.js", "style.css"):
        with urllib.request.urlopen(server.base + "static/" + asset, timeout=10) as response:
            assert response.status == 200
            assert b"https://" not in response.read()


def test_an_event_follows_each_commit(server: ViewServer, hello: Path) -> None:
    """How soon is measured by bench/viewer_bench.py."""
    url = server.base + "api/events?path=hello.json"
    with urllib.request.urlopen(url, timeout=10) as stream:
        assert stream.headers["Content-Type"] == "text/event-stream"
        first = stream.readline()
        assert json.loads(first.decode()[len("data: ") :]) == {"value": 3}
        assert stream.readline() == b"\n"
        answer(hello, "eval", "false")
        line = stream.readline()
    assert json.loads(line.decode()[len("data: ") :]) == {"value": 4}


def test_view_of_one_execution_opens_it(hello: Path) -> None:
    view = ViewServer(hello)
    try:
        assert view.url.endswith("/?run=hello.json")
        assert view.address["executions"] == 1
    finally:
        assert view.stop() == 0


def test_view_refuses_a_missing_folder_and_a_bad_port(tmp_path: Path) -> None:
    err = json.loads(tether("view", tmp_path / "nowhere", code=4).stderr)
    assert err["error"]["code"] == "not_found"
    err = json.loads(tether("view", tmp_path, "--port", "http", code=2).stderr)
    assert err["error"]["code"] == "usage"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        err = json.loads(tether("view", tmp_path, "--port", str(port), code=2).stderr)
    assert err["error"]["code"] == "usage", "a port in use is refused as the MCP server does"
    assert f"cannot listen on 127.0.0.1:{port}" in err["error"]["message"]


def test_an_execution_that_cannot_be_shown_has_its_own_row(
    server: ViewServer, hello: Path, runs: Path
) -> None:
    tether("start", EXAMPLES / "hello-world.yaml", runs / "rootless.json")
    tree = json.loads((runs / "rootless.json.tree.json").read_text())
    del tree["root"]
    (runs / "rootless.json.tree.json").write_text(json.dumps(tree))
    (runs / "garbled.json").write_text("{not json")
    (runs / "garbled.json.tree.json").write_text("{}")
    status, listing = server.get("/api/runs")
    assert status == 200
    rows = {r["path"]: r for r in listing["runs"]}
    assert set(rows) == {"hello.json", "rootless.json", "garbled.json"}
    assert rows["hello.json"]["tree"] == "hello-world" and "error" not in rows["hello.json"]
    assert "malformed" in rows["rootless.json"]["error"] and "tree" not in rows["rootless.json"]
    assert "not JSON" in rows["garbled.json"]["error"]
    status, body = server.get("/api/run?path=rootless.json")
    assert (status, body["error"]["code"]) == (409, "corrupt_execution")
    assert server.get("/api/run?path=hello.json")[0] == 200


def test_sidecars_are_read_by_the_store_rules(
    server: ViewServer, hello: Path, runs: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.jsonl").write_text('{"submitted": "TOP-SECRET"}\n')
    tether("start", EXAMPLES / "hello-world.yaml", runs / "linked.json")
    (runs / "linked.json.trace.jsonl").unlink()
    (runs / "linked.json.trace.jsonl").symlink_to(tmp_path / "secret.jsonl")
    state = json.loads((runs / "linked.json").read_text())
    state["trace"].update(entries=1, bytes=len('{"submitted": "TOP-SECRET"}\n'))
    (runs / "linked.json").write_text(json.dumps(state))
    status, body = server.get("/api/run?path=linked.json")
    assert (status, body["error"]["code"]) == (409, "corrupt_execution")
    assert "symbolic link" in body["error"]["message"] and "TOP-SECRET" not in json.dumps(body)
    _, listing = server.get("/api/runs")
    assert "TOP-SECRET" not in json.dumps(listing)
    assert (tmp_path / "secret.jsonl").read_text() == '{"submitted": "TOP-SECRET"}\n'


def test_a_linked_state_file_is_refused_even_when_it_stays_inside(
    server: ViewServer, hello: Path, runs: Path
) -> None:
    (runs / "alias.json").symlink_to(hello)
    (runs / "alias.json.tree.json").symlink_to(runs / "hello.json.tree.json")
    status, body = server.get("/api/run?path=alias.json")
    assert (status, body["error"]["code"]) == (409, "corrupt_execution")
    assert "symbolic link" in body["error"]["message"]
    _, listing = server.get("/api/runs")
    rows = {r["path"]: r for r in listing["runs"]}
    assert "symbolic link" in rows["alias.json"]["error"] and "tree" not in rows["alias.json"]
    assert rows["hello.json"]["tree"] == "hello-world"
    with urllib.request.urlopen(server.base + "api/events?path=alias.json", timeout=10) as stream:
        assert json.loads(stream.readline().decode()[len("data: ") :]) == {"value": None}


def _value(stream: Any) -> Any:
    """The value of the next event on an open stream (its blank line read too)."""
    line = stream.readline()
    assert stream.readline() == b"\n"
    return json.loads(line.decode()[len("data: ") :])["value"]


def test_every_page_hears_a_commit(server: ViewServer, hello: Path, runs: Path) -> None:
    """One watcher reads for all the pages: each stream, on the execution or the listing, gets
    the commit."""
    with ExitStack() as streams:
        followers = [
            streams.enter_context(
                urllib.request.urlopen(server.base + "api/events?path=hello.json", timeout=10)
            )
            for _ in range(4)
        ]
        listings = [
            streams.enter_context(urllib.request.urlopen(server.base + "api/events", timeout=10))
            for _ in range(2)
        ]
        assert [_value(s) for s in followers] == [3, 3, 3, 3]
        assert [_value(s) for s in listings] == [1, 1]
        answer(hello, "eval", "false")
        assert [_value(s) for s in followers] == [4, 4, 4, 4]
        assert [_value(s) for s in listings] == [1, 1], "the commit changed the listing"
        tether("start", EXAMPLES / "deploy.yaml", runs / "deploy.json")
        assert [_value(s) for s in listings] == [2, 2]


def test_requests_from_elsewhere_are_refused_by_the_shared_gate(
    server: ViewServer, hello: Path
) -> None:
    port = server.base.rstrip("/").rsplit(":", 1)[1]
    assert server.get("/api/runs", host=f"localhost:{port}")[0] == 200
    for host in (h.format(port=port) for h in FOREIGN_HOSTS):
        status, body = server.get("/api/runs", host=host)
        assert (status, body["error"]["code"]) == (403, "forbidden"), host
    request = urllib.request.Request(server.base + "api/runs")
    request.add_header("Origin", "http://evil.example")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert json.loads(refused.value.read())["error"]["code"] == "forbidden"
    assert "frame-ancestors 'none'" in refused.value.headers["Content-Security-Policy"]
    assert refused.value.headers["X-Content-Type-Options"] == "nosniff"


def test_fold_draws_a_subtree_folded_and_refuses_what_is_not_a_parent(
    server: ViewServer, hello: Path
) -> None:
    status, doc = server.get("/api/run?path=hello.json&fold=1")
    assert status == 200
    assert "Morning_Greeting" not in doc["svg"] and "Confirm_Greeting" in doc["svg"]
    assert 'class="fold folded holds-cursor" data-fold="1"' in doc["svg"]
    assert [n["name"] for n in doc["nodes"]][3] == "Morning_Greeting", "the nodes are all sent"
    status, past = server.get("/api/run?path=hello.json&at=1&fold=1")
    assert status == 200 and 'class="fold folded" data-fold="1"' in past["svg"]
    for fold in ("0", "9", "1,x", ","):
        status, body = server.get(f"/api/run?path=hello.json&fold={quote(fold)}")
        assert (status, body["error"]["code"]) == (400, "usage"), fold


def test_stopping_the_server_ends_open_streams_cleanly(hello: Path, runs: Path) -> None:
    view = ViewServer(runs)
    try:
        stream = urllib.request.urlopen(view.base + "api/events?path=hello.json", timeout=10)
        assert _value(stream) == 3
    finally:
        assert view.stop() == 0
    assert stream.read() == b"", "the stream ends as a complete response"
