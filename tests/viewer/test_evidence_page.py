"""The viewer page shows a bound session's `tool` and `stop` entries under their step."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tether.verbs import Runtime
from viewer.driver import EXAMPLES, ViewServer, answer, tether


def test_tool_and_stop_entries_show_under_their_step(
    page: Page, server: ViewServer, runs: Path
) -> None:
    run = runs / "bound.json"
    tether("start", EXAMPLES / "hello-world.yaml", run)
    answer(run, "submit", "success")
    rt = Runtime()
    rt.record_tool(str(run), "Bash", {"command": "date +%H"}, ok=True)
    rt.record_tool(str(run), "Read", {"file_path": "/etc/missing"}, ok=False)
    rt.record_tool(str(run), "Bash", {"command": "make"}, ok=None)  # the harness gave no sign
    rt.stop(str(run), cap=3)
    page.goto(server.base + "?run=bound.json")
    page.locator("#diagram g.node", has=page.locator("text", has_text="Determine_Time")).click()
    details = page.locator("#node")
    expect(details).to_contain_text("Trace entries (4)")
    rows = details.locator(".entries li")
    expect(rows.nth(0)).to_contain_text("Bash")
    expect(rows.nth(0)).to_contain_text("date +%H")
    expect(rows.nth(0)).to_contain_text("ran")
    expect(rows.nth(1)).to_contain_text("failed")
    expect(rows.nth(2)).to_contain_text("make→ outcome unknown")
    expect(rows.nth(3)).to_contain_text("refused")
    expect(page.locator("#timeline li[data-kind='tool']")).to_have_count(3)
    expect(page.locator("#timeline li[data-kind='stop']")).to_have_count(1)
