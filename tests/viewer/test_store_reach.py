"""The viewer reaches no store the page names: an execution the page asks for by a database URI
is looked for inside the place the viewer serves (a file name in its folder), and a listener
playing a PostgreSQL server (`support.listener`) sees no connection."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from support.listener import Listener
from viewer.driver import ViewServer


def test_a_page_naming_a_database_reaches_no_host(runs: Path, hello: Path) -> None:
    with Listener() as listener:
        view = ViewServer(runs)
        try:
            for uri in (
                f"postgresql://victim@127.0.0.1:{listener.port}/db#run",
                f"postgres:///db?host=127.0.0.1&port={listener.port}#run",
            ):
                status, body = view.get(f"/api/run?path={quote(uri, safe='')}")
                assert status == 404 and body["error"]["code"] == "not_found", body
            assert view.get("/api/runs")[0] == 200
        finally:
            assert view.stop() == 0
        time.sleep(0.3)
        assert listener.connections == 0 and listener.received == b""
