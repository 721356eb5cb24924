"""`tether guard …`: the guard's command line, above the guard's three layers (`rules`,
`binding`, `harness`).

Owns:
- the commands `check`, `prompt`, `hook`, `serve`, `install AGENT` (`AGENTS`), `log`, `replay`,
  `status` (the workflow bindings), `test`, `doctor` (its checks are `harness.doctor`'s) and
  `harnesses` (`harness.capabilities`), and their arguments, parsed by the command frame's parser
  (`tether.command.args`);
- their output, through the frame every `tether` command shares (`tether.command.output`): JSON on
  stdout (`doctor` and `harnesses`: a table unless `--json`), errors as JSON on stderr with the
  exit code of their class; `hook` prints exactly the answer of the harness `--harness` names
  (nothing when there is nothing to say), and answers even a command line it cannot parse.
It does not own what a hook answers, the last good configuration or the failsafe answer: the one
hook pipeline does (`harness.pipeline`). The main `tether` command calls `main(argv)` with the
arguments after `guard`; `python -m tether.guard.cli` runs it too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tether.command.args import Command, Parsed, parse
from tether.command.output import Handler, emit, emit_error, run_family, show
from tether.errors import EXIT_OK, TetherError
from tether.guard.harness.failsafe import DEFAULT_DEADLINE, ON_ERROR
from tether.guard.rules.plan import CONFIG_ENV, DEFAULT_CONFIG, find_config

DEFAULT_PORT = 8977
DEFAULT_LIMIT = 50
AGENTS = ("claude", "codex", "gemini", "cursor", "copilot", "qwen", "droid", "opencode")

_CONFIG_HELP = (
    f"--config FILE     configuration file (default: ${CONFIG_ENV}, or {DEFAULT_CONFIG} in the\n"
    "                  project)\n"
)
_STATE_HELP = "--state-dir DIR   where session state and the error log are kept\n"
_HOOK_VALUES = ("--config", "--state-dir", "--on-error", "--deadline", "--harness")
_HOOK_HELP = (
    _CONFIG_HELP
    + _STATE_HELP
    + "--on-error MODE   a tool call the guard cannot decide is denied (block) or goes ahead\n"
    "                  (allow) (default: the configuration's on_error, else block)\n"
    "--deadline SECONDS  seconds before an undecided event counts as an error (default "
    f"{DEFAULT_DEADLINE:g})\n"
    "--harness NAME    whose hook events these are, answered in its format: claude (default),\n"
    "                  codex, gemini, cursor, copilot, qwen or droid\n"
    "--if-configured   a project that has no configuration and never had one (no last good\n"
    "                  plan of it) gets no answer, not the fallback rules (managed hooks)"
)

CHECK = Command(
    "guard check",
    "validate a configuration and list its active rules",
    ("CONFIG",),
    1,
    repeated=("--tree",),
    help="--tree TREE       also check the tools policies of this tree file (repeatable)",
)
PROMPT = Command(
    "guard prompt",
    "print the system-prompt section of a configuration",
    ("CONFIG",),
    1,
    help="`prompt` is the whole section; `session_start` is what a session is given when it "
    "starts: the section short (a long profile prompt cut to its heading and first paragraph), "
    "or whole under `context: full`.",
)
HOOK = Command(
    "guard hook",
    "answer one hook event (stdin): Claude Code's, or the one --harness names",
    values=_HOOK_VALUES,
    flags=("--if-configured",),
    help=_HOOK_HELP,
)
SERVE = Command(
    "guard serve",
    "serve Claude Code http hooks, kept warm",
    values=(*_HOOK_VALUES, "--host", "--port", "--token", "--max-body-bytes"),
    repeated=("--allow-host",),
    help=_HOOK_HELP + f"\n--host ADDR       address (default 127.0.0.1)\n"
    f"--port N          port (default {DEFAULT_PORT}; 0 picks a free one)\n"
    "--token TOKEN     bearer token hooks must send (default: $TETHER_GUARD_TOKEN); required\n"
    "                  off loopback\n"
    "--allow-host HOST also accept Host/Origin HOST (repeatable; loopback is always accepted)\n"
    "--max-body-bytes N  largest request body accepted (default 8388608: 8 MiB)",
)
LOG = Command(
    "guard log",
    "print the errors the guard logged",
    values=("--state-dir", "--limit"),
    help=_STATE_HELP + f"--limit N         the last N errors (default {DEFAULT_LIMIT})",
)
INSTALL = Command(
    "guard install",
    "install the guard's hooks into an agent",
    ("AGENT",),
    1,
    values=("--settings", "--config", "--command", "--http", "--on-error"),
    flags=("--managed", "--strict"),
    help=f"AGENT is {', '.join(AGENTS[:-1])} or {AGENTS[-1]}.\n"
    "--settings FILE   the hooks file (claude: .claude/settings.json, or\n"
    "                  .claude/settings.local.json when the command is a path on this machine;\n"
    "                  codex: .codex/hooks.json; gemini: .gemini/settings.json; cursor:\n"
    "                  .cursor/hooks.json; copilot: .github/hooks/tether.json; qwen:\n"
    "                  .qwen/settings.json; droid: .factory/settings.json;\n"
    "                  opencode: .opencode/plugin/tether.js)\n"
    f"--config FILE     configuration file (default {DEFAULT_CONFIG}; created when missing)\n"
    "--command CMD     how hooks invoke tether (default: tether when it is on PATH, uvx --from\n"
    "                  SOURCE tether under uvx, else this installation's full path)\n"
    "--http URL        claude: install http hooks posting to this URL (see `serve`)\n"
    "--on-error MODE   block or allow, written into the hook command and a new configuration\n"
    "                  (default: the configuration's on_error, else block)\n"
    "--managed         claude: write the hooks into Claude Code's managed settings (the\n"
    "                  system's file, or --settings), which no project or user file can remove;\n"
    "                  an administrator's file: where you may not write it, says so\n"
    "--strict          claude, codex: turn the harness's sandbox on around the agent's\n"
    "                  commands, walled off from .tether/, the guard's state and the hook\n"
    "                  registrations (claude: .claude/settings.local.json; codex: a permission\n"
    "                  profile in .codex/config.toml); sets workflow.strict, and a\n"
    "                  configuration with strict: true does the same",
)
REPLAY = Command(
    "guard replay",
    "run a recorded Claude Code session through a rule set",
    ("TRANSCRIPT",),
    1,
    values=("--config",),
    flags=("--explain",),
    help=_CONFIG_HELP + "--explain         each decision with its rules' sources and values",
)
STATUS = Command(
    "guard status",
    "which execution each session is bound to (workflow)",
    values=("--session", "--config", "--state-dir"),
    help="--session ID      one session: its binding and its execution's open steps\n"
    + _CONFIG_HELP
    + _STATE_HELP.rstrip("\n"),
)
DOCTOR = Command(
    "guard doctor",
    "say what is wrong with a project's guard, and --fix what can be",
    ("DIR",),
    0,
    values=("--config", "--state-dir"),
    flags=("--fix", "--json"),
    help="DIR               the project (default: the current folder)\n"
    + _CONFIG_HELP
    + _STATE_HELP
    + "--fix             put back what can be: a removed hook, disableAllHooks in a project file,\n"
    "                  Codex's strict-mode profile in .codex/config.toml\n"
    "--json            the findings as JSON (default: a table)\n"
    "Checks: the configuration (unreadable, lost), each harness's hooks (missing, doubled,\n"
    "disabled), Claude Code's and Codex's sandboxes in strict mode, harness versions never\n"
    "tested. Exits 3 while a problem remains.",
)
HARNESSES = Command(
    "guard harnesses",
    "what each agent harness lets the guard do, by the tests (table; --json for the data)",
    flags=("--json",),
    help="--json            the table as JSON: per harness, the version tested and the test\n"
    "                  that proves each capability",
)
TEST = Command(
    "guard test",
    "run fixture cases: given these calls, expect these decisions",
    ("CASES",),
    1,
    values=("--config",),
    flags=("--explain",),
    help="--config FILE     configuration file (default: the cases file's `config`)\n"
    "--explain         each decision with its rules' sources and values",
)


def _state_dir(given: str | None) -> str:
    from tether.guardlog import default_state_dir

    return given or default_state_dir()


def _on_error(p: Parsed) -> str | None:
    mode = p.options.get("--on-error")
    if mode is not None and mode not in ON_ERROR:
        raise TetherError("usage", f"--on-error takes block or allow, got {mode!r}")
    return mode


def _deadline(p: Parsed) -> float:
    text = p.options.get("--deadline")
    if text is None:
        return DEFAULT_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise TetherError("usage", f"--deadline takes a number of seconds > 0, got {text!r}")
    return value


def _classifier_warnings(plan: dict[str, Any]) -> list[dict[str, Any]]:
    if plan["classify_turns"] and plan["brain"] is None:
        message = (
            "classify_turns is on but no brain is configured: hooks will not classify "
            "(the Python API may pass agent_brain)"
        )
        return [{"path": "classify_turns", "message": message}]
    return []


def _stop_cap_warnings(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a harness ends a turn itself at or before `max_stop_blocks` (the caps the field
    tests saw, `harness.capabilities`), so that the cap is never reached there: Claude Code's own
    limit can be raised, the others' cannot."""
    from tether.guard.harness.capabilities import stop_caps
    from tether.guard.harness.cli_agents import NAMES

    cap = plan["workflow"]["max_stop_blocks"]
    late = {h: n for h, n in stop_caps().items() if cap >= n}
    out = []
    claude = late.pop("claude", None)
    if claude is not None:
        message = (
            f"max_stop_blocks is {cap}, but Claude Code ends a turn itself at the {claude}th "
            "stop blocked in a row, so there the cap is never reached and no stop is let "
            f"through: keep it at {claude - 1} or less, or raise Claude Code's own limit with "
            "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
        )
        out.append({"path": "workflow.max_stop_blocks", "message": message})
    if late:
        ends = ", ".join(f"{NAMES[h]} at the {n}th" for h, n in late.items())
        message = (
            f"max_stop_blocks is {cap}, but {ends} stop blocked in a row ends a turn itself, so "
            f"there the cap is never reached and no stop is let through: keep it at "
            f"{min(late.values()) - 1} or less for them"
        )
        out.append({"path": "workflow.max_stop_blocks", "message": message})
    return out


