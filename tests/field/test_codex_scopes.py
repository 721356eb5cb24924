"""File scopes in a real Codex 0.171.0, headless, against a scripted model (set up as
`tests/field/test_codex.py` sets it up): a step whose node declares `writes: ["docs/**"]` lets
a patch edit a doc, and denies a patch or a shell write anywhere else."""

from __future__ import annotations

from pathlib import Path

from field.test_codex import DENIED, TRACE, codex, patch, project, sh, tether

__all__ = ["project"]  # the fixture, shared

DOCS = """\
name: docs
version: 1
tree:
  type: action
  name: Docs
  writes: ["docs/**"]
  steps:
    - instruct: Improve the docs.
"""


def test_a_patch_or_a_shell_write_outside_the_scope_is_denied_in_codex(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "a.md").write_text("# A\nold\n")
    before = (project / "calc.py").read_text()
    (project / "docs.yaml").write_text(DOCS)
    tether(project, "start", "docs.yaml", TRACE)
    tether(project, "submit", TRACE, "success")
    outside = patch("*** Update File: calc.py", "@@", "-    return a + b", "+    return a - b")
    added = patch("*** Add File: notes.md", "+I was here.")
    shell = sh("echo 'I was here.' > notes.md")
    inside = patch("*** Update File: docs/a.md", "@@", "-old", "+new")
    run = codex(project, [[sh(f"tether resume {TRACE}")], [outside], [added], [shell], [inside]])

    assert (project / "calc.py").read_text() == before
    assert not (project / "notes.md").exists()
    assert (project / "docs" / "a.md").read_text() == "# A\nnew\n"
    denied = [t for t in run.told() if t.startswith(DENIED)]
    assert len(denied) == 3, run.told()
    assert "it writes calc.py, outside the scope" in denied[0]
    assert "it writes notes.md, outside the scope" in denied[1]
    assert "it writes notes.md, outside the scope" in denied[2]
    assert all("'Docs' writes only docs/**" in t for t in denied)
