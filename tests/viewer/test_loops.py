"""The viewer and `tether show` on loops: each node's current item and run, a new item or run
starting the subtree afresh, and the open step's item beside the cursor."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from support.trees import Walk, action, each, ev, ins, seq, tree
from tether.viewer.model import index_tree, snapshot
from viewer.driver import EXAMPLES, ViewServer, answer, tether

SVG = "{http://www.w3.org/2000/svg}"


def test_a_snapshot_shows_each_loops_item_and_run_and_clears_below_a_new_item() -> None:
    w = Walk(
        tree(
            seq(
                "Files",
                action("Check", ev("ok?")),
                action("Fix", ins("fix"), repeat={"until": "VAR.done", "max": 3}),
                for_each=each("VAR.files", "file"),
            ),
            var={"files": ["a", "b"], "done": False},
        )
    )
    w.eval(True)
    w.submit("success")
    snap = snapshot(w.tree, w.state, w.trace)
    files, check, fix = snap.nodes[""], snap.nodes["0"], snap.nodes["1"]
    assert (files.status, files.item, files.items) == ("open", 0, 2)
    assert (check.status, fix.status, fix.run) == ("success", "open", 2)
    nodes = index_tree(w.tree)
    assert nodes[""].modifiers(files) == ["file 1/2"]
    assert nodes["1"].modifiers(fix) == ["run 2/3"]
    assert nodes["1"].modifiers() == ["repeat 3"], "the tree alone, before any run"
    w.write("done", True)
    w.submit("success")
    snap = snapshot(w.tree, w.state, w.trace)
    assert (snap.nodes[""].item, snap.nodes["0"].status, snap.nodes["1"].status) == (
        1,
        "open",
        "not_reached",
    ), "the second item starts its subtree afresh"
    assert snap.nodes["1"].run == 0
    assert snap.to_dict()["nodes"][""] | {"entries": 0} == {
        "status": "open",
        "retries": 0,
        "entries": 0,
        "step": None,
        "item": 1,
        "items": 2,
        "run": 0,
        "claim": None,
        "claims": [],
    }


@pytest.fixture
def review(runs: Path) -> Path:
    """review-changes driven by the CLI into the second pass over its first file."""
    run = runs / "review.json"
    tether("start", EXAMPLES / "review-changes.yaml", run)
    answer(run, "submit", "success")
    answer(run, "submit", "success", "--set-json", 'files=["src/app.py", "README.md"]')
    answer(run, "eval", "false")
    answer(run, "submit", "success", "--set", "verdict=fixed")
    return run


def test_show_draws_the_item_and_the_run_and_the_open_steps_item(review: Path) -> None:
    lines = tether("show", review).stdout.splitlines()
    assert "├─ Each_File (sequence, file 1/2)  ● open  1 entry" in lines
    assert "│  ├─ No_Secrets (action, invert)  ✓ success  1 entry" in lines
    (cursor,) = [line for line in lines if "◀" in line]
    assert cursor.startswith("│  └─ Review_File (action, run 2/3)  ● open  step 1/1")
    assert cursor.endswith('[file 1: "src/app.py"]')
    answer(review, "submit", "success", "--set", "verdict=clean")
    lines = tether("show", review).stdout.splitlines()
    assert "├─ Each_File (sequence, file 2/2)  ● open  1 entry" in lines
    assert any(line.endswith('[file 2: "README.md"]') for line in lines)
    assert "│  └─ Review_File (action, repeat 3)  ○ not reached  6 entries" in lines
    assert tether("verify", review).returncode == 0


def test_render_and_the_page_document_carry_the_loops(review: Path, runs: Path) -> None:
    tether("render", review, "-o", runs / "review.svg")
    kinds = [
        "".join(t.itertext())
        for t in ET.parse(runs / "review.svg").getroot().iter(f"{SVG}text")
        if t.get("class") == "kind"
    ]
    assert "SEQUENCE · file 1/2" in kinds and "ACTION · run 2/3" in kinds
    view = ViewServer(runs)
    try:
        status, doc = view.get("/api/run?path=review.json")
    finally:
        assert view.stop() == 0
    assert status == 200
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["Each_File"]["for_each"] == {"in": "$VAR.files", "as": "file", "max": 20}
    assert nodes["Review_File"]["repeat"] == {"until": '$VAR.verdict == "clean"', "max": 3}
    assert doc["snapshot"]["nodes"]["1"]["item"] == 0
    assert doc["snapshot"]["nodes"]["1.1"]["run"] == 2
    answered = [e for e in doc["trace"] if e["kind"] in ("evaluate", "instruct")]
    assert [e.get("item") for e in answered] == [None, 0, 0]


def test_the_page_shows_the_loop_and_its_item_in_node_details_and_the_timeline(
    page: Page, server: ViewServer, review: Path
) -> None:
    page.goto(server.base + "?run=review.json")
    expect(page.locator("#live")).to_have_text("live")
    page.locator("#diagram g.node", has=page.locator("text.name", has_text="Each_File")).click()
    details = page.locator("#node")
    expect(details.locator(".status")).to_have_text("● open · file 1/2")
    expect(details).to_contain_text("for each file in $VAR.files (at most 20)")
    page.locator("#diagram g.node", has=page.locator("text.name", has_text="Review_File")).click()
    expect(details.locator(".status")).to_have_text("● open · step 1/1 · run 2/3")
    expect(details).to_contain_text('repeat until $VAR.verdict == "clean" (at most 3 runs)')
    expect(page.locator("#timeline li").nth(4)).to_contain_text("(for each)")
    expect(page.locator("#timeline li").last).to_contain_text("Review_File item 1")


def test_the_page_shows_who_holds_a_claimed_item_and_until_when(
    page: Page, server: ViewServer, review: Path
) -> None:
    held = answer(review, "claim", "--agent", "alice", "--lease", "600")
    assert held["status"] == "claimed"
    page.goto(server.base + "?run=review.json")
    expect(page.locator("#live")).to_have_text("live")
    page.locator("#diagram g.node", has=page.locator("text.name", has_text="Review_File")).click()
    expect(page.locator("#node .status")).to_contain_text("claimed by alice until")


def test_a_fanned_out_loop_is_drawn_on_its_node_with_its_item_count() -> None:
    loop = each("VAR.files", "file", parallel=True)
    w = Walk(tree(seq("Root", action("Fix", ins("fix"), for_each=loop)), var={"files": ["a", "b"]}))
    w.submit("success", step=w.open()[1]["step"])
    snap = snapshot(w.tree, w.state, w.trace)
    fix = snap.nodes["0"]
    assert (fix.status, fix.items, fix.entries) == ("open", 2, 2), "its list and one answer"
    assert index_tree(w.tree)["0"].modifiers(fix) == ["for each file ×2, side by side"]
    assert snap.open_keys() == ["0"], "item 'a' still open, drawn on its node"
    w.submit("success")
    assert snapshot(w.tree, w.state, w.trace).nodes["0"].status == "success"


def test_the_page_shows_who_holds_each_item_of_a_fanned_out_loop(
    page: Page, server: ViewServer, runs: Path
) -> None:
    run = runs / "team.json"
    tether("start", EXAMPLES / "team-fix.yaml", run)
    answer(run, "submit", "success")
    answer(run, "submit", "success", "--set-json", 'files=["src/app.py", "src/cli.py"]')
    steps = [r["step"] for r in answer(run, "next", "--all")]
    answer(run, "claim", "--agent", "alice", "--step", steps[0])
    answer(run, "claim", "--agent", "bob", "--step", steps[1])
    page.goto(server.base + "?run=team.json")
    expect(page.locator("#live")).to_have_text("live")
    page.locator("#diagram g.node", has=page.locator("text.name", has_text="Fix_File")).click()
    status = page.locator("#node .status")
    expect(status).to_contain_text("claimed by alice (file 1) until")
    expect(status).to_contain_text("claimed by bob (file 2) until")
