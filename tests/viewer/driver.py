"""Helpers for the viewer tests: the real `tether` command, run as a user runs it."""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import termios
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

REPO = Path(__file__).resolve().parents[2]

# Every browser assertion waits for the state it asserts; this is only how long it waits before it
# calls the state missing. Playwright's default (5 s) failed on a busy 2-core machine while a
# page was still loading (CI, the Phoenix page's Events tab), so the bound is long: a page that
# is right passes as soon as it is, one that is wrong fails after this.
expect.set_options(timeout=30_000)
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
        # The person's terminal: the viewer shows its one-time link there, and only there.
        self._terminal, slave = os.openpty()
        self.process = subprocess.Popen(
            [TETHER, "view", str(target)],
            stdin=slave,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        assert self.process.stdout is not None
        lines = []
        for line in self.process.stdout:
            lines.append(line)
            if line.rstrip() == "}":
                break
        self.address = json.loads("".join(lines))
        self.url: str = self.address["url"]
        self.base = self.url.split("?")[0]
        shown = b""
        while b"\n" not in shown.partition(b"/person?key=")[2]:  # written before the address
            shown += os.read(self._terminal, 4096)
        found = re.search(rb"(http://\S+/person\?key=\S+)", shown)
        assert found, shown
        self.link = found.group(1).decode()
        self._cookie: str | None = None

    def cookie(self) -> str:
        """The person's cookie, as the browser that opens the one-time link gets it (the link
        is spent by the first call)."""
        if self._cookie is None:
            parts = urllib.parse.urlsplit(self.link)
            connection = http.client.HTTPConnection(parts.netloc, timeout=10)
            connection.request("GET", f"{parts.path}?{parts.query}")
            response = connection.getresponse()
            assert response.status == 303, response.read()
            self._cookie = response.getheader("Set-Cookie", "").split(";")[0]
            connection.close()
        return self._cookie

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

    def sign_in(self, page: Page) -> None:
        """The person opens the one-time link in the browser of `page`, which spends it; the
        cookie it gave is kept for `cookie`."""
        page.goto(self.link)
        (given,) = [c for c in page.context.cookies() if c["name"] == "tether_person"]
        assert given["httpOnly"], given
        self._cookie = f"tether_person={given['value']}"

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=10)
        finally:
            os.close(self._terminal)


def mark_document(page: Page) -> None:
    """Leave a mark in the page's document; it survives updates but not a reload."""
    page.evaluate("document.body.dataset.mark = 'same page'")


def same_document(page: Page) -> None:
    assert page.evaluate("document.body.dataset.mark") == "same page", "the page reloaded"