def _policy_warnings(trees: list[str]) -> list[dict[str, Any]]:
    """An entry of a tree's `tools` policy naming a tool no supported harness has (a bare
    name; `mcp__server__tool`, dotted names and `*` are left alone)."""
    from tether.guard.harness.adapters import tool_names
    from tether.guard.rules.triggers import canonical
    from tether.tree.load import load_tree

    known = {canonical(n) for names in tool_names().values() for n in names}
    out = []
    for file in trees:
        stack = [(load_tree(file).data["root"], "")]
        while stack:
            node, above = stack.pop()
            where = f"{above}/{node['name']}"
            stack.extend((child, where) for child in reversed(node.get("children", [])))
            for key, entries in node.get("tools", {}).items():
                for i, entry in enumerate(entries):
                    name = entry.split("(", 1)[0]
                    if name == "*" or "." in name or "__" in name or canonical(name) in known:
                        continue
                    message = (
                        f"{name!r} is a tool of none of Claude Code, Codex, Gemini CLI and Cursor "
                        "(by Claude Code's names: Bash, Read, Edit, Write, ...); an MCP tool is "
                        "written mcp__server__tool"
                    )
                    out.append(
                        {"file": file, "path": f"{where}/tools/{key}/{i}", "message": message}
                    )
    return out


