"""Telling a person: where the events an execution's commits raise go, and their delivery.

Owns:
- the targets, all a person's own, never an execution's: those the runtime was given (the
  guard's configuration, `workflow.notify`, in a bound session's hooks; each a `command` or a
  `url`, and the `events` it is told of) and `TETHER_NOTIFY` in the committing process's
  environment (a URL, or a command line; every event). A tree cannot name one: a tree is what
  an agent may write, and a target runs a command or reaches the network from the process that
  commits (the guard's hook, outside the agent's sandbox);
- `send`, which the verb layer calls after each commit: the events that commit raised
  (`tether.inbox.raised`: `human`, `parked`, `timeout`, `finished`, `failed`), each made the JSON
  of `schema/notification.schema.json`, handed to a detached child (`tether.detached`), so that
  no step and no hook waits on a receiver;
- the child (`python -m tether.notify`): each target tried up to `TRIES` times, `TRY_SECONDS`
  each, `PAUSE_SECONDS` apart, targets at once; a command is given the JSON on its standard
  input (success: exit 0), a URL is POSTed it (success: a 2xx answer; `${NAME}` in the URL is
  the environment variable NAME, so a webhook's secret stays out of the tree); what still fails
  is written to the guard's error log (`tether.guardlog`, read by `tether guard log`), in the
  state folder of the process that committed.

It does not decide which events a commit raised (`tether.inbox` reads that, as it reads what
waits on a person), nor check the guard configuration's targets (`tether.guard.rules.config`).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays out of a step's start-up: this module is read at each commit
    from collections.abc import Sequence
    from typing import Any

EVENTS = ("human", "parked", "timeout", "finished", "failed")
ENVIRONMENT = "TETHER_NOTIFY"
VIEWER = "TETHER_VIEWER_URL"  # where the person's viewer is; events then carry a link to it
TRIES = 3
TRY_SECONDS = 5.0
PAUSE_SECONDS = 1.0


def targets(given: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets `given`, then `TETHER_NOTIFY`'s (a value starting `http://` or `https://` is
    a URL, any other a command line), each `{command | url, events}`. A `TETHER_NOTIFY` that
    cannot be split is `invalid_value`."""
    found = list(given)
    text = os.environ.get(ENVIRONMENT, "").strip()
    if text.startswith(("http://", "https://")):
        found.append({"url": text, "events": list(EVENTS)})
    elif text:
        try:
            found.append({"command": shlex.split(text), "events": list(EVENTS)})
        except ValueError as exc:
            from tether.errors import TetherError

            raise TetherError("invalid_value", f"{ENVIRONMENT} cannot be split: {exc}") from None
    return found


def jobs(
    given: list[dict[str, Any]], tree: dict[str, Any], events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each event raised by a commit of an execution of `tree` (its name and version added, and
    the viewer's link when `TETHER_VIEWER_URL` is set), paired with each target that takes it."""
    viewer = os.environ.get(VIEWER)
    made = [
        {**event, "tree": tree["name"], "version": tree["version"]}
        | ({"viewer": viewer.rstrip("/") + "/?inbox"} if viewer else {})
        for event in events
    ]
    return [
        {"target": target, "event": event}
        for target in given
        for event in made
        if event["event"] in target["events"]
    ]


def send(pairs: list[dict[str, Any]], log: str) -> None:
    """Hand the `jobs` to a detached child; returns at once. What cannot be delivered goes to
    the guard's error log in the state folder `log`."""
    if not pairs:
        return
    from tether import detached

    failed = detached.start(
        ["-m", "tether.notify"], json.dumps({"jobs": pairs, "log": log}).encode()
    )
    if failed is not None:
        for job in pairs:
            _log(job, f"the sender could not start: {failed}", log)


def _deliver(job: dict[str, Any], log: str) -> None:
    """Send one event to one target, trying up to `TRIES` times; log what still fails."""
    reason = ""
    for attempt in range(TRIES):
        if attempt:
            time.sleep(PAUSE_SECONDS)
        reason = _try(job["target"], json.dumps(job["event"]).encode())
        if not reason:
            return
    _log(job, f"{reason} (tried {TRIES} times)", log)


def _try(target: dict[str, Any], body: bytes) -> str:
    """One try; what went wrong, or "" when the target took the event."""
    import subprocess
    import urllib.request
    from string import Template

    try:
        if target.get("command"):
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


def _log(job: dict[str, Any], reason: str, log: str) -> None:
    from tether import guardlog
    from tether.store.tally import stamp

    target = job["target"]
    where = target.get("url") or shlex.join(target["command"])
    guardlog.record(
        log,
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

    given = json.loads(sys.stdin.buffer.read())
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda job: _deliver(job, given["log"]), given["jobs"]))


if __name__ == "__main__":
    _main()
