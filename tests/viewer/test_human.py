"""A person answers a human step from the viewer: the Approve / Reject buttons in a real browser,
and the one write the server takes, refused to anything but its own page. Also the slider's
"Fork from here"."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from support.trees import SIGN_OFF_YAML
from tether.errors import TetherError
from viewer.driver import ARTIFACTS, TETHER, ViewServer, answer, tether


@pytest.fixture
def waiting(runs: Path, tmp_path: Path) -> Path:
    """An execution whose human step Sign_Off is open (beside the agent's Lint)."""
    tree = tmp_path / "sign-off.yaml"
    tree.write_text(SIGN_OFF_YAML)
    run = runs / "ship.json"
    tether("start", tree, run)
    answer(run, "submit", "success")
    human = answer(run, "submit", "success", "--set", "notes=faster builds")["next"]
    assert human["type"] == "human"
    return run


def _token(server: ViewServer) -> str:
    with urllib.request.urlopen(server.base, timeout=10) as response:
        page = response.read().decode()
    found = re.search(r'<meta name="tether-token" content="([^"]+)">', page)
    assert found and found.group(1) != "{{tether-token}}"
    return found.group(1)


def _post(
    server: ViewServer,
    body: Any,
    *,
    token: str | None,
    origin: str | None,
    host: str | None = None,
    path: str = "/api/human",
    kind: str = "application/json",
    cookie: str | None = "the person's",
) -> tuple[int, Any]:
    """POST as the person's browser does (with the cookie the one-time link gave it), or with
    what the arguments change."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(server.base + path.lstrip("/"), data=data, method="POST")
    request.add_header("Content-Type", kind)
    cookie = server.cookie() if cookie == "the person's" else cookie
    headers = (("X-Tether-Token", token), ("Origin", origin), ("Host", host), ("Cookie", cookie))
    for name, value in headers:
        if value is not None:
            request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_posts_from_anywhere_but_the_page_are_refused_and_change_nothing(
    server: ViewServer, waiting: Path, tmp_path: Path
) -> None:
    token = _token(server)
    origin = server.base.rstrip("/")
    port = origin.rsplit(":", 1)[1]
    before = answer(waiting, "get")
    body = {"path": "ship.json", "decision": "approve", "note": "sneaky"}
    outside = tmp_path / "outside.json"
    tether("start", tmp_path / "sign-off.yaml", outside)
    outside_before = answer(outside, "get")
    for args, status, code in (
        ({"token": None, "origin": origin}, 403, "forbidden"),
        ({"token": token, "origin": origin, "cookie": None}, 403, "forbidden"),
        ({"token": token, "origin": origin, "cookie": "tether_person=guessed"}, 403, "forbidden"),
        ({"token": "guessed", "origin": origin}, 403, "forbidden"),
        ({"token": token, "origin": None}, 403, "forbidden"),
        ({"token": token, "origin": "http://evil.example"}, 403, "forbidden"),
        ({"token": token, "origin": f"http://127.0.0.1:{int(port) + 1}"}, 403, "forbidden"),
        ({"token": token, "origin": origin, "host": f"evil.example:{port}"}, 403, "forbidden"),
        ({"token": token, "origin": origin, "kind": "text/plain"}, 400, "invalid_value"),
        ({"token": token, "origin": origin, "path": "/api/run"}, 404, "not_found"),
    ):
        got = _post(server, body, **args)  # type: ignore[arg-type]
        assert (got[0], got[1]["error"]["code"]) == (status, code), args
    for bad, status, code in (
        ({**body, "path": "../outside.json"}, 403, "forbidden"),
        ({**body, "path": str(outside)}, 403, "forbidden"),
        ({**body, "path": "missing.json"}, 404, "not_found"),
        ({**body, "decision": "maybe"}, 400, "usage"),
        ({**body, "by": "cli"}, 400, "usage"),
        ({**body, "note": 5}, 400, "usage"),
        ({**body, "step": "1.0:0:0:9:00000000"}, 409, "stale_step"),
        (b"{not json", 400, "invalid_json"),
        ({**body, "note": "x" * 20000}, 400, "invalid_value"),
    ):
        got = _post(server, bad, token=token, origin=origin)
        assert (got[0], got[1]["error"]["code"]) == (status, code), bad
    assert answer(waiting, "get") == before
    assert answer(outside, "get") == outside_before


def test_a_post_that_does_not_declare_its_length_is_refused_unread(
    server: ViewServer, waiting: Path
) -> None:
    origin = server.base.rstrip("/")
    host, port = urllib.parse.urlsplit(origin).netloc.split(":")
    before = answer(waiting, "get")
    body = json.dumps({"path": "ship.json", "decision": "approve"}).encode()
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {
        "Content-Type": "application/json",
        "Origin": origin,
        "X-Tether-Token": _token(server),
    }
    connection.request("POST", "/api/human", body=iter([body]), headers=headers)  # chunked
    response = connection.getresponse()
    refused = json.loads(response.read())
    connection.close()
    assert (response.status, refused["error"]["code"]) == (400, "invalid_value")
    assert "Content-Length" in refused["error"]["message"]
    assert answer(waiting, "get") == before


def test_a_post_from_the_page_answers_and_a_second_one_is_refused(
    server: ViewServer, waiting: Path
) -> None:
    token = _token(server)
    origin = server.base.rstrip("/")
    status, done = _post(
        server, {"path": "ship.json", "decision": "approve"}, token=token, origin=origin
    )
    assert status == 200 and done["status"] == "approved"
    assert done["next"]["name"] == "Lint"
    status, again = _post(
        server, {"path": "ship.json", "decision": "reject"}, token=token, origin=origin
    )
    assert (status, again["error"]["code"]) == (409, "wrong_phase")
    entry = answer(waiting, "trace")[-1]
    assert (entry["kind"], entry["outcome"], entry["by"]) == ("human", "success", "viewer")


def test_each_viewer_has_its_own_token(runs: Path, waiting: Path) -> None:
    first, second = ViewServer(runs), ViewServer(runs)
    try:
        token = _token(first)
        assert token != _token(second)
        origin = second.base.rstrip("/")
        status, refused = _post(
            second, {"path": "ship.json", "decision": "approve"}, token=token, origin=origin
        )
        assert (status, refused["error"]["code"]) == (403, "forbidden")
    finally:
        assert first.stop() == 0 and second.stop() == 0


def test_a_person_rejects_from_the_page_in_a_browser(
    page: Page, server: ViewServer, waiting: Path
) -> None:
    server.sign_in(page)
    page.goto(server.base + "?run=ship.json")
    panel = page.locator("#human")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Waiting for a person")
    expect(panel).to_contain_text("Read the release notes. Approve to publish.")
    page.screenshot(path=ARTIFACTS / "human.png")
    # The agent answers its own branch meanwhile: the panel and the note being typed stay.
    panel.locator("textarea").fill("The notes promise too much.")
    lint = answer(waiting, "next", "--all")[1]
    answer(waiting, "submit", "success", "--step", lint["step"])
    expect(page.locator("#timeline li")).to_have_count(len(answer(waiting, "trace")))
    expect(panel.locator("textarea")).to_have_value("The notes promise too much.")
    panel.locator("button", has_text="Reject").click()
    expect(panel).to_be_hidden()
    expect(page.locator("#timeline li[data-kind='human']")).to_contain_text("failure")
    expect(page.locator("#run-facts")).to_contain_text("failed")
    entry = answer(waiting, "trace")[-1]
    assert (entry["kind"], entry["outcome"], entry["note"], entry["by"]) == (
        "human",
        "failure",
        "The notes promise too much.",
        "viewer",
    )
    assert answer(waiting, "next")["status"] == "failure"
    assert answer(waiting, "verify")["ok"] is True


def test_fork_from_here_gives_the_command_for_that_point(
    page: Page, server: ViewServer, waiting: Path, runs: Path
) -> None:
    page.goto(server.base + "?run=ship.json&at=1")
    expect(page.locator("#position")).to_contain_text("after entry 1")
    page.locator("#fork").click()
    command = page.locator("#fork-command")
    expect(command).to_have_text("tether fork ship.json ship-fork-1.json --at 1")
    expect(page.locator("#human")).to_be_hidden()
    done = subprocess.run(
        [TETHER, *command.inner_text().split()[1:]], cwd=runs, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    forked = json.loads(done.stdout)
    assert forked["next"]["name"] == "Draft"
    assert answer(runs / "ship-fork-1.json", "verify")["ok"] is True


def test_fork_from_here_quotes_a_name_the_shell_would_split(
    page: Page, server: ViewServer, waiting: Path, runs: Path
) -> None:
    """Pasting the command forks the execution named `x;touch${IFS}PWNED;.json`; nothing
    else runs."""
    odd = runs / "x;touch${IFS}PWNED;.json"
    tether("fork", waiting, odd, "--at", str(len(answer(waiting, "trace"))))
    page.goto(server.base + "?run=" + urllib.parse.quote(odd.name) + "&at=1")
    expect(page.locator("#position")).to_contain_text("after entry 1")
    page.locator("#fork").click()
    command = page.locator("#fork-command")
    expect(command).to_contain_text("tether fork 'x;touch${IFS}PWNED;.json'")
    line = command.inner_text().replace("tether ", f"{TETHER} ", 1)
    done = subprocess.run(["bash", "-c", line], cwd=runs, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not (runs / "PWNED").exists()
    assert answer(runs / "x;touch${IFS}PWNED;-fork-1.json", "verify")["ok"] is True


def test_an_agent_that_reads_the_token_from_the_page_answers_nothing(
    server: ViewServer, waiting: Path
) -> None:
    """The page is this user's to read, token and all: an agent's shell fetches it and posts
    the answer with the right Origin, as `curl` does, and (as if it had read the browser's
    cookie store) the person's cookie. The viewer finds the process behind the connection,
    sees the harness's mark on it, and the verbs refuse."""
    before = answer(waiting, "get")
    base = server.base.rstrip("/")
    script = (
        f'token=$(curl -s {base}/ | sed -n \'s/.*tether-token" content="\\([^"]*\\)".*/\\1/p\'); '
        f"curl -s -H 'Origin: {base}' -H \"X-Tether-Token: $token\" "
        f"-H 'Cookie: {server.cookie()}' "
        "-H 'Content-Type: application/json' "
        f'-d \'{{"path": "ship.json", "decision": "approve"}}\' {base}/api/human'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "CLAUDECODE": "1"},
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
    )
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "human_only" and "runs under an agent" in error["message"]
    assert "carries CLAUDECODE" in error["message"]
    assert answer(waiting, "get") == before