def cmd_check(p: Parsed) -> int:
    from tether.guard.rules.ruleset import Guard

    guard = Guard.from_file(str(p.args["CONFIG"]))
    emit(
        {
            "ok": True,
            "profile": None if guard.plan["profile"] is None else guard.plan["profile"]["name"],
            "thresholds": guard.plan["thresholds"],
            "rules": [
                {
                    "id": r.id,
                    "when": r.when,
                    "action": r.action,
                    "trigger": sorted(r.trigger.names) or ["*"],
                    "source": r.source,
                }
                for r in guard.rules
            ],
            "tracking": {k: sorted(v) for k, v in guard.plan["tracking"].items()},
            "classifier": guard.classifier is not None,
            "workflow": guard.plan["workflow"],
            "warnings": [
                *guard.warnings,
                *_classifier_warnings(guard.plan),
                *_stop_cap_warnings(guard.plan),
                *_policy_warnings(p.multi.get("--tree", [])),
            ],
        }
    )
    return EXIT_OK


def cmd_prompt(p: Parsed) -> int:
    from tether.guard.rules.ruleset import Guard

    guard = Guard.from_file(str(p.args["CONFIG"]))
    emit(
        {
            "prompt": guard.system_prompt(),
            "context": guard.plan["context"],
            "session_start": guard.session_context(),
        }
    )
    return EXIT_OK


