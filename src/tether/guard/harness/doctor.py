"""`tether guard doctor`: what is wrong with a project's guard, and what can be put right.

Owns the checks and the repairs. The checks, each a `Finding` with the file it is about:

- `config_unreadable`: the configuration cannot be read (the hooks go on under the last good
  plan, or, with none, fall back on `confirm_destructive`); `config_lost`: it was there (a plan
  of it is kept) and is gone; `not_configured` (a note): there is none and never was.
- `hooks_missing`: an event that no hook of the guard answers, in a harness where the guard is
  installed (Claude Code: any settings file, the managed one included, or the plugin; Codex,
  Gemini CLI, Cursor: their hooks files); `hooks_doubled`: an event two of them answer (each
  event is still handled once, but one should go); `hooks_disabled`: a Claude Code settings file
  saying `disableAllHooks` (every hook off but the managed ones).
- `sandbox_off`: the configuration asks for strict mode (`workflow.strict`, read from the file
  itself, a missing key meaning off) and Claude Code's sandbox is not on, or lets a command out
  of it (`allowUnsandboxedCommands`); or, where the guard is installed in Codex, the project's
  `.codex/config.toml` does not select Tether's permission profile as strict mode writes it, or
  a setting of the user's would undo it (`wall.codex_wall_problems`); `no_sandbox` (a note):
  strict mode and a harness whose sandbox Tether does not configure.
- `harness_untested` (a warning): the version of an installed harness on PATH is not the one
  the guard was tested with (the shipped capability table, `harness.capabilities`).

`repair` puts back what it can: a removed hook (installed again where the guard's other hooks
are, with their command, configuration and `on_error`), `disableAllHooks` in a project's own
settings file, and Codex's strict-mode profile in the project's `.codex/config.toml` (not
where a setting of the user's undoes it: that is theirs to change). It never writes a
configuration: a lost or broken one is a person's to restore. It does not decide hook events
(`hooks`) or write settings itself (`install`, `wall`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

from tether.errors import TetherError
from tether.guard.binding.registrations import managed_settings
from tether.guard.harness.claude import (
    LOCAL_SETTINGS,
    SHARED_SETTINGS,
    coverage,
    read_settings,
    settings_sources,
)

_NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "cursor": "Cursor",
    "copilot": "Copilot CLI",
    "qwen": "Qwen Code",
    "droid": "Factory Droid",
}
_VERSION = re.compile(r"\d+\.\d+\.\d+")
PROBLEMS = ("config_unreadable", "config_lost", "hooks_missing", "hooks_disabled", "sandbox_off")


class Finding(NamedTuple):
    """One thing wrong with the guard: which check, the harness, the file, what, how to fix."""

    check: str
    harness: str
    where: str
    what: str
    fix: str
    fixed: bool = False

    @property
    def severity(self) -> str:
        if self.check in PROBLEMS:
            return "problem"
        return "note" if self.check in ("not_configured", "no_sandbox") else "warning"

    def to_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "severity": self.severity}


class Project(NamedTuple):
    """What the checks read: the project, its configuration file and the guard's state."""

    root: Path
    config: str
    state_dir: str

    def shown(self, path: str | Path) -> str:
        """A path as the report shows it: relative to the project when inside it."""
        relative = os.path.relpath(path, self.root)
        return str(path) if relative.startswith("..") else relative


def diagnose(project: Project) -> list[Finding]:
    """Every finding for the project, problems first."""
    config, plan = _configuration(project)
    configured = plan is not None or os.path.exists(project.config)
    found = [*config, *_claude(project, configured)]
    for harness in _hooks_files():
        found.extend(_harness(project, harness))
    installed = _installed(project)
    if configured and not installed:
        found.append(_nowhere(project))
    found.extend(_strict(project, plan, installed))
    found.extend(_versions(installed))
    return sorted(found, key=lambda f: ("problem", "warning", "note").index(f.severity))


def _hooks_files() -> list[str]:
    """The harnesses besides Claude Code whose project hooks file `install` writes."""
    from tether.guard.harness.adapters import INSTALLED
    from tether.guard.harness.install import HARNESS_FILES

    return [harness for harness in HARNESS_FILES if harness in INSTALLED]


