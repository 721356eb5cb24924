"""Strict mode: a wall around the agent's own commands, built from the harness's own sandbox.

Owns:
- the paths no command of the agent may write in strict mode (`walled`): Tether's folder
  `.tether/` (the configuration and, in strict mode, the executions under `.tether/runs/`), the
  guard's state folder, every hook registration (`registrations`) and `.mcp.json`;
- Claude Code's settings that hold them (`wall_claude`): its sandbox on, no way out of it, those
  paths denied to every write from the shell and from its file tools, merged into
  `.claude/settings.local.json` (the paths are this machine's);
- Codex's (`wall_codex`): a permission profile of Tether's (`tether-strict`, Codex's own
  `:workspace` with those paths read-only) selected by `default_permissions` in the project's
  `.codex/config.toml`, refused where a setting of the user's would undo it
  (`codex_conflicts`, `plan_codex`), and read back for `tether guard doctor`
  (`codex_wall_problems`);
- turning on the configuration's `workflow.strict` (`mark_strict`).

It does not run a sandbox: the harness does. Claude Code's (bubblewrap and socat on Linux,
Seatbelt on macOS) and Codex's (bubblewrap and seccomp on Linux: the system's `bwrap` when it
is on PATH, else the copy Codex ships; Seatbelt on macOS) wrap the agent's shell commands and
their children only; hooks and MCP servers run in the harness's own process, outside the wall,
and so does every answer the agent gives through Tether's MCP server. Where a strict session's
executions may live is the binder's (`binder.outside_the_wall`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.files import is_inside
from tether.guard.binding.binder import TETHER_FOLDER
from tether.guard.binding.registrations import PROJECT_FILES

# Besides the hook registrations: where Claude Code registers MCP servers in the project (a
# command that rewrote it could put its own program beside Tether's).
MCP_REGISTRATION = ".mcp.json"

_WORKFLOW = re.compile(r"^(?P<indent>[ \t]*)workflow:[ \t]*(#.*)?$")
_BEHAVIOR = re.compile(r"^(?P<indent>[ \t]*)behavior:[ \t]*(#.*)?$")


def walled(project: Path, state: str) -> list[tuple[str, bool]]:
    """The absolute paths the agent's commands may not write, in strict mode, each with whether
    it is a folder (everything below it): Tether's folder, the guard's state, and every hook
    registration a bound session may not write either (`registrations`)."""
    root = project.resolve()
    found = [(root / TETHER_FOLDER, True), (Path(state).resolve(), True)]
    found += [(root / name, name.endswith(os.sep)) for name in (*PROJECT_FILES, MCP_REGISTRATION)]
    return list(dict.fromkeys((str(path), folder) for path, folder in found))


def _merged(found: Any, ours: list[str], where: str) -> list[Any]:
    if found is None:
        found = []
    if not isinstance(found, list):
        raise TetherError("invalid_value", f"{where} must be a list")
    return [*found, *(x for x in ours if x not in found)]


def _section(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    found = data.setdefault(key, {})
    if not isinstance(found, dict):
        raise TetherError("invalid_value", f"{where}: {key} must be an object")
    return found


def wall_claude(settings: Path, project: Path, state: str) -> dict[str, Any]:
    """Merge strict mode into Claude Code's `settings`: the sandbox on (and Claude Code refusing
    to start without it), `dangerouslyDisableSandbox` ignored, the walled paths in
    `sandbox.filesystem.denyWrite` and as `Edit(...)` deny rules (Claude Code's file tools);
    everything else in the file is kept. Returns what strict mode set."""
    from tether.files import read_json, write_file

    data = read_json(settings)
    found = walled(project, state)
    paths = [path for path, _ in found]
    sandbox = _section(data, "sandbox", str(settings))
    sandbox.update(enabled=True, failIfUnavailable=True, allowUnsandboxedCommands=False)
    filesystem = _section(sandbox, "filesystem", f"{settings}: sandbox")
    filesystem["denyWrite"] = _merged(
        filesystem.get("denyWrite"), paths, f"{settings}: sandbox.filesystem.denyWrite"
    )
    rules = [f"Edit(/{path}/**)" if folder else f"Edit(/{path})" for path, folder in found]
    permissions = _section(data, "permissions", str(settings))
    permissions["deny"] = _merged(permissions.get("deny"), rules, f"{settings}: permissions.deny")
    write_file(settings, json.dumps(data, indent=2) + "\n", root=project)
    return {"settings": str(settings), "deny_write": paths, "deny_rules": rules}


def mark_strict(config: Path) -> bool:
    """Turn on `workflow.strict` in the configuration file `config`, its other lines kept;
    returns whether it changed. Refused where `strict_refused` says why."""
    from tether.files import write_file
    from tether.guard.rules.config import plan_from_file

    if plan_from_file(config)[0]["workflow"]["strict"]:
        return False
    refused = strict_refused(config)
    if refused is not None:
        raise refused
    text = _with_strict(config.read_text(encoding="utf-8").splitlines())
    assert text is not None  # strict_refused says so otherwise
    write_file(config, text, root=config.parent.parent)
    return True


def strict_refused(config: Path) -> TetherError | None:
    """Why `--strict` may not turn strict mode on in `config` (None: it may, or it is on, or
    the file is not there yet): a configuration that says `strict:` and is not strict (the user
    said so; strict mode is theirs to turn on there), or one the line cannot be added to."""
    from tether.guard.rules.config import plan_from_file

    if not config.is_file() or plan_from_file(config)[0]["workflow"]["strict"]:
        return None
    lines = config.read_text(encoding="utf-8").splitlines()
    if any(re.match(r"^\s*strict:", line) for line in lines):
        return TetherError(
            "invalid_value",
            f"{config} sets workflow.strict to false: set it to true there, or drop --strict",
            path=str(config),
        )
    if _with_strict(lines) is None:
        return TetherError(
            "invalid_value",
            f"{config} has no behavior section to add workflow.strict to: add `workflow:` "
            "with `strict: true` under it",
            path=str(config),
        )
    return None


def _with_strict(lines: list[str]) -> str | None:
    """The configuration's lines with `strict: true` under its `workflow:` (made under
    `behavior:` when there is none), or None when it has neither."""
    for i, line in enumerate(lines):
        found = _WORKFLOW.match(line)
        if found:
            indent = found["indent"] + "  "
            return "\n".join([*lines[: i + 1], f"{indent}strict: true", *lines[i + 1 :]]) + "\n"
    for i, line in enumerate(lines):
        found = _BEHAVIOR.match(line)
        if found:
            indent = found["indent"] + "  "
            added = [f"{indent}workflow:", f"{indent}  strict: true"]
            return "\n".join([*lines[: i + 1], *added, *lines[i + 1 :]]) + "\n"
    return None


# -- Codex -----------------------------------------------------------------------------------

# Tether's permission profile, and the project file that holds it and selects it. Codex reads a
# project's `.codex/config.toml` only in a trusted project, as it runs the project's hooks.
CODEX_PROFILE = "tether-strict"
CODEX_CONFIG = os.path.join(".codex", "config.toml")
# What an administrator may set for every user of the machine (Linux): read for a setting that
# would undo the wall, never written.
CODEX_SYSTEM_FILES = ("/etc/codex/config.toml", "/etc/codex/managed_config.toml")
CODEX_REQUIREMENTS = "/etc/codex/requirements.toml"
_BEGIN = "# >>> tether strict mode: `tether guard install codex --strict` writes this block"
_END = "# <<< tether strict mode"
_SELECT = f'default_permissions = "{CODEX_PROFILE}"  # tether strict mode'
# Why a setting of the user's would undo the wall.
_SANDBOX_MODE = (
    "Codex uses its older sandbox settings wherever a sandbox_mode is set, and Tether's "
    "permission profile is then ignored (Codex's permissions documentation)"
)
_AUTO_REVIEW = (
    "a model, not a person, would approve an agent's request to run a command outside the sandbox"
)


def codex_home() -> Path:
    """Where Codex keeps the user's configuration: `$CODEX_HOME`, else `~/.codex`."""
    return Path(os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex"))


def _as_codex_path(path: str) -> str:
    """A path outside the project as the profile names it: `~/...` under the home folder (so a
    teammate's own home is meant), else absolute."""
    home = os.path.realpath(os.path.expanduser("~"))
    return "~/" + os.path.relpath(path, home) if is_inside(path, home) and path != home else path


def codex_read_only(project: Path, state: str, home: Path) -> tuple[list[str], list[str]]:
    """What Tether's profile keeps read-only: names in the project (relative to Codex's project
    roots) and paths outside it. Inside the project each walled path counts by its first
    folder there (`.claude` for `.claude/settings.json`, `.github` for `.github/hooks/`): a
    read-only path is mounted where it is, and a writable folder above it could be renamed,
    taking it along; a name right below the project cannot be. Outside it: the guard's state
    folder and Codex's home (its `config.toml` decides the next session's sandbox)."""
    root = str(project.resolve())
    inside: list[str] = []
    outside: list[str] = []
    walls = [path for path, _ in walled(project, state)]
    for path in [*walls, os.path.realpath(home)]:
        if is_inside(path, root) and path != root:
            inside.append(os.path.relpath(path, root).split(os.sep)[0])
        else:
            outside.append(_as_codex_path(path))
    return list(dict.fromkeys(inside)), list(dict.fromkeys(outside))


def codex_profile(project: Path, state: str, home: Path) -> dict[str, Any]:
    """Tether's permission profile as Codex reads it (`[permissions.tether-strict]`)."""
    inside, outside = codex_read_only(project, state, home)
    filesystem: dict[str, Any] = {":project_roots": {name: "read" for name in inside}}
    filesystem.update((path, "read") for path in outside)
    return {"extends": ":workspace", "filesystem": filesystem}


def _profile_in(data: dict[str, Any]) -> Any:
    """Tether's profile as a Codex configuration file defines it (None: it does not)."""
    profiles = data.get("permissions")
    return profiles.get(CODEX_PROFILE) if isinstance(profiles, dict) else None


def _toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON's escapes are TOML's, but for DEL)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _codex_block(profile: dict[str, Any]) -> list[str]:
    filesystem = dict(profile["filesystem"])
    roots = filesystem.pop(":project_roots")
    inline = ", ".join(f"{_toml_string(name)} = {_toml_string(v)}" for name, v in roots.items())
    return [
        _BEGIN,
        f"[permissions.{CODEX_PROFILE}]",
        f"extends = {_toml_string(profile['extends'])}",
        "",
        f"[permissions.{CODEX_PROFILE}.filesystem]",
        f'":project_roots" = {{ {inline} }}',
        *(f"{_toml_string(path)} = {_toml_string(v)}" for path, v in filesystem.items()),
        _END,
    ]


