"""Benchmark: a fleet's view — each answer a dashboard gives over N executions, on the file store
and on PostgreSQL.

Owns one measurement per answer, in seconds (median of `--rounds`): `tether stats PLACE --json`
and `tether list PLACE --json`, whole and its first page (`--limit 50`; fresh processes, as a
person runs them), and, in process, what
the viewer's routes call: `/api/runs` first page (`Place.runs`, 50 rows), the overview
(`insight.overview`), one tree's heat map (`insight.heat`) and `/api/behind` for one action
(`insight.behind`); "idle tick" is what a viewer with the listing open reads each second while
nothing changes (`Place.listing_signature`). A fresh `Place` is made for each round, as a
viewer that just started. With `--browser` (Debian's chromium through Playwright), a real
`tether view PLACE` is started and a fresh page waits for the first row of the listing and the
first tree of the overview ("page, first row", "overview page"), and the viewer's resident
memory after them is read from /proc ("viewer RSS", MiB).

The executions are those of `bench/stats_bench.py` (a 33-action tree, 100 entries each, a tenth
failed, a tenth running, a tenth with refusals), written through the file store's own `create`
(`files`: over 100 sub-folders; `files-flat`: all in one folder, as `tether start TREE
runs/NAME.json` leaves them) and, on PostgreSQL, as the store's rows with COPY; then the
store is opened once through its API, by `tether list` in a fresh process ("first open"): the
rows COPY wrote are those of a database of schema version 2, whose summaries that first open
fills. Sizes are chosen with `--executions` (1,000 by default; 10,000 and 100,000 take minutes
to write).

    .venv/bin/python bench/fleet_bench.py [--executions 1000 10000] [--rounds 3]
        [--store files files-flat postgresql] [--browser]
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats_bench import TETHER, fill, templates
from support.postgres import PostgresServer
from tether.store import store_for
from tether.viewer import insight
from tether.viewer.place import Place

# "files": over 100 sub-folders, as a team's runs might be; "files-flat": all in one folder, as
# `tether start TREE runs/NAME.json` puts them.
STORES = ("files", "files-flat", "postgresql")
ANSWERS = (
    "tether stats",
    "tether list",
    "list page",
    "/api/runs",
    "overview",
    "heat map",
    "/api/behind",
    "idle tick",
)


def _cli(*args: str) -> Callable[[], Any]:
    def run() -> Any:
        done = subprocess.run([TETHER, *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        return json.loads(done.stdout)

    return run


def answers(place: str) -> dict[str, Callable[[], Any]]:
    """Each answer, as a call that makes it from nothing kept in process."""
    tree_hash = str(store_for(place).tally(place)["trees"][0]["hash"])
    return {
        "tether stats": _cli("stats", place, "--json"),
        "tether list": _cli("list", place, "--json"),
        "list page": _cli("list", place, "--limit", "50", "--json"),
        "/api/runs": lambda: Place(place).runs({"limit": "50"}),
        "overview": lambda: insight.overview(Place(place)),
        "heat map": lambda: insight.heat(Place(place), "bench", tree_hash, "failures"),
        "/api/behind": lambda: insight.behind(Place(place), "bench", tree_hash, "0", "failures"),
        "idle tick": Place(place).listing_signature,
    }


def _as_schema_2(database: str) -> None:
    """The database as a Tether of schema version 2 left it (its rows were written with COPY,
    past the store): without summaries, which its first open fills."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS tether_summaries")
        conn.execute("UPDATE tether_schema SET version = 2")


BROWSER = ("page, first row", "overview page", "viewer RSS")


def measure(place: str, rounds: int, browser: bool) -> dict[str, float]:
    calls = answers(place)
    if browser:
        calls.update(_pages(place))
    out = {}
    for name, call in calls.items():
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        out[name] = statistics.median(times)
    if browser:
        out["viewer RSS"] = _viewer_rss
        while _views:
            _views.pop().stop()
    return out


_viewer_rss = 0.0
_views: list[Any] = []  # the viewers `_pages` started, stopped once their place is measured


@functools.cache
def _browser() -> Any:
    """One Chromium for the run (Playwright's sync API starts once per process)."""
    from playwright.sync_api import sync_playwright

    from viewer.driver import CHROMIUM, CHROMIUM_ARGS

    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    atexit.register(lambda: (browser.close(), playwright.stop()))
    return browser


def _pages(place: str) -> dict[str, Callable[[], Any]]:
    """The two pages, each opened fresh in a real browser on a real `tether view PLACE`, up to
    the first row it shows; the viewer's memory is read after each."""
    from viewer.driver import ViewServer

    view = ViewServer(place)
    _views.append(view)

    def opened(suffix: str, first: str) -> Callable[[], None]:
        def run() -> None:
            global _viewer_rss
            page = _browser().new_page()
            page.goto(view.base + suffix)
            page.locator(first).first.wait_for(timeout=120_000)
            page.close()
            with open(f"/proc/{view.process.pid}/status") as status:
                kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
            _viewer_rss = kib / 1024

        return run

    return {
        "page, first row": opened("", "#runs tbody tr"),
        "overview page": opened("?overview", ".tree-card"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, nargs="+", default=[1_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", nargs="+", choices=STORES, default=["files", "postgresql"])
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tether-fleet-bench-") as tmp:
        root = Path(tmp)
        made = templates(root)
        server = PostgresServer(durable=True) if "postgresql" in args.store else None
        if server is not None:
            server.start()
        try:
            for count in args.executions:
                for label in args.store:
                    if label.startswith("files"):
                        place = str(root / f"{label}-{count}")
                        Path(place).mkdir()
                    else:
                        assert server is not None
                        server.create_database(f"fleet{count}")
                        place = server.database_uri(f"fleet{count}")
                    written = fill(place, count, made, spread=label != "files-flat")
                    if label == "postgresql":
                        _as_schema_2(place)
                    started = time.perf_counter()
                    _cli("list", place, "--json")()  # the first open: an upgrade happens here
                    opened = time.perf_counter() - started
                    rows.append(
                        (count, label, written, opened, measure(place, args.rounds, args.browser))
                    )
                    print(f"done: {count:,} on {label}", file=sys.stderr, flush=True)
        finally:
            if server is not None:
                server.close()
    shown = ANSWERS + (BROWSER if args.browser else ())
    print("| executions | store | written | first open | " + " | ".join(shown) + " |")
    print("|---" * (4 + len(shown)) + "|")
    for count, label, written, opened, times in rows:
        cells = " | ".join(f"{times[name]:.2f}" for name in shown)
        print(f"| {count:,} | {label} | {written:.1f} | {opened:.2f} | {cells} |")


if __name__ == "__main__":
    main()