def _installed(project: Project) -> set[str]:
    """The harnesses in which some hook of the guard is installed for the project."""
    from tether.guard.harness.install import HARNESS_FILES, guard_commands

    out = (
        {"claude"}
        if any(coverage(project.root, managed_settings())["installed"].values())
        else set()
    )
    for harness, name in HARNESS_FILES.items():
        if guard_commands(harness, read_settings(project.root / name)):
            out.add(harness)
    return out


def _nowhere(project: Project) -> Finding:
    """A configured project in which no harness runs the guard's hooks: they were removed (or
    never installed), so Claude Code's are the ones `--fix` installs."""
    from tether.command.launch import launch
    from tether.guard.harness.install import settings_file

    where = project.shown(project.root / settings_file(None, launch(None), http=False)[0])
    what = "no harness runs the guard's hooks: the project is configured but not guarded"
    fix = "tether guard doctor --fix (Claude Code), or tether guard install codex|gemini|cursor"
    return Finding("hooks_missing", "claude", where, what, fix)


def _configuration(project: Project) -> tuple[list[Finding], dict[str, Any] | None]:
    """The configuration's findings, and its plan (the last good one when it cannot be read)."""
    from tether.guard.rules.config import plan_from_file
    from tether.guard.rules.plan import last_plan

    last = last_plan(project.config, os.path.join(project.state_dir, "plans"))
    where = project.shown(project.config)
    fallback = (
        "the hooks go on under the last good plan read from it"
        if last is not None
        else "there is no last good plan of it, so the hooks fall back on confirm_destructive"
    )
    if not os.path.exists(project.config):
        if last is None:
            what = "no configuration: the project is not guarded"
            return [Finding("not_configured", "", where, what, "tether guard install claude")], None
        what = f"the configuration was there and is gone; {fallback}"
        return [Finding("config_lost", "", where, what, "restore it (git, a backup)")], last
    try:
        return [], plan_from_file(project.config)[0]
    except TetherError as exc:
        what = f"cannot be read ({exc.code}: {exc.message}); {fallback}"
        return [Finding("config_unreadable", "", where, what, f"tether guard check {where}")], last


def _claude(project: Project, configured: bool) -> list[Finding]:
    found = coverage(project.root, managed_settings())
    installed = any(found["installed"].values())
    files = settings_sources(project.root, managed_settings())
    out = []
    for source in found["disabled"] if installed or configured else ():
        what = "disableAllHooks: every hook is off but the managed settings' ones"
        fix = "remove disableAllHooks" + (" (--fix)" if source != "user_settings" else "")
        out.append(Finding("hooks_disabled", "claude", project.shown(files[source]), what, fix))
    missing = [event for event, sources in found["installed"].items() if not sources]
    if missing and installed:
        where = project.shown(_claude_home(project, found["installed"]))
        what = f"{', '.join(missing)} {_runs(missing)} no hook of the guard"
        out.append(Finding("hooks_missing", "claude", where, what, "tether guard doctor --fix"))
    for event, sources in found["installed"].items():
        if len(sources) > 1:
            names = [project.shown(files[s]) if s in files else "the plugin" for s in sources]
            what = f"{event} runs the guard's hooks {len(sources)} times: {', '.join(names)}"
            fix = "keep one: remove the others, or disable the plugin (/plugin)"
            out.append(Finding("hooks_doubled", "claude", names[-1], what, fix))
    return out


def _runs(events: list[str]) -> str:
    return "runs" if len(events) == 1 else "run"


def _claude_home(project: Project, installed: dict[str, list[str]]) -> Path:
    """The settings file most of the guard's Claude Code hooks are in (the project's shared
    one when they are nowhere but the plugin)."""
    files = settings_sources(project.root, managed_settings())
    counts: dict[str, int] = {}
    for sources in installed.values():
        for source in sources:
            if source in files:
                counts[source] = counts.get(source, 0) + 1
    return files[max(counts, key=counts.__getitem__)] if counts else project.root / SHARED_SETTINGS


