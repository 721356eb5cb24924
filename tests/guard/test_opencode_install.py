"""`tether guard install opencode`: the plugin written, again unchanged, a file not Tether's
kept; the plugin's JavaScript parses (node, which the harness tests need anyway)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tether.guard.cli import main


def install(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, dict]:
    code = main(["install", "opencode", "--command", "tether", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, json.loads(err) if err else {}


def test_install_writes_the_plugin_and_a_second_install_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = install(capsys)
    assert code == 0, out
    plugin = tmp_path / ".opencode" / "plugin" / "tether.js"
    text = plugin.read_text()
    assert '"tether guard hook --harness claude --config .tether/guard.yaml"' in text
    assert "no hook that can refuse the end of a session" in out["stop"], out
    code, again, _ = install(capsys)
    assert code == 0 and again["added"] == [] and plugin.read_text() == text
    copy = tmp_path / "plugin.mjs"
    copy.write_text(text)
    assert subprocess.run(["node", "--check", str(copy)], check=False).returncode == 0


def test_a_plugin_file_that_is_not_tethers_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plugin = tmp_path / ".opencode" / "plugin" / "tether.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({})\n")
    code, _, err = install(capsys)
    assert code != 0 and "is not Tether's plugin" in err["error"]["message"], err
    assert plugin.read_text() == "export const Mine = async () => ({})\n"
