"""`tether inbox` on a folder and on PostgreSQL: a fleet with known waits (an open human step
with the values it shows, a parked execution, both with many tool calls since they moved, a
step refused many times in a row, and one that waits on nobody), their ages from a clock the
test sets, the table and `--json`."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import jsonschema
import pytest

from support.command import TETHER
from support.trees import PAIR, SIGN_OFF_YAML
from tether.errors import TetherError
from tether.inbox import table, waiting
from tether.verbs import Runtime

TREE = SIGN_OFF_YAML.replace(
    "Read the release notes. Approve to publish.", "Approve $VAR.notes to publish."
)
SCHEMA = json.loads((Path(__file__).parents[2] / "schema" / "inbox.schema.json").read_text())
T0 = 1_700_000_000.0  # the fleet's first minute, seconds since the epoch
ROLES = ("human", "parked", "refused", "busy", "lapsed")


def _role(wait: dict[str, object]) -> str:
    """The role of a wait's execution, whatever the place calls it (`human.json`, `human`)."""
    return str(wait["name"]).removesuffix(".json")


def _stamp(seconds: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(seconds))


@pytest.fixture(params=["file", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A place holding five executions, and their URIs by role."""
    (tmp_path / "sign-off.yaml").write_text(TREE)
    (tmp_path / "pair.json").write_text(json.dumps(PAIR))
    if request.param == "file":
        where = str(tmp_path / "runs")
        os.mkdir(where)
        uris = {role: f"{where}/{role}.json" for role in ROLES}
    else:
        from support.postgres import shared_server

        server, db = shared_server(), f"inbox_{uuid.uuid4().hex[:10]}"
        server.create_database(db)
        where = server.database_uri(db)
        uris = {role: server.uri(role, db) for role in ROLES}
    now = [T0]
    rt = Runtime(clock=lambda: _stamp(now[0]))
    tree = str(tmp_path / "sign-off.yaml")
    for role, uri in uris.items():
        rt.start(str(tmp_path / "pair.json") if role == "lapsed" else tree, uri)
        rt.submit(uri, "success")  # the protocol gate
    now[0] = T0 + 60
    rt.submit(uris["human"], "success", values={"notes": "faster builds"})
    rt.submit(uris["parked"], "success", values={"notes": "x"})
    rt.submit(uris["busy"], "success", values={"notes": "y"})
    now[0] = T0 + 600
    for _ in range(3):
        rt.stop(uris["parked"], cap=2, park="the agent kept stopping")
    for _ in range(100):  # read past: the inbox reads each trace back to its last move
        for role in ("human", "parked"):
            rt.record_tool(uris[role], "Read", {"file_path": "notes.md"}, ok=True)
    rt.claim(uris["lapsed"], "alice", lease=60)  # lapses at T0 + 660
    for _ in range(5):
        with pytest.raises(TetherError):
            rt.submit(uris["refused"], "success")  # Draft writes notes: refused without them
    return where, uris


def test_the_inbox_shows_each_wait_with_its_age(place: tuple[str, dict[str, str]]) -> None:
    where = place[0]
    found = waiting(where, now=T0 + 780)
    waits = {(w["kind"], _role(w)): w for w in found["waits"]}
    human = waits["human", "human"]
    assert human["step"] == "Sign_Off" and human["prompt"] == "Approve $VAR.notes to publish."
    assert human["shows"] == {"$VAR.notes": "faster builds"}
    assert human["age_seconds"] == 720  # opened at the Draft answer, a minute in
    assert human["approve"].startswith("tether approve ") and "--step" in human["approve"]
    parked = waits["parked", "parked"]
    assert parked["reason"] == "the agent kept stopping" and parked["age_seconds"] == 180
    refused = waits["refused", "refused"]
    assert refused["refusals"] == 5 and refused["step"] == "Draft"
    assert refused["age_seconds"] == 180
    assert [w["kind"] for w in found["waits"] if _role(w) == "busy"] == ["human"]
    lapsed = waits["lapsed", "lapsed"]
    assert (lapsed["agent"], lapsed["step"], lapsed["age_seconds"]) == ("alice", "Left", 120)
    assert ("lapsed", "lapsed") not in {
        (w["kind"], _role(w)) for w in waiting(where, now=T0 + 650)["waits"]
    }
    lines = table(found).splitlines()
    assert any(line.startswith("HUMAN") and "Sign_Off  12 min" in line for line in lines)
    assert any(line.startswith("PARKED") and "3 min" in line for line in lines)
    assert "    alice's claim lapsed: another agent may take it over" in lines
    assert ("refused", "refused") not in {
        (w["kind"], _role(w)) for w in waiting(where, now=T0 + 780, refused=6)["waits"]
    }


def test_the_command_prints_the_table_and_json(place: tuple[str, dict[str, str]]) -> None:
    where = place[0]
    done = subprocess.run(
        [TETHER, "inbox", where, "--json"], capture_output=True, text=True, check=True, timeout=60
    )
    printed = json.loads(done.stdout)
    jsonschema.validate(printed, SCHEMA)
    kinds = {(w["kind"], _role(w)) for w in printed["waits"]}
    assert {("human", "human"), ("parked", "parked"), ("refused", "refused")} <= kinds
    assert ("lapsed", "lapsed") in kinds
    table = subprocess.run(
        [TETHER, "inbox", where], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert (
        "asks: Approve $VAR.notes to publish." in table and "$VAR.notes = 'faster builds'" in table
    )
    assert "why: the agent kept stopping" in table and "5 refused in a row" in table
    bad = subprocess.run([TETHER, "inbox", where, "--refused", "0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--refused" in bad.stderr
