"""Helpers for the viewer tests: the real `tether` command, run as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ARTIFACTS = REPO / "artifacts" / "viewer"
TETHER = str(Path(sys.executable).parent / "tether")


def tether(*args: str | Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    """Run the `tether` command; fail the test unless it exits with `code`."""
    done = subprocess.run(
        [TETHER, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return done


def answer(run: Path, *args: str) -> Any:
    """Run a verb on `run` (`answer(run, "submit", "success")`) and return its JSON result."""
    return json.loads(tether(*args[:1], run, *args[1:]).stdout)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class ViewServer:
    """`tether view TARGET` (a folder, an execution, a database URI) running in its own process,
    as a user starts it."""

    def __init__(self, target: Path | str) -> None:
        self.process = subprocess.Popen(
            [TETHER, "view", str(target)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        lines = []
        for line in self.process.stdout:
            lines.append(line)
            if line.rstrip() == "}":
                break
        self.address = json.loads("".join(lines))
        self.url: str = self.address["url"]
        self.base = self.url.split("?")[0]

    def get(self, path: str, host: str | None = None) -> tuple[int, Any]:
        """GET `path` from the server: the status and the decoded JSON body."""
        request = urllib.request.Request(self.base + path.lstrip("/"))
        if host is not None:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=10)


def mark_document(page: Page) -> None:
    """Leave a mark in the page's document; it survives updates but not a reload."""
    page.evaluate("document.body.dataset.mark = 'same page'")


def same_document(page: Page) -> None:
    assert page.evaluate("document.body.dataset.mark") == "same page", "the page reloaded"