def _harness(p: Parsed) -> str:
    from tether.guard.harness.adapters import HARNESSES

    name = p.options.get("--harness", "claude")
    if name not in HARNESSES:
        raise TetherError("usage", f"--harness takes {', '.join(HARNESSES)}, got {name!r}")
    return name


def _harness_flag(argv: list[str]) -> str:
    """`--harness` of a hook command line that may not parse as a whole (claude when it is not
    there or names no harness)."""
    from tether.guard.harness.adapters import HARNESSES

    given = [
        token.partition("=")[2] if token.startswith("--harness=") else argv[i + 1]
        for i, token in enumerate(argv)
        if token.startswith("--harness=") or (token == "--harness" and i + 1 < len(argv))
    ]
    return given[-1] if given and given[-1] in HARNESSES else "claude"


def run_hook(argv: list[str]) -> int:
    """`tether guard hook ARGS`: one event from stdin, the harness's output on stdout. A command
    line that cannot be parsed is a guard that cannot start: the event is still answered."""
    try:
        p = parse(HOOK, argv)
        _on_error(p), _deadline(p), _harness(p)
    except TetherError as exc:
        from tether.guard.harness.pipeline import hook

        harness = _harness_flag(argv)
        read = sys.stdin.buffer.read
        return _answer(harness, hook(harness, read, _state_dir(None), DEFAULT_DEADLINE, broken=exc))
    if p.help:
        sys.stdout.write(HOOK.help_text())
        return EXIT_OK
    return cmd_hook(p)


def cmd_hook(p: Parsed) -> int:
    """Answer the event on stdin within `--deadline`, or as `failsafe` says."""
    from tether.guard.harness.pipeline import hook

    return _answer(
        _harness(p),
        hook(
            _harness(p),
            sys.stdin.buffer.read,
            _state_dir(p.options.get("--state-dir")),
            _deadline(p),
            config=p.options.get("--config"),
            on_error=_on_error(p),
            if_configured="--if-configured" in p.flags,
        ),
    )


def _answer(harness: str, answered: Any) -> int:
    """Print a hook's answer (one line of JSON, or nothing) and its exit code; a failure's error
    goes on stderr (JSON, except where the harness would read it as its answer)."""
    from tether.guard.harness.adapters import error_text

    if answered.code and answered.error is not None:
        text = error_text(harness, answered.error)
        if text is None:
            emit_error(answered.error)
        else:
            sys.stderr.write(text + "\n")
    if answered.out is not None:
        sys.stdout.write(json.dumps(answered.out) + "\n")
    return int(answered.code)


def cmd_serve(p: Parsed) -> int:
    from tether.guard.harness.pipeline import load
    from tether.guard.harness.serve import DEFAULT_MAX_BODY_BYTES, TOKEN_ENV, ServeOptions, serve

    options = ServeOptions.from_command(
        p,
        TOKEN_ENV,
        port=DEFAULT_PORT,
        max_body_bytes=DEFAULT_MAX_BODY_BYTES,
        on_error=_on_error(p),
        deadline=_deadline(p),
        harness=_harness(p),
    )
    state_dir = _state_dir(p.options.get("--state-dir"))
    return serve(load(p.options.get("--config"), state_dir), state_dir, options)


def cmd_log(p: Parsed) -> int:
    from tether.guardlog import log_path, read_log

    state_dir = _state_dir(p.options.get("--state-dir"))
    emit(
        {
            "log": log_path(state_dir),
            "errors": read_log(state_dir, p.number("--limit", DEFAULT_LIMIT) or 0),
        }
    )
    return EXIT_OK


