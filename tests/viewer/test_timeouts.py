"""The viewer and a human step's timeout, in a real browser: the human panel says until when the
step waits and what happens then; once the step timed out, the timeline shows the `timeout`
entry and a late Approve from the page is refused with why."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from support.stats_scenario import Clock
from tether.verbs import Runtime
from viewer.driver import ViewServer, answer, tether

TREE = """\
name: sign-off
version: 1
tree:
  type: selector
  name: Ship
  children:
    - type: action
      name: Sign_Off
      steps:
        - human: Approve the release?
          timeout: 2h
          on_timeout: {how}
    - type: action
      name: Escalate
      steps:
        - instruct: Nobody signed off in time; ask in the release channel.
"""


def test_the_human_panel_says_until_when_the_step_waits(
    page: Page, server: ViewServer, runs: Path, tmp_path: Path
) -> None:
    (tmp_path / "sign-off.yaml").write_text(TREE.format(how="fail"))
    run = runs / "ship.json"
    tether("start", tmp_path / "sign-off.yaml", run)
    deadline = answer(run, "submit", "success")["next"]["deadline"]
    server.sign_in(page)
    page.goto(server.base + "?run=ship.json")
    panel = page.locator("#human")
    shown = deadline.replace("T", " ")[:19] + " UTC"
    expect(panel).to_contain_text(f"Waits until {shown}, then the execution fails.")


def test_a_timed_out_step_is_in_the_timeline_and_a_late_approve_is_refused(
    page: Page, server: ViewServer, runs: Path, tmp_path: Path
) -> None:
    (tmp_path / "sign-off.yaml").write_text(TREE.format(how="reject"))
    run = str(runs / "ship.json")
    rt = Runtime(clock=Clock("2020-01-01T00:00:00"))
    rt.start(str(tmp_path / "sign-off.yaml"), run)
    rt.submit(run, "success")
    server.sign_in(page)
    page.goto(server.base + "?run=ship.json")
    panel = page.locator("#human")
    waits = "Waits until 2020-01-01 02:00:00 UTC, then it counts as rejected."
    expect(panel).to_contain_text(waits)
    with page.expect_response("**/api/human") as answered:
        panel.locator("button", has_text="Approve").click()
    error = answered.value.json()["error"]
    assert error["code"] == "timed_out" and error["message"].startswith(
        "human step 'Sign_Off' timed out at 2020-01-01T02:00:00.000Z (on_timeout: reject)"
    )
    entry = page.locator("#timeline li[data-kind='timeout']")
    expect(entry).to_contain_text("no answer by 2020-01-01 02:00:00 UTC (on_timeout: reject)")
    expect(panel).to_be_hidden()
    assert answer(Path(run), "next")["name"] == "Escalate"
    assert answer(Path(run), "verify")["ok"] is True
