"""The viewer's trace listing shows a call of an independent action (outside the workflow) and
the values its close wrote, and the diagram's position does not move for it."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tether.bot.session import BotSession
from tether.verbs import Runtime
from viewer.driver import EXAMPLES, ViewServer


def test_independent_entries_show_in_the_trace_listing(
    page: Page, server: ViewServer, runs: Path
) -> None:
    run = runs / "story.json"
    session = BotSession(Runtime(), str(EXAMPLES / "story-mapping.yaml"), str(run))
    session.independent("glossary", note="what is a backbone")
    session.independent("glossary", close=True, values={"glossary": {"backbone": "activities"}})
    page.goto(server.base + "?run=story.json")
    rows = page.locator("#timeline li[data-kind='independent']")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("glossary")
    expect(rows.nth(0)).to_contain_text("outside the workflow")
    expect(rows.nth(0)).to_contain_text("called")
    expect(rows.nth(0)).to_contain_text("what is a backbone")
    expect(rows.nth(1)).to_contain_text('$VAR.glossary = {"backbone":"activities"}')
    expect(rows.nth(1)).to_contain_text("closed")
    expect(page.locator("#timeline li")).to_have_count(3)
