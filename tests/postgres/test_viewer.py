"""The viewer on a PostgreSQL database: `tether show` of one execution, and a live
`tether view` of the whole database that lists every execution and opens any of them."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from support.postgres import PostgresServer
from tether.verbs import Runtime
from viewer.driver import ViewServer

TETHER = str(Path(sys.executable).parent / "tether")
HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def _database(server: PostgresServer) -> str:
    name = f"view_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    return server.database_uri(name)


def _next_event(stream: Any) -> Any:
    """The value of the next event on an open event stream (its blank line read too)."""
    line = stream.readline()
    stream.readline()
    return json.loads(line.decode()[len("data: ") :])["value"]


def test_show_draws_an_execution_in_the_database(server: PostgresServer) -> None:
    uri = f"{_database(server)}#run"
    rt = Runtime()
    rt.start(HELLO, uri)
    rt.submit(uri, "success")
    shown = subprocess.run(
        [TETHER, "show", uri, "--no-color"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "Determine_Time" in shown and "open" in shown


def test_view_of_a_database_lists_every_execution_and_follows_one(
    server: PostgresServer,
) -> None:
    dsn = _database(server)
    rt = Runtime()
    for name in ("first", "second run"):
        rt.start(HELLO, f"{dsn}#{name}")
    rt.submit(f"{dsn}#first", "success")
    view = ViewServer(dsn)
    try:
        assert view.address["executions"] == 2 and "?" not in view.url
        status, listing = view.get("/api/runs")
        assert status == 200 and listing["folder"] == dsn
        rows = [(r["path"], r["status"], r["open_step"]["name"]) for r in listing["runs"]]
        assert rows == [
            ("first", "running", "Determine_Time"),
            ("second run", "running", "Acknowledge_Protocol"),
        ]
        status, run = view.get("/api/run?path=first")
        assert status == 200 and run["snapshot"]["open_keys"] == ["0"]
        assert view.get("/api/run?path=missing")[0] == 404
        elsewhere = quote("postgresql://tether@127.0.0.1:1/other#x", safe="")
        assert view.get(f"/api/run?path={elsewhere}")[0] == 404, (
            "a path is a name in this database, never another database"
        )

        with urllib.request.urlopen(view.base + "api/events", timeout=10) as listing_events:
            _next_event(listing_events)
            with urllib.request.urlopen(
                view.base + "api/events?path=" + quote("second run", safe=""), timeout=10
            ) as run_events:
                assert _next_event(run_events) == 0
                rt.submit(f"{dsn}#second run", "success")
                assert _next_event(run_events) == 1
            _next_event(listing_events)  # the commit changed the listing
            rt.start(HELLO, f"{dsn}#third")
            _next_event(listing_events)
        status, listing = view.get("/api/runs")
        assert [r["path"] for r in listing["runs"]] == ["first", "second run", "third"]
    finally:
        assert view.stop() == 0


def test_view_of_one_execution_serves_its_database_and_opens_it(server: PostgresServer) -> None:
    dsn = _database(server)
    rt = Runtime()
    for name in ("a", "b"):
        rt.start(HELLO, f"{dsn}#{name}")
    view = ViewServer(f"{dsn}#b")
    try:
        assert parse_qs(urlsplit(view.url).query)["run"] == ["b"], "the page opens it"
        assert view.address["executions"] == 2
        assert view.get("/api/run?path=a")[0] == 200
    finally:
        assert view.stop() == 0
    missing = subprocess.run(
        [TETHER, "view", f"{dsn}#missing"], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 4
    assert json.loads(missing.stderr)["error"]["code"] == "not_found"


def test_view_of_a_database_pages_filters_and_names_a_forks_source(
    server: PostgresServer, tmp_path: Path
) -> None:
    dsn = _database(server)
    rt = Runtime()
    for name in ("a", "b", "c"):
        rt.start(HELLO, f"{dsn}#{name}")
    rt.submit(f"{dsn}#a", "success")
    rt.fork(f"{dsn}#a", f"{dsn}#a-fork", at=1)
    rt.start(HELLO, str(tmp_path / "away.json"))
    rt.fork(str(tmp_path / "away.json"), f"{dsn}#from-a-folder", at=0)
    view = ViewServer(dsn)
    try:
        _, page = view.get("/api/runs?limit=2&offset=1")
        assert [r["path"] for r in page["runs"]] == ["a-fork", "b"] and page["total"] == 5
        _, page = view.get("/api/runs?tree=hello-world&status=complete")
        assert (page["runs"], page["total"]) == ([], 0)
        _, doc = view.get("/api/run?path=a-fork")
        assert doc["forked_from"] == {"uri": f"{dsn}#a", "at": 1, "path": "a"}
        _, doc = view.get("/api/run?path=from-a-folder")
        assert doc["forked_from"]["path"] is None and doc["forked_from"]["at"] == 0
        _, doc = view.get("/api/run?path=b")
        assert doc["forked_from"] is None
    finally:
        assert view.stop() == 0
