"""Telling a person: where the events an execution's commits raise go, and their delivery.

Owns:
- the targets of an execution: its tree's `notify` list (each a `command` or a `url`, and the
  `events` it is told of) and `TETHER_NOTIFY` in the committing process's environment (a
  URL, or a command line; every event);
- `send`, which the verb layer calls after each commit: the events that commit raised
  (`tether.inbox.raised`: `human`, `parked`, `timeout`, `finished`, `failed`), each made the JSON
  of `schema/notification.schema.json`, handed to a detached child (`tether.detached`), so that
  no step and no hook waits on a receiver;
- the child (`python -m tether.notify`): each target tried up to `TRIES` times, `TRY_SECONDS`
  each, `PAUSE_SECONDS` apart, targets at once; a command is given the JSON on its standard
  input (success: exit 0), a URL is POSTed it (success: a 2xx answer; `${NAME}` in the URL is
  the environment variable NAME, so a webhook's secret stays out of the tree); what still fails
  is written to the guard's error log (`tether.guardlog`, read by `tether guard log`).

It does not decide which events a commit raised (`tether.inbox` reads that, as it reads what
waits on a person), nor check a tree's `notify` (the tree loader does).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays out of a step's start-up: this module is read at each commit
    from typing import Any

EVENTS = ("human", "parked", "timeout", "finished", "failed")
ENVIRONMENT = "TETHER_NOTIFY"
VIEWER = "TETHER_VIEWER_URL"  # where the person's viewer is; events then carry a link to it
TRIES = 3
TRY_SECONDS = 5.0
PAUSE_SECONDS = 1.0


def wanted(tree: dict[str, Any]) -> bool:
    """Whether an execution of `tree` has anywhere to send events (the cheap test a commit
    makes before reading what it raised)."""
    return bool(tree.get("notify") or os.environ.get(ENVIRONMENT))


def targets(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The tree's targets, then `TETHER_NOTIFY`'s (a value starting `http://` or `https://` is
    a URL, any other a command line), each `{command | url, events}`."""
    found = list(tree.get("notify", ()))
    given = os.environ.get(ENVIRONMENT, "").strip()
    if given.startswith(("http://", "https://")):
        found.append({"url": given, "events": list(EVENTS)})
    elif given:
        found.append({"command": shlex.split(given), "events": list(EVENTS)})
    return found


def send(tree: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Hand `events` (raised by one commit of an execution of `tree`) to a detached child for
    the targets that take them; returns at once. A child that cannot start is logged."""
    viewer = os.environ.get(VIEWER)
    made = [
        {**event, "tree": tree["name"], "version": tree["version"]}
        | ({"viewer": viewer.rstrip("/") + "/?inbox"} if viewer else {})
        for event in events
    ]
    jobs = [
        {"target": target, "event": event}
        for target in targets(tree)
        for event in made
        if event["event"] in target["events"]
    ]
    if not jobs:
        return
    from tether import detached

    failed = detached.start(["-m", "tether.notify"], json.dumps(jobs).encode())
    if failed is not None:
        _log(jobs[0], f"the sender could not start: {failed}")


def _deliver(job: dict[str, Any]) -> None:
    """Send one event to one target, trying up to `TRIES` times; log what still fails."""
    reason = ""
    for attempt in range(TRIES):
        if attempt:
            time.sleep(PAUSE_SECONDS)
        reason = _try(job["target"], json.dumps(job["event"]).encode())
        if not reason:
            return
    _log(job, f"{reason} (tried {TRIES} times)")


def _try(target: dict[str, Any], body: bytes) -> str:
    """One try; what went wrong, or "" when the target took the event."""
    import subprocess
    import urllib.request
    from string import Template

    try:
        if "command" in target:
            done = subprocess.run(
                target["command"], input=body, timeout=TRY_SECONDS, capture_output=True
            )
            return f"exited with {done.returncode}" if done.returncode else ""
        url = Template(target["url"]).safe_substitute(os.environ)
        headers = {"Content-Type": "application/json", "User-Agent": "tether-notify"}
        request = urllib.request.Request(url, body, headers, method="POST")
        with urllib.request.urlopen(request, timeout=TRY_SECONDS):
            return ""  # urlopen raises for an answer outside 2xx and 3xx
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _log(job: dict[str, Any], reason: str) -> None:
    from tether import guardlog
    from tether.store.tally import stamp

    target = job["target"]
    where = target.get("url") or shlex.join(target["command"])
    guardlog.record(
        guardlog.default_state_dir(),
        {
            "ts": stamp(time.time()),
            "code": "notify_failed",
            "message": f"a {job['event']['event']} event for {job['event']['uri']} did not "
            f"reach {where}: {reason}",
            "event": job["event"],
        },
    )


def _main() -> None:
    from concurrent.futures import ThreadPoolExecutor

    jobs = json.loads(sys.stdin.buffer.read())
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(_deliver, jobs))


if __name__ == "__main__":
    _main()