def cmd_install(p: Parsed) -> int:
    from tether.command.launch import launch
    from tether.guard.harness.install import install_claude, install_harness, settings_file

    agent, http = str(p.args["AGENT"]), p.options.get("--http")
    if agent not in AGENTS:
        raise TetherError(
            "usage",
            f"install takes {', '.join(AGENTS)}, got {agent!r}; usage: {INSTALL.usage()}",
        )
    if "--strict" in p.flags and agent not in ("claude", "codex"):
        raise TetherError(
            "usage",
            f"--strict is built from Claude Code's and Codex's sandboxes; {agent} has none "
            "that Tether configures (docs/workflow-guard.md, Strict mode)",
        )
    command = launch(p.options.get("--command"))
    config = p.options.get("--config") or DEFAULT_CONFIG
    if "--managed" in p.flags:
        if "--strict" in p.flags:
            raise TetherError("usage", "--managed and --strict: install one, then the other")
        return _install_managed(p, agent, command, config)
    if agent == "opencode":
        return _install_opencode(p, command, config)
    if agent != "claude":
        if http:
            raise TetherError("usage", f"{agent} runs command hooks only: drop --http")
        strict = agent == "codex" and _codex_strict_wanted(p, Path(config))
        result = install_harness(
            agent,
            file=p.options.get("--settings"),
            config=config,
            command=command.shell(),
            on_error=_on_error(p),
            portable=command.portable,
        )
        if strict:
            result["strict"] = _wall_codex(p, Path(config))
        emit({**result, "launch": command.to_dict()})
        return EXIT_OK
    settings, note = settings_file(p.options.get("--settings"), command, http=http is not None)
    result = install_claude(
        settings=settings,
        config=config,
        command=command.shell(),
        http=http,
        on_error=_on_error(p),
    )
    wall = _strict(p, Path(config))
    emit(
        {
            **result,
            "launch": command.to_dict(),
            **({"note": note} if note else {}),
            **({"strict": wall} if wall else {}),
        }
    )
    return EXIT_OK


def _install_managed(p: Parsed, agent: str, command: Any, config: str) -> int:
    from tether.guard.binding.registrations import managed_settings
    from tether.guard.harness.install import install_managed

    if agent != "claude" or p.options.get("--http"):
        raise TetherError("usage", "--managed installs Claude Code's command hooks: claude alone")
    result = install_managed(
        p.options.get("--settings") or managed_settings(),
        config,
        command=command.shell(),
        on_error=_on_error(p),
    )
    emit({**result, "launch": command.to_dict()})
    return EXIT_OK


def _install_opencode(p: Parsed, command: Any, config: str) -> int:
    """OpenCode's plugin, whose hook command is Claude Code's (the plugin sends its shape)."""
    from tether.guard.harness.install import harness_command
    from tether.guard.harness.opencode import install_opencode

    if p.options.get("--http"):
        raise TetherError("usage", "opencode runs its plugin only: drop --http")
    line = harness_command("claude", config, command.shell(), _on_error(p))
    emit({**install_opencode(p.options.get("--settings"), line), "launch": command.to_dict()})
    return EXIT_OK


def _strict(p: Parsed, config: Path) -> dict[str, Any] | None:
    """Strict mode for Claude Code, when `--strict` asks for it (which turns on the
    configuration's `workflow.strict`) or the configuration has it: its sandbox set up as the
    wall (`harness.wall`)."""
    from tether.guard.harness.wall import mark_strict, wall_claude
    from tether.guard.rules.config import plan_from_file

    if not config.exists():  # http hooks: the configuration is `serve`'s
        if "--strict" in p.flags:
            raise TetherError(
                "usage",
                f"--strict sets workflow.strict in {config}, which is not there: give --config",
            )
        return None
    marked = mark_strict(config) if "--strict" in p.flags else False
    if not plan_from_file(config)[0]["workflow"]["strict"]:
        return None
    from tether.guard.harness.claude import LOCAL_SETTINGS
    from tether.guardlog import default_state_dir

    settings = Path(p.options.get("--settings") or LOCAL_SETTINGS)
    return {**wall_claude(settings, Path.cwd(), default_state_dir()), "config_marked": marked}


