"""The README's install line, tried as a new user would: in a checkout, `pipx install .` (or
`uv tool install .`), then `tether init` in an empty project, with nothing on PATH but what the
tool installed and the system's folders.

Tether has no release on the package index, so these are the commands that must work. The tools
themselves come from the package index into a virtual environment of the test's own; the
checkout is a copy, so nothing is written into this one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PATH = "/usr/bin:/bin"
_SKIP = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "node_modules", "__pycache__", "build", "dist", "*.egg-info"
)


def _env(**extra: str) -> dict[str, str]:
    """This environment without what would point Python at this checkout or its venv."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIPX_", "UV_"))
    }
    return {**kept, **extra}


def _run(*command: str | Path, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize(
    ("tool", "install"),
    [("pipx", ["pipx", "install", "."]), ("uv", ["uv", "tool", "install", "."])],
)
def test_the_readmes_install_from_a_checkout_then_tether_init(
    tmp_path: Path, tool: str, install: list[str]
) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert " ".join(install) in readme
    tool_kind = {"pipx": "pipx", "uv": "uv tool"}[tool]
    tools = tmp_path / "tools"
    _run(sys.executable, "-m", "venv", tools, cwd=tmp_path, env=_env())
    _run(tools / "bin" / "pip", "install", "--quiet", tool, cwd=tmp_path, env=_env())
    checkout = tmp_path / "tether"
    shutil.copytree(REPO, checkout, ignore=_SKIP, symlinks=True)
    bin_dir = tmp_path / "bin"
    places = {
        "pipx": {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(bin_dir)},
        "uv": {
            "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
            "UV_TOOL_BIN_DIR": str(bin_dir),
            "UV_PYTHON_DOWNLOADS": "never",
        },
    }[tool]
    installing = _env(PATH=f"{tools / 'bin'}:{SYSTEM_PATH}", **places)
    _run(install[0], *install[1:], cwd=checkout, env=installing)

    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    user = _env(PATH=f"{bin_dir}:{SYSTEM_PATH}", HOME=str(home))
    assert shutil.which("tether", path=user["PATH"]) == str(bin_dir / "tether")

    def tether(*args: str) -> Any:
        return json.loads(_run("tether", *args, cwd=project, env=user))

    out = tether("init")
    assert out["next"][0] == "tether start examples/hello-world.yaml run.json"
    assert (project / "examples" / "hello-world.yaml").is_file()
    assert (project / ".tether" / "guard.yaml").is_file()
    assert tether("start", "examples/hello-world.yaml", "run.json")["uri"].endswith("run.json")
    # installed on PATH, the hooks it writes name `tether` alone: a file a team can share
    hooks = tether("guard", "install", "claude")
    assert hooks["launch"] == {"how": "path", "command": "tether", "portable": True}
    assert str(tmp_path) not in (project / ".claude" / "settings.json").read_text()

    # a database needs the postgres extra: the error names the command for this installation,
    # and that command, run as given, installs it where this `tether` runs
    database = "postgresql://u@127.0.0.1:9/db"  # nothing listens on port 9
    error = _error("tether", "list", database, cwd=project, env=user)
    assert error["code"] == "missing_extra" and error["installed_with"] == tool_kind, error
    command = shlex.split(error["command"])
    assert command[:2] == {"pipx": ["pipx", "inject"], "uv": ["uv", "tool"]}[tool], command
    _run(*command, cwd=project, env=installing)
    assert _error("tether", "list", database, cwd=project, env=user)["code"] == "store_unavailable"


def _error(*command: str, cwd: Path, env: dict[str, str]) -> Any:
    """The JSON error of a command that must fail with exit code 1."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    return json.loads(done.stderr)["error"]