def _harness(project: Project, harness: str) -> list[Finding]:
    from tether.guard.harness.adapters import INSTALLED
    from tether.guard.harness.install import HARNESS_FILES, guard_commands

    path = project.root / HARNESS_FILES[harness]
    commands = guard_commands(harness, read_settings(path))
    if not commands:
        return []
    where = project.shown(path)
    out = []
    missing = [event for event in INSTALLED[harness] if event not in commands]
    if missing:
        what = f"{', '.join(missing)} {_runs(missing)} no hook of the guard"
        out.append(Finding("hooks_missing", harness, where, what, "tether guard doctor --fix"))
    for event, lines in commands.items():
        if len(lines) > 1:
            what = f"{event} runs the guard's hook {len(lines)} times"
            out.append(Finding("hooks_doubled", harness, where, what, "keep one entry"))
    return out


def strict_mode(config: str) -> bool:
    """Whether the configuration file asks for strict mode (`workflow.strict`), read from the
    file itself so that it is known whatever else the file holds; a missing key is off."""
    from tether.guard.rules.config import behavior_root, read_yaml

    try:
        section = behavior_root(read_yaml(Path(config), config))[1].get("workflow")
    except (TetherError, AttributeError):
        return False
    return isinstance(section, dict) and section.get("strict") is True


def _sandbox(project: Project) -> dict[str, Any]:
    """Claude Code's `sandbox` settings as they apply (each key from the highest file)."""
    merged: dict[str, Any] = {}
    for path in settings_sources(project.root, managed_settings()).values():
        sandbox = read_settings(path).get("sandbox")
        if isinstance(sandbox, dict):
            merged.update(sandbox)
    return merged


def _strict(project: Project, plan: dict[str, Any] | None, installed: set[str]) -> list[Finding]:
    """The strict-mode findings: in each harness the guard is installed in (Claude Code's also
    where it is installed in none), its sandbox as strict mode sets it, or a note that it has
    none Tether configures."""
    if not strict_mode(project.config) and not (plan and plan["workflow"].get("strict")):
        return []
    out = _claude_wall(project) if "claude" in installed or not installed else []
    if "codex" in installed:
        out.extend(_codex_wall(project))
    for harness in sorted(installed - {"claude", "codex"}):
        what = f"strict mode: {_NAMES[harness]} has no sandbox Tether configures"
        out.append(Finding("no_sandbox", harness, "", what, "use Claude Code or Codex"))
    return out


def _claude_wall(project: Project) -> list[Finding]:
    """`sandbox_off` for Claude Code: its sandbox off, or letting a command out of it."""
    sandbox = _sandbox(project)
    fix = "tether guard install claude --strict"
    where = project.shown(project.root / SHARED_SETTINGS)
    if sandbox.get("enabled") is not True:
        what = "strict mode, but Claude Code's sandbox is off: the agent's commands run unwalled"
        return [Finding("sandbox_off", "claude", where, what, fix)]
    if sandbox.get("allowUnsandboxedCommands") is not False:
        what = "strict mode, but Claude Code lets a command run outside its sandbox"
        return [Finding("sandbox_off", "claude", where, what, fix)]
    return []


def _codex_wall(project: Project) -> list[Finding]:
    """`sandbox_off` for Codex: Tether's permission profile not selected in the project's
    `.codex/config.toml`, not as strict mode sets it, or undone by a setting of the user's
    (`wall.codex_wall_problems`). The project's own profile is the doctor's to put right; a
    setting of the user's is theirs."""
    from tether.guard.harness.wall import CODEX_CONFIG, codex_wall_problems

    problems = codex_wall_problems(project.root, project.state_dir)
    if not problems:
        return []
    fix = (
        "tether guard doctor --fix"
        if all(fixable for _, fixable in problems)
        else "change what is named, then tether guard install codex --strict"
    )
    said = "; ".join(what for what, _ in problems)
    what = f"strict mode, but Codex's sandbox is not as Tether set it: {said}"
    return [Finding("sandbox_off", "codex", CODEX_CONFIG, what, fix)]


def _versions(installed: set[str]) -> list[Finding]:
    """A warning for each harness the guard is `installed` in whose version on PATH was never
    tested (a harness not on PATH is not asked)."""
    from tether.guard.harness.capabilities import shipped

    tested = {row["harness"]: row["version"] for row in shipped()["tested"]}
    out = []
    for harness in sorted(installed & set(tested) & set(_NAMES)):
        version = _version(harness)
        if version is not None and version != tested[harness]:
            what = f"{_NAMES[harness]} {version} here; the guard was tested with {tested[harness]}"
            out.append(Finding("harness_untested", harness, "", what, "run the field tests"))
    return out


