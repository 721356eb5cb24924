"""Setting a project up, a command family of its own: `tether init [DIR]` and
`tether install skill --target claude|agents`.

Owns what `init` writes (the shipped examples under `DIR/examples/`, a guard configuration at
`DIR/.tether/guard.yaml` with the workflow binding section, the next three commands to run, and
the command installing the guard into each other agent)
and that it never overwrites: each file that exists, or whose folder is a symbolic link or not a
folder, is skipped and named (a file that already holds what `init` would write is only counted,
`unchanged`: in Tether's own checkout every example is), and a new file is created exclusively,
so nothing already there is changed. Owns where `install skill` puts the agent skill: Claude Code's
`.claude/skills/tether/SKILL.md`, or a section of `AGENTS.md` between markers, replaced in place
on the next install and nothing else in the file touched. It does not own the skill's text or
the examples (`skills/`, `examples/`, found by `tether.shipped`) or the guard's configuration
(its format, `tether.guard.rules.config`, and its starter text and plugin check, which `init`
imports from the guard when it runs); the `tether` command (`tether.cli.main`) reaches this
family by name only.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from tether import shipped
from tether.command.args import Command, Parsed
from tether.command.output import emit, report, run_command
from tether.errors import EXIT_OK, TetherError
from tether.files import linked_folder, write_file

INIT = Command(
    "init",
    "write the examples and a guard configuration into DIR (default: here); nothing is overwritten",
    ("DIR",),
    0,
    help="Writes DIR/examples/ (the example trees) and DIR/.tether/guard.yaml, skipping every\n"
    "file that exists, and prints the next three commands to run in DIR.",
)
SKILL = Command(
    "install skill",
    "install the skill that teaches an agent the Tether loop",
    values=("--target", "--dir"),
    help="--target T   claude (.claude/skills/tether/SKILL.md) or agents (a section of AGENTS.md)\n"
    "--dir D      the project directory (default: the working directory)",
)
GUARD_CONFIG = os.path.join(".tether", "guard.yaml")
# Appended to the guard's starter configuration (`tether.guard.harness.install.starter`).
WORKFLOW_TEXT = """\
    # Bind a Claude Code session to the Tether execution it starts or resumes, and keep the
    # agent from stopping while that execution has an open step.
    workflow:
      bind: auto
      stop: block
"""
START, END = "<!-- tether:skill:start -->", "<!-- tether:skill:end -->"
_EXISTS = "exists; left as it is"


def init_main(argv: list[str]) -> int:
    return run_command(INIT, argv, _init)


def install_main(argv: list[str]) -> int:
    if argv[:1] == ["skill"]:
        return run_command(SKILL, argv[1:], _install_skill)
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(SKILL.help_text())
        return EXIT_OK
    given = f"got {argv[0]!r}" if argv else "got nothing"
    return report(TetherError("usage", f"tether install installs skill ({given}): {SKILL.usage()}"))


# -- init ---------------------------------------------------------------------------------------


def _init(p: Parsed) -> int:
    root = os.path.abspath(p.args.get("DIR") or ".")
    if os.path.exists(root) and not os.path.isdir(root):
        raise TetherError("invalid_value", f"{root} is not a folder", path=root)
    os.makedirs(root, exist_ok=True)
    files = _example_files()
    files.append((GUARD_CONFIG, _guard_config().encode()))
    created: list[str] = []
    skipped: list[dict[str, str]] = []
    unchanged = 0
    for relative, data in files:
        reason = _create(root, relative, data)
        if reason is None:
            created.append(relative.replace(os.sep, "/"))
        elif reason == _EXISTS and _holds(os.path.join(root, relative), data):
            unchanged += 1
        else:
            skipped.append({"path": relative.replace(os.sep, "/"), "reason": reason})
    commands, note = _next_steps(root)
    emit(
        {
            "dir": root,
            "created": created,
            "skipped": skipped,
            "unchanged": unchanged,
            "next": commands,
            "run_next_in": root,
            "note": note,
            "other_agents": _other_agents(),
        }
    )
    return EXIT_OK


def _example_files() -> list[tuple[str, bytes]]:
    """Every shipped example file as (path under DIR, content), in a stable order."""
    source = shipped.folder("examples")
    out = []
    for folder, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out.append((os.path.join("examples", os.path.relpath(path, source)), f.read()))
    return out


def _guard_config() -> str:
    """The guard's starter configuration (its profile and on_error mode), with the workflow
    section."""
    from tether.guard.harness.failsafe import DEFAULT_ON_ERROR
    from tether.guard.harness.install import starter

    return starter(DEFAULT_ON_ERROR) + WORKFLOW_TEXT


def _create(root: str, relative: str, data: bytes) -> str | None:
    """Create `root/relative` holding `data`; the reason it was left alone otherwise."""
    linked = linked_folder(root, os.path.join(root, relative))
    if linked is not None:
        return f"its folder {linked} is a symbolic link; left alone"
    folder = root
    for part in relative.split(os.sep)[:-1]:
        folder = os.path.join(folder, part)
        if not os.path.isdir(folder):
            if os.path.lexists(folder):
                return f"{os.path.relpath(folder, root)} is not a folder; left alone"
            os.mkdir(folder)
    path = os.path.join(root, relative)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return _EXISTS
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return None


def _holds(path: str, data: bytes) -> bool:
    """Whether `path` is a regular file of its own (not a link, a FIFO or a device) holding
    exactly `data`."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.read(len(data) + 1) == data


