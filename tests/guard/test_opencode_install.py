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


def test_the_plugin_denies_a_call_when_the_guard_cannot_start(tmp_path: Path) -> None:
    """Fail closed: a hook command that does not run denies the call, saying why."""
    from tether.guard.harness.opencode import plugin_text

    plugin = tmp_path / "tether.mjs"
    plugin.write_text(plugin_text("no-such-tether guard hook"))
    driver = tmp_path / "drive.mjs"
    driver.write_text(
        'import { TetherGuard } from "./tether.mjs"\n'
        f"const hooks = await TetherGuard({{ directory: {json.dumps(str(tmp_path))} }})\n"
        "try {\n"
        '  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" },'
        ' { args: { command: "ls" } })\n'
        '  console.log("allowed")\n'
        "} catch (e) { console.log(`denied: ${e.message}`) }\n"
    )
    done = subprocess.run(
        ["node", str(driver)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.startswith("denied: [Tether] the guard could not answer"), done
    assert "no-such-tether" in done.stdout, done.stdout