def _codex_strict_wanted(p: Parsed, config: Path) -> bool:
    """Whether this install walls Codex: `--strict`, or a configuration that asks for strict
    mode. Refused before anything is written where it cannot be: a configuration that says
    `strict: false`, or a setting of the user's that would undo the wall (`wall.plan_codex`)."""
    from tether.guard.harness.doctor import strict_mode
    from tether.guard.harness.wall import plan_codex, strict_refused
    from tether.guardlog import default_state_dir

    if "--strict" not in p.flags and not strict_mode(str(config)):
        return False
    refused = strict_refused(config) if "--strict" in p.flags else None
    if refused is not None:
        raise refused
    plan_codex(Path.cwd(), default_state_dir())
    return True


def _wall_codex(p: Parsed, config: Path) -> dict[str, Any]:
    """Strict mode for Codex: the configuration marked (`--strict`), and Tether's permission
    profile written into the project's `.codex/config.toml` (`harness.wall`)."""
    from tether.guard.harness.wall import mark_strict, wall_codex
    from tether.guardlog import default_state_dir

    marked = mark_strict(config) if "--strict" in p.flags else False
    return {**wall_codex(Path.cwd(), default_state_dir()), "config_marked": marked}


def cmd_replay(p: Parsed) -> int:
    from tether.guard.harness.transcript import replay
    from tether.guard.rules.ruleset import Guard

    guard = Guard.from_file(find_config(p.options.get("--config")))
    emit(replay(guard, str(p.args["TRANSCRIPT"]), explain="--explain" in p.flags))
    return EXIT_OK


def cmd_status(p: Parsed) -> int:
    from tether.guard.binding.binder import Binder
    from tether.guard.rules.plan import load_plan

    project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    try:
        config = find_config(p.options.get("--config"), project)
    except TetherError:
        config = None  # no configuration: no configured trace, sessions may still be bound
    settings = load_plan(config)["workflow"] if config else {"trace": None}
    binder = Binder(settings, _state_dir(p.options.get("--state-dir")))
    session = p.options.get("--session")
    if session:
        emit(binder.status(session, project))
    else:
        emit({"config": config, "trace": settings["trace"], "sessions": binder.sessions()})
    return EXIT_OK


def cmd_doctor(p: Parsed) -> int:
    from pathlib import Path

    from tether.errors import EXIT_INVALID
    from tether.guard.harness.doctor import Project, diagnose, repair, report

    root = Path(os.path.abspath(str(p.args.get("DIR") or ".")))
    if not root.is_dir():
        raise TetherError("not_found", f"no such project folder: {root}")
    given = p.options.get("--config")
    config = os.path.abspath(given) if given else str(root / DEFAULT_CONFIG)
    project = Project(root, config, _state_dir(p.options.get("--state-dir")))
    findings = diagnose(project)
    if "--fix" in p.flags:
        findings = repair(project, findings)
    left = [f for f in findings if f.severity == "problem" and not f.fixed]
    found = {
        "project": str(root),
        "config": config,
        "ok": not left,
        "findings": [f.to_dict() for f in findings],
    }
    show(p, found, lambda f: report(project, findings))
    return EXIT_INVALID if left else EXIT_OK


def cmd_test(p: Parsed) -> int:
    from tether.guard.rules.fixtures import run_cases

    report = run_cases(
        str(p.args["CASES"]), config=p.options.get("--config"), explain="--explain" in p.flags
    )
    emit(report)
    if report["failed"]:
        raise TetherError("verify_failed", f"{report['failed']} guard test case(s) failed")
    return EXIT_OK


def cmd_harnesses(p: Parsed) -> int:
    from tether.guard.harness.capabilities import render, shipped

    return show(p, shipped(), render)


COMMANDS: dict[str, tuple[Command, Handler]] = {
    "check": (CHECK, cmd_check),
    "prompt": (PROMPT, cmd_prompt),
    "hook": (HOOK, cmd_hook),
    "serve": (SERVE, cmd_serve),
    "log": (LOG, cmd_log),
    "install": (INSTALL, cmd_install),
    "replay": (REPLAY, cmd_replay),
    "status": (STATUS, cmd_status),
    "test": (TEST, cmd_test),
    "doctor": (DOCTOR, cmd_doctor),
    "harnesses": (HARNESSES, cmd_harnesses),
}


def main(argv: list[str]) -> int:
    """Run `tether guard <argv>`; returns the exit code."""
    if argv[:1] == ["hook"]:
        # The hook runs once per tool call, and answers even a command line it cannot parse.
        return run_hook(argv[1:])
    return run_family("guard", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
