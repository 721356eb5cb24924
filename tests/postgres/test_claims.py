"""Two processes racing for the same claim of a branch on one PostgreSQL database: in every
round exactly one holds it and the other is refused (`claimed`, naming the winner); the trace
holds one `claim` entry per round and `verify` agrees."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from support.postgres import PostgresServer
from support.trees import PAIR
from tether.verbs import Runtime

ROUNDS = 12
# One contender: started, then held until its stdin gives the word, so both claim at once.
CONTENDER = """
import json, sys
from tether.errors import TetherError
from tether.verbs import Runtime
rt = Runtime()
rt.next(sys.argv[1])  # the connection made before the word
sys.stdin.readline()
try:
    print(json.dumps(rt.claim(sys.argv[1], sys.argv[2], step=sys.argv[3])))
except TetherError as exc:
    print(json.dumps({"error": exc.to_dict()}))
"""


def test_two_processes_racing_for_one_claim_leave_one_holder(
    server: PostgresServer, new_name: Callable[[], str], tmp_path: Path
) -> None:
    tree = tmp_path / "pair.json"
    tree.write_text(json.dumps(PAIR))
    rt = Runtime()
    for _ in range(ROUNDS):
        uri = server.uri(new_name())
        rt.start(str(tree), uri)
        rt.submit(uri, "success")
        token = str(rt.next(uri)["step"])
        contenders = [
            subprocess.Popen(
                [sys.executable, "-c", CONTENDER, uri, agent, token],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for agent in ("alice", "bob")
        ]
        for contender in contenders:
            assert contender.stdin is not None
            contender.stdin.write("go\n")
            contender.stdin.flush()
        said = [json.loads(c.communicate(timeout=120)[0]) for c in contenders]
        winners = [s["agent"] for s in said if "error" not in s]
        assert len(winners) == 1, said
        (loser,) = [s["error"] for s in said if "error" in s]
        assert loser["code"] == "claimed" and loser["holder"] == winners[0], loser
        claims = [e for e in rt.trace(uri) if e["kind"] == "claim"]
        assert [(e["agent"], e["outcome"]) for e in claims] == [(winners[0], "claimed")]
        assert rt.verify(uri)["ok"] is True