def _without_ours(text: str) -> list[str]:
    """The lines of a `.codex/config.toml` without what strict mode wrote there."""
    kept, ours = [], False
    for line in text.splitlines():
        if line == _BEGIN:
            ours = True
        elif line == _END:
            ours = False
        elif not ours and line != _SELECT:
            kept.append(line)
    return kept


def _read_toml(path: Path, text: str | None = None) -> dict[str, Any]:
    import tomllib

    if text is None:
        if not path.is_file():
            return {}
        text = path.read_text(encoding="utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TetherError(
            "invalid_value", f"{path} is not valid TOML: {exc}", path=str(path)
        ) from None


def _undoes_the_wall(data: dict[str, Any]) -> list[str]:
    """The settings of one Codex configuration file that would undo Tether's profile: a
    `sandbox_mode` (at the top, or in the config profile `profile` selects) and an automatic
    reviewer of requests to leave the sandbox."""
    found = []
    chosen = data.get("profile")
    profiles = data.get("profiles")
    selected = profiles.get(chosen) if isinstance(profiles, dict) and chosen else None
    for where, table in (("", data), (f"profiles.{chosen}.", selected)):
        if not isinstance(table, dict):
            continue
        if "sandbox_mode" in table:
            found.append(f"{where}sandbox_mode = {table['sandbox_mode']!r}: {_SANDBOX_MODE}")
        if table.get("approvals_reviewer") == "auto_review":
            found.append(f"{where}approvals_reviewer = 'auto_review': {_AUTO_REVIEW}")
    return found


