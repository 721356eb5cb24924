"""The viewer's inbox in a real browser: a folder with an open human step, a parked execution
and a step refused many times in a row shows each of them, the human step with the values it
shows; Approve there moves the execution; the inbox updates by itself (`/api/events`) as
executions move."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from support.trees import SIGN_OFF_YAML
from tether.errors import TetherError
from tether.verbs import Runtime
from viewer.driver import ARTIFACTS, ViewServer, answer

TREE = SIGN_OFF_YAML.replace(
    "Read the release notes. Approve to publish.", "Approve $VAR.notes to publish."
)


def _fleet(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "sign-off.yaml").write_text(TREE)
    rt = Runtime()
    for name in ("ship", "parked", "refused"):
        rt.start(str(tmp_path / "sign-off.yaml"), str(runs / f"{name}.json"))
        rt.submit(str(runs / f"{name}.json"), "success")
    rt.submit(str(runs / "ship.json"), "success", values={"notes": "faster builds"})
    rt.submit(str(runs / "parked.json"), "success", values={"notes": "x"})
    for _ in range(3):
        rt.stop(str(runs / "parked.json"), cap=2, park="the agent kept stopping")
    for _ in range(5):
        with pytest.raises(TetherError, match="must write"):
            rt.submit(str(runs / "refused.json"), "success")


def test_the_inbox_shows_the_waits_and_an_approval_moves_the_execution(
    page: Page, server: ViewServer, runs: Path, tmp_path: Path
) -> None:
    _fleet(runs, tmp_path)
    server.sign_in(page)
    page.goto(server.base)
    page.click("#to-inbox")
    waits = page.locator("#in-waits")
    expect(waits.locator(".wait.parked")).to_contain_text("the agent kept stopping")
    expect(waits.locator(".wait.refused")).to_contain_text("5 answers refused in a row at Draft")
    ship = waits.locator('.wait.human[data-name="ship.json"]')
    expect(ship).to_contain_text("Approve $VAR.notes to publish.")
    expect(ship).to_contain_text('"faster builds"')
    expect(ship).to_contain_text("tether approve")
    page.screenshot(path=ARTIFACTS / "inbox.png")
    # An execution reaches its human step while the page is open: the inbox shows it unasked.
    Runtime().submit(str(runs / "refused.json"), "success", values={"notes": "late"})
    expect(waits.locator('.wait.human[data-name="refused.json"]')).to_contain_text('"late"')
    expect(waits.locator(".wait.refused")).to_have_count(0)
    ship.locator("button", has_text="Approve").click()
    expect(ship).to_be_hidden()
    entry = answer(runs / "ship.json", "trace")[-1]
    assert (entry["kind"], entry["outcome"], entry["by"]) == ("human", "success", "viewer")
    assert answer(runs / "ship.json", "next")["name"] == "Lint"
