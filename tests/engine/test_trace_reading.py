"""The one reading of a trace (`tether.engine.trace`): a step token read back, and refused as
stale when it spells none, whatever digits an agent types."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.command import HELLO, ok, refused
from tether.engine.trace import Token, node_key
from tether.errors import EXIT_CONFLICT


def test_a_token_reads_back_what_built_it() -> None:
    read = Token.parse("0.2:1:3:17:salt")
    assert read is not None and (read.key, read.step, read.retry, read.opened) == ("0.2", 1, 3, 17)
    assert read.path == [0, 2] and node_key(read.path) == "0.2"
    assert str(read) == "0.2:1:3:17:salt"
    root = Token.parse("-:0:0:4:s")
    assert root is not None and root.path == [] and str(root) == "-:0:0:4:s"


@pytest.mark.parametrize(
    "token",
    ["", "x", "0:1:2:3", "0:1:2:3:s:t", "-:²:0:0:x", "0.²:0:0:0:x", "0.:0:0:0:x", "a:0:0:0:s"],
)
def test_a_token_that_spells_none_reads_as_none(token: str) -> None:
    assert Token.parse(token) is None


def test_an_answer_with_digits_that_are_not_ascii_is_a_stale_step(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    ok("start", HELLO, run)
    refused(EXIT_CONFLICT, "stale_step", "submit", run, "success", "--step", "-:²:0:0:x")
    assert (tmp_path / "run.json.refused.jsonl").exists()  # the refusal is logged, as any other
