"""The viewer on a PostgreSQL execution: `tether show` and a live `tether view URI`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from support.postgres import PostgresServer
from tether.verbs import Runtime

TETHER = str(Path(sys.executable).parent / "tether")
HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def _get(base: str, path: str) -> object:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.loads(response.read())


def test_view_and_show_follow_an_execution_in_the_database(
    server: PostgresServer, new_name: Callable[[], str]
) -> None:
    uri = server.uri(new_name())
    rt = Runtime()
    rt.start(HELLO, uri)
    rt.submit(uri, "success")
    shown = subprocess.run(
        [TETHER, "show", uri, "--no-color"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "Determine_Time" in shown and "open" in shown

    view = subprocess.Popen([TETHER, "view", uri, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert view.stdout is not None
        lines = []
        for line in view.stdout:
            lines.append(line)
            if line.rstrip() == "}":
                break
        address = json.loads("".join(lines))
        base = address["url"].split("?")[0]
        assert address["executions"] == 1
        assert parse_qs(urlsplit(address["url"]).query)["run"] == [uri], "the page opens it"
        runs = _get(base, "api/runs")
        assert isinstance(runs, dict)
        assert [(r["path"], r["status"]) for r in runs["runs"]] == [(uri, "running")]
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(base, "api/run?path=" + quote(uri + "-other", safe=""))
        assert refused.value.code == 403, "a URI viewer serves its one execution only"
        run = _get(base, "api/run?path=" + quote(uri, safe=""))
        assert isinstance(run, dict) and run["snapshot"]["open_keys"] == ["0"]
        with urllib.request.urlopen(
            base + "api/events?path=" + quote(uri, safe=""), timeout=10
        ) as stream:
            first = json.loads(stream.readline().decode()[len("data: ") :])
            stream.readline()
            rt.var_write(uri, "time_of_day", "evening")
            committed = time.monotonic()
            second = json.loads(stream.readline().decode()[len("data: ") :])
            elapsed = time.monotonic() - committed
        assert second["value"] == first["value"] + 1
        assert elapsed < 1.0
    finally:
        view.terminate()
        view.wait(timeout=10)