def codex_conflicts(
    project: Path,
    home: Path,
    system: tuple[str, ...] = CODEX_SYSTEM_FILES,
    requirements: str = CODEX_REQUIREMENTS,
) -> list[tuple[str, str]]:
    """What in the user's Codex configuration would undo or override Tether's profile, each as
    (file, what): the project's `.codex/config.toml` (strict mode's own lines aside) selecting
    another profile or defining one of Tether's name, and a `sandbox_mode` or an automatic
    reviewer there, in the user's `config.toml` or in the administrator's files; and managed
    requirements that do not allow Tether's profile."""
    mine = project / CODEX_CONFIG
    text = mine.read_text(encoding="utf-8") if mine.is_file() else ""
    project_data = _read_toml(mine, "\n".join(_without_ours(text)))
    out = []
    chosen = project_data.get("default_permissions")
    if chosen is not None:
        out.append((str(mine), f"default_permissions = {chosen!r} selects another profile"))
    profiles = project_data.get("permissions")
    if isinstance(profiles, dict) and CODEX_PROFILE in profiles:
        out.append((str(mine), f"a permissions.{CODEX_PROFILE} profile Tether did not write"))
    datas = [(mine, project_data), (home / "config.toml", None)]
    datas += [(Path(path), None) for path in system]
    for path, data in datas:
        found = _undoes_the_wall(_read_toml(path) if data is None else data)
        out.extend((str(path), what) for what in found)
    allowed = _read_toml(Path(requirements)).get("allowed_permission_profiles")
    if isinstance(allowed, list) and CODEX_PROFILE not in allowed:
        what = f"allowed_permission_profiles = {allowed!r} does not allow {CODEX_PROFILE}"
        out.append((requirements, what))
    return out


