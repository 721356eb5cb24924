"""A Tether execution as a person sees it in Phoenix's web page, driven in Debian's chromium:
the workflow's span with one span per attempt under it, and the evidence of a failed attempt
(the tool call, the refused stop, the failed check) among its events. The screenshot is the
one docs/otel.md shows (docs/otel-phoenix.png is copied from artifacts/otel/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from otel.receiver import REPO, Phoenix, walk, write_tree
from support.command import TETHER
from tether.verbs import Runtime
from viewer.driver import CHROMIUM, CHROMIUM_ARGS

ARTIFACTS = REPO / "artifacts" / "otel"


def test_an_execution_in_phoenix_page(phoenix: Phoenix, tmp_path: Path) -> None:
    run = tmp_path / "deploy-42.json"
    walk(Runtime(), write_tree(tmp_path), str(run))
    subprocess.run(
        [TETHER, "export", "otel", str(run), "--endpoint", phoenix.url], check=True, timeout=60
    )
    found = phoenix.wait_spans(f"file://{run}", 6)
    trace_id = found[0]["context"]["trace_id"]
    project = next(p["id"] for p in phoenix.get("/v1/projects")["data"] if p["name"] == "default")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 860})
        page.goto(f"{phoenix.url}/projects/{project}/traces/{trace_id}")
        # The trace opens over the project's list of traces (other tests' among them).
        trace = page.get_by_role("dialog")
        expect(trace.get_by_text("invoke_workflow otel-demo").first).to_be_visible()
        attempts = trace.get_by_text("invoke_agent", exact=False)
        expect(attempts).to_have_count(5)
        attempts.first.click()
        page.get_by_role("tab", name="Events").click()
        for event in ("tether.tool", "tether.stop", "tether.check"):
            expect(trace.get_by_text(event, exact=True).first).to_be_visible()
        trace.get_by_text("tether.tool", exact=True).first.click()  # its attributes unfold
        expect(trace.get_by_text("make measure").first).to_be_visible()
        page.screenshot(path=ARTIFACTS / "phoenix.png")
        browser.close()