def test_the_page_shows_what_the_prompt_names_and_an_answer_to_old_values_is_stale(
    page: Page, server: ViewServer, runs: Path, tmp_path: Path
) -> None:
    tree = tmp_path / "publish.yaml"
    tree.write_text(
        SIGN_OFF_YAML.replace(
            "Read the release notes. Approve to publish.", "Publish the notes $VAR.notes?"
        )
    )
    run = runs / "publish.json"
    tether("start", tree, run)
    answer(run, "submit", "success")
    answer(run, "submit", "success", "--set", "notes=faster builds")
    server.sign_in(page)
    page.goto(server.base + "?run=publish.json")
    panel = page.locator("#human")
    expect(panel.locator("dl.shows")).to_contain_text('$VAR.notes"faster builds"')
    shown = answer(run, "next", "--all")[0]
    # The agent rewrites the notes while the person reads: the page shows the new text, and an
    # answer given to the old text (its token) is refused.
    lint = answer(run, "next", "--all")[1]
    answer(run, "var", "notes", "every build is instant", "--step", lint["step"])
    expect(panel.locator("dl.shows")).to_contain_text('"every build is instant"')
    status, stale = _post(
        server,
        {"path": "publish.json", "decision": "approve", "step": shown["step"]},
        token=_token(server),
        origin=server.base.rstrip("/"),
    )
    assert (status, stale["error"]["code"]) == (409, "stale_step")
    panel.locator("button", has_text="Approve").click()
    expect(panel).to_be_hidden()
    entry = answer(run, "trace")[-1]
    assert (entry["kind"], entry["outcome"]) == ("human", "success")
    assert entry["shown"] == {"$VAR.notes": "every build is instant"}
    assert answer(run, "verify")["ok"] is True