def _tether() -> str:
    """`tether` as a person runs it next: this installation's command under uvx or when it is
    not on PATH, else `tether`."""
    from tether.command.launch import ABSOLUTE, UVX, launch

    how = launch()
    return how.shell() if how.how in (UVX, ABSOLUTE) else "tether"


def _next_steps(root: str) -> tuple[list[str], str]:
    """The commands to run next, spelt the way this installation is started, and a note on the
    guard: when Tether's Claude Code plugin is enabled, it runs the guard's hooks, so installing
    them is left out."""
    from pathlib import Path

    from tether.guard.harness.install import plugin_enabled

    tether = _tether()
    plugin = plugin_enabled(Path(root))
    hooks = f"Tether's Claude Code plugin (enabled in {plugin})" if plugin else "the guard"
    note = (
        f"{GUARD_CONFIG} has a workflow section (bind: auto, stop: block): with {hooks} "
        "installed, a Claude Code session is bound to the execution it starts and is not let "
        "stop while a step is open"
    )
    commands = [
        f"{tether} start examples/hello-world.yaml run.json",
        f"{tether} submit run.json success",
    ]
    if plugin:
        return commands, note + " (the plugin runs the guard's hooks: do not install them too)"
    return [*commands, f"{tether} guard install claude"], note


def _other_agents() -> list[str]:
    """The command that installs the guard into each agent but Claude Code."""
    from tether.guard.cli import AGENTS

    return [f"{_tether()} guard install {agent}" for agent in AGENTS if agent != "claude"]


# -- install skill ------------------------------------------------------------------------------


def _install_skill(p: Parsed) -> int:
    target = p.options.get("--target")
    if target not in ("claude", "agents"):
        raise TetherError("usage", f"install skill needs --target claude or agents, got {target!r}")
    project = Path(p.options.get("--dir", ".")).resolve()
    if not project.is_dir():
        raise TetherError("not_found", f"--dir {project} is not a folder", path=str(project))
    skill = shipped.read("skills", "tether", "SKILL.md")
    if target == "claude":
        path = project / ".claude" / "skills" / "tether" / "SKILL.md"
        text = skill
    else:
        path = project / "AGENTS.md"
        text = _with_section(path, _body(skill))
    before = _read_or_none(path)
    had = before is not None and (target == "claude" or START in before)
    status = "unchanged" if before == text else "updated" if had else "added"
    if status != "unchanged":
        write_file(path, text, root=project)
    emit({"status": status, "target": target, "file": str(path)})
    return EXIT_OK


def _body(skill: str) -> str:
    """The skill without its frontmatter."""
    if skill.startswith("---\n"):
        end = skill.find("\n---\n", 4)
        if end >= 0:
            return skill[end + len("\n---\n") :].lstrip("\n")
    return skill


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _with_section(path: Path, body: str) -> str:
    """AGENTS.md with Tether's section (between the markers) in place, or appended."""
    section = f"{START}\n{body.rstrip()}\n{END}\n"
    current = _read_or_none(path)
    if current is None:
        return section
    starts, ends = current.count(START), current.count(END)
    if (starts, ends) == (0, 0):
        return current.rstrip("\n") + "\n\n" + section if current.strip() else section
    first, last = current.find(START), current.find(END)
    if (starts, ends) != (1, 1) or last < first:
        raise TetherError(
            "invalid_value",
            f"{path} has Tether's markers out of order or more than once ({START} ... {END}); "
            "fix or remove them, then install again; the file was left untouched",
            path=str(path),
        )
    after = current[last + len(END) :]
    return current[:first] + section + after.removeprefix("\n")