CODEX_HOLDS_WHEN = (
    "Codex reads the project's .codex/config.toml only in a trusted project (as it runs the "
    "project's hooks); a session started with --sandbox, -c sandbox_mode=…, a -p profile "
    "that sets sandbox_mode, --add-dir over a walled path or "
    "--dangerously-bypass-approvals-and-sandbox has no wall, and a command a person approves "
    "to run outside the sandbox runs outside it"
)


def plan_codex(project: Path, state: str, home: Path | None = None) -> tuple[Path, str, str]:
    """What `wall_codex` would write: the project's `.codex/config.toml`, its text now and its
    text with Tether's profile. Raises, having written nothing, where a setting of the user's
    would undo the profile (`codex_conflicts`) or the file cannot take it."""
    home = home or codex_home()
    conflicts = codex_conflicts(project, home)
    if conflicts:
        said = "; ".join(f"{path}: {what}" for path, what in conflicts)
        raise TetherError(
            "invalid_value",
            f"Codex's sandbox cannot hold strict mode's wall here: {said}. Change that (it is "
            "yours, or your administrator's, to change), then run this again; nothing was "
            "written",
            conflicts=[{"file": path, "what": what} for path, what in conflicts],
        )
    path = project / CODEX_CONFIG
    profile = codex_profile(project, state, home)
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    kept = _without_ours(before)
    while kept and not kept[-1].strip():
        kept.pop()
    text = "\n".join([_SELECT, *kept, *([""] if kept else []), *_codex_block(profile)]) + "\n"
    try:
        written: Any = _profile_in(_read_toml(path, text))
    except TetherError:
        written = None
    if written != profile:
        raise TetherError(
            "invalid_value",
            f"{path}: Tether's permission profile cannot be added to it as it is (a "
            "`permissions` table written inline?): nothing was written",
            path=str(path),
        )
    return path, before, text


def wall_codex(project: Path, state: str, home: Path | None = None) -> dict[str, Any]:
    """Write Tether's permission profile into the project's `.codex/config.toml` and select it
    (`default_permissions`): Codex's `:workspace` (the project and the temporary folders
    writable, everything readable) with the walled paths read-only (`codex_read_only`). The
    rest of the file is kept; what strict mode wrote before is replaced. Refused, nothing
    written, where `plan_codex` says why. Returns what was set, with `notes` where a walled
    path lies in a folder the agent's commands may write."""
    from tether.files import write_file

    home = home or codex_home()
    path, before, text = plan_codex(project, state, home)
    if text != before:
        write_file(path, text, root=project)
    inside, outside = codex_read_only(project, state, home)
    out: dict[str, Any] = {
        "file": CODEX_CONFIG,
        "profile": CODEX_PROFILE,
        "read_only": [*inside, *outside],
        "changed": text != before,
        "holds_when": CODEX_HOLDS_WHEN,
    }
    notes = _codex_notes(project, [state, str(home)])
    return {**out, **({"notes": notes} if notes else {})}


def _codex_notes(project: Path, paths: list[str]) -> list[str]:
    """For each walled path outside the project that lies in a folder Codex's `:workspace`
    lets the agent's commands write (the temporary folders), why the wall may not hold it."""
    import tempfile

    writable = {"/tmp", tempfile.gettempdir()}
    out = []
    for path in paths:
        real = os.path.realpath(path)
        if is_inside(real, str(project.resolve())):
            continue
        for folder in sorted(writable):
            if is_inside(real, os.path.realpath(folder)):
                out.append(
                    f"{path} lies in {folder}, which the agent's commands may write: the wall "
                    "keeps it read-only, but a command could rename a folder above it, taking "
                    "it along; keep it outside the temporary folders"
                )
                break
    return out


def codex_wall_problems(
    project: Path, state: str, home: Path | None = None
) -> list[tuple[str, bool]]:
    """What keeps Tether's profile from holding in Codex for `project`, each said for a person
    with whether writing the profile again puts it right: the project's `.codex/config.toml`
    not selecting it, or it not as strict mode writes it now (it does); every setting that
    would undo it (`codex_conflicts`) and a file that is not TOML (it does not: they are the
    user's). Empty: the wall is as set."""
    home = home or codex_home()
    try:
        conflicts = codex_conflicts(project, home)
        data = _read_toml(project / CODEX_CONFIG)
    except TetherError as exc:
        return [(exc.message, False)]
    out = [(f"{where}: {what}", False) for where, what in conflicts]
    if data.get("default_permissions") != CODEX_PROFILE:
        out.append((f"{CODEX_CONFIG} does not select Tether's profile ({CODEX_PROFILE})", True))
    elif _profile_in(data) != codex_profile(project, state, home):
        out.append((f"{CODEX_CONFIG}: Tether's profile is not as strict mode sets it", True))
    return out