def test_r1_a_sender_that_cannot_be_found_is_refused(server: ViewServer, waiting: Path) -> None:
    """The agent reads the token from the page, posts with the right Origin (and, as if it had
    read the browser's cookie store, the person's cookie) and exits at once (`os._exit(0)`, the
    answer unread): the viewer may find no process behind the connection, and then refuses
    (fail closed) rather than take the answer as a person's."""
    from tether.viewer.place import Place

    with pytest.raises(TetherError, match="cannot be found") as refused:
        Place(str(waiting.parent)).answer_human({"path": "ship.json", "decision": "approve"})
    assert refused.value.code == "human_only"
    base = server.base.rstrip("/")
    script = f"""
import os, re, socket, urllib.request
page = urllib.request.urlopen({base!r} + "/").read().decode()
token = re.search(r'tether-token" content="([^"]+)"', page).group(1)
body = b'{{"path": "ship.json", "decision": "approve"}}'
host, port = {base!r}.rsplit("/", 1)[1].split(":")
sock = socket.create_connection((host, int(port)))
sock.sendall(("POST /api/human HTTP/1.1\\r\\nHost: " + host + ":" + port + "\\r\\nOrigin: "
    + {base!r} + "\\r\\nCookie: " + {server.cookie()!r}
    + {base!r} + "\\r\\nX-Tether-Token: " + token + "\\r\\nContent-Type: application/json"
    + "\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body)).encode() + body)
os._exit(0)
"""
    for _ in range(5):
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "CLAUDECODE": "1"},
            start_new_session=True,
            timeout=60,
            check=True,
        )
    # whatever each post met (a sender found and marked, or none found), none answered: a
    # person's answer from the page, sent after them, is the first the execution records
    status, done = _post(
        server, {"path": "ship.json", "decision": "reject"}, token=_token(server), origin=base
    )
    assert (status, done["status"]) == (200, "rejected"), done
    entries = [e for e in answer(waiting, "trace") if e["kind"] == "human"]
    assert [e["outcome"] for e in entries] == ["failure"], entries