def _version(command: str) -> str | None:
    program = shutil.which(command)
    if program is None:
        return None
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(done.stdout + done.stderr)
    return match.group(0) if match else None


# -- repairs ---------------------------------------------------------------------------------


def repair(project: Project, findings: list[Finding]) -> list[Finding]:
    """The findings with each that could be put right put right (`fixed`)."""
    out = []
    for finding in findings:
        fixed = False
        if finding.check == "hooks_missing" and os.path.exists(project.config):
            fixed = _reinstall(project, finding)
        elif finding.check == "hooks_disabled" and "--fix" in finding.fix:
            fixed = _enable(project.root / finding.where)
        elif finding.check == "sandbox_off" and finding.harness == "codex":
            fixed = "--fix" in finding.fix and _wall_codex(project)
        out.append(finding._replace(fixed=fixed))
    return out


def _options(command: str) -> dict[str, str]:
    """The launcher, `--config` and `--on-error` of one of the guard's hook commands."""
    words = shlex.split(command)
    at = words.index("guard") if "guard" in words else len(words)
    out = {"command": shlex.join(words[:at])}
    for flag in ("--config", "--on-error"):
        if flag in words[at:-1]:
            out[flag] = words[words.index(flag, at) + 1]
    return out


def _reinstall(project: Project, finding: Finding) -> bool:
    """Install the guard's hooks again in the file that lost some, with the options of those
    it kept: a project's file only (a user's or the managed one is not the doctor's to write)."""
    from tether.guard.harness.install import guard_commands, install_claude, install_harness

    path = project.root / finding.where
    if not _inside(path, project.root):
        return False
    if finding.harness != "claude":
        commands = guard_commands(finding.harness, read_settings(path))
        given = _options(next(iter(commands.values()))[0])
        install_harness(
            finding.harness,
            str(path),
            given.get("--config", project.config),
            given["command"],
            given.get("--on-error"),
        )
        return True
    kept = guard_commands("claude", read_settings(path))
    line = next(iter(kept.values()))[0] if kept else f"{_launcher()} guard hook"
    http = line if line.startswith(("http://", "https://")) else None
    given = _options("tether guard hook" if http else line)
    config = given.get("--config", project.config).removeprefix("$CLAUDE_PROJECT_DIR/")
    install_claude(
        str(path), config, command=given["command"], http=http, on_error=given.get("--on-error")
    )
    return True


def _wall_codex(project: Project) -> bool:
    """Write Tether's permission profile into the project's `.codex/config.toml` again, as
    `tether guard install codex --strict` does; False where it is refused."""
    from tether.guard.harness.wall import wall_codex

    try:
        wall_codex(project.root, project.state_dir)
    except TetherError:
        return False
    return True


def _launcher() -> str:
    from tether.command.launch import launch

    return launch(None).shell()


def _inside(path: Path, root: Path) -> bool:
    from tether.files import is_inside

    return is_inside(os.path.realpath(path), os.path.realpath(root))


def _enable(path: Path) -> bool:
    """Take `disableAllHooks` out of a project's settings file."""
    from tether.files import write_file

    data = read_settings(path)
    if path.name not in (os.path.basename(SHARED_SETTINGS), os.path.basename(LOCAL_SETTINGS)):
        return False
    data.pop("disableAllHooks", None)
    write_file(path, json.dumps(data, indent=2) + "\n")
    return True


def report(project: Project, findings: list[Finding]) -> str:
    """The findings as a table for a person."""
    problems = [f for f in findings if f.severity == "problem" and not f.fixed]
    head = f"guard of {project.root}: " + (
        f"{len(problems)} problem(s)" if problems else "no problem"
    )
    fixed = sum(f.fixed for f in findings)
    lines = [head + (f", {fixed} fixed" if fixed else "")]
    if findings:
        width = max(len(f.check) for f in findings)
        for f in findings:
            where = (
                f" [{f.harness}{': ' + f.where if f.where else ''}]"
                if f.harness
                else f" [{f.where}]"
            )
            state = "fixed" if f.fixed else f"fix: {f.fix}"
            lines.append(f"  {f.severity:<7} {f.check:<{width}} {f.what}{where} ({state})")
    return "\n".join(lines) + "\n"