def test_r1_the_person_secret_is_shown_only_at_the_terminal_and_once(
    server: ViewServer, waiting: Path
) -> None:
    """What an agent's commands can read of a viewer the person started: its printed address
    and every page and asset. None holds the one-time key, and a post with the page's token
    but no person's cookie is refused; the link works once."""
    key = server.link.split("key=", 1)[1]
    assert key not in json.dumps(server.address)
    for path in ("", "static/app.js", "api/runs"):
        with urllib.request.urlopen(server.base + path, timeout=10) as response:
            assert key.encode() not in response.read(), path
    base = server.base.rstrip("/")
    body = {"path": "ship.json", "decision": "approve"}
    status, refused = _post(server, body, token=_token(server), origin=base, cookie=None)
    assert (status, refused["error"]["code"]) == (403, "forbidden")
    assert "one-time link" in refused["error"]["message"]
    assert server.cookie().startswith("tether_person=")
    try:
        urllib.request.urlopen(server.link, timeout=10)
        raise AssertionError("the link was taken twice")
    except urllib.error.HTTPError as err:
        assert err.code == 403 and "used already" in json.loads(err.read())["error"]["message"]
    assert [e for e in answer(waiting, "trace") if e["kind"] == "human"] == []


def test_a_viewer_without_a_terminal_answers_nothing(runs: Path, waiting: Path) -> None:
    """Started where no person sees it (no terminal: an agent's shell), the viewer says so in
    its address and no page can answer."""
    done = subprocess.Popen(
        [TETHER, "view", str(runs)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    try:
        assert done.stdout is not None
        text = ""
        for line in done.stdout:
            text += line
            if line.rstrip() == "}":
                break
        assert json.loads(text)["answers"].startswith("off: tether view has no terminal")
    finally:
        done.terminate()
        done.wait(timeout=10)
        if done.stdout is not None:
            done.stdout.close()


def test_r1_a_wrong_key_does_not_use_the_link_up(server: ViewServer, waiting: Path) -> None:
    """An agent that knocks at `/person` with keys of its own neither gets the cookie nor
    spends the person's link."""
    base = server.base.rstrip("/")
    for key in ("", "guessed", server.link.split("key=", 1)[1][:-1]):
        try:
            urllib.request.urlopen(f"{base}/person?key={key}", timeout=10)
            raise AssertionError(f"the key {key!r} was taken")
        except urllib.error.HTTPError as err:
            assert err.code == 403
    assert server.cookie().startswith("tether_person=")
