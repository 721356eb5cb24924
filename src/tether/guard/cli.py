"""`tether guard …`: the guard's command line.

Owns the commands `check`, `prompt`, `hook`, `serve`, `install claude`, `log`, `replay`, `status`
(the workflow bindings, `binding`) and `test`: their arguments, parsed by the CLI's own parser
(`tether.cli.args`), and their output, through the frame every `tether` command shares
(`tether.cli.output`): JSON on stdout, errors as JSON on stderr with the exit code of their class.
The exception is `hook`, whose stdout is exactly Claude Code's hook output (nothing when there
is nothing to say). A hook that cannot decide answers as `failsafe` says: under `on_error: block`
a `PreToolUse` is denied (exit 0, or exit 2 when the event itself could not be read), otherwise
it exits 1, Claude Code's non-blocking error; every such error is logged. The main `tether`
command calls `main(argv)` with the arguments after `guard`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from tether.cli.args import Command, Parsed, parse
from tether.cli.output import Handler, emit, emit_error, run_family
from tether.errors import EXIT_OK, TetherError
from tether.guard.failsafe import DEFAULT_DEADLINE

CONFIG_ENV = "TETHER_GUARD_CONFIG"
DEFAULT_CONFIG = os.path.join(".tether", "guard.yaml")
DEFAULT_PORT = 8977
DEFAULT_LIMIT = 50
ON_ERROR = ("block", "allow")
AGENTS = ("claude",)

_CONFIG_HELP = (
    f"--config FILE     configuration file (default: ${CONFIG_ENV}, or {DEFAULT_CONFIG} in the\n"
    "                  project)\n"
)
_STATE_HELP = "--state-dir DIR   where session state and the error log are kept\n"
_HOOK_VALUES = ("--config", "--state-dir", "--on-error", "--deadline")
_HOOK_HELP = (
    _CONFIG_HELP
    + _STATE_HELP
    + "--on-error MODE   a tool call the guard cannot decide is denied (block) or goes ahead\n"
    "                  (allow) (default: the configuration's on_error, else block)\n"
    "--deadline SECONDS  seconds before an undecided event counts as an error (default "
    f"{DEFAULT_DEADLINE:g})"
)

CHECK = Command("guard check", "validate a configuration and list its active rules", ("CONFIG",), 1)
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
    "answer one Claude Code hook event (stdin)",
    values=_HOOK_VALUES,
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
    help=f"AGENT is {' or '.join(AGENTS)}.\n"
    "--settings FILE   the agent's settings file (default .claude/settings.json)\n"
    f"--config FILE     configuration file (default {DEFAULT_CONFIG}; created when missing)\n"
    "--command CMD     how hooks invoke tether (default: this installation's tether, by\n"
    "                  absolute path)\n"
    "--http URL        install http hooks posting to this URL (see `serve`)\n"
    "--on-error MODE   block or allow, written into the hook command and a new configuration\n"
    "                  (default: the configuration's on_error, else block)",
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


def _find_config(given: str | None, cwd: str | None = None) -> str:
    """`--config`, else `$TETHER_GUARD_CONFIG`, else `.tether/guard.yaml` in the project."""
    if given:
        return given
    if os.environ.get(CONFIG_ENV):
        return os.environ[CONFIG_ENV]
    base = os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd()
    path = os.path.join(base, DEFAULT_CONFIG)
    if not os.path.exists(path):
        raise TetherError(
            "not_found",
            f"no guard configuration: pass --config, set {CONFIG_ENV}, or create {DEFAULT_CONFIG}",
        )
    return path


def _state_dir(given: str | None) -> str:
    from tether.guard.session_store import default_state_dir

    return given or default_state_dir()


def _load(p: Parsed, cwd: str | None = None) -> Any:
    from tether.guard.engine import Guard

    return Guard.from_file(
        _find_config(p.options.get("--config"), cwd),
        cache_dir=os.path.join(_state_dir(p.options.get("--state-dir")), "plans"),
    )


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


def cmd_check(p: Parsed) -> int:
    from tether.guard.engine import Guard

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
            "warnings": [*guard.warnings, *_classifier_warnings(guard.plan)],
        }
    )
    return EXIT_OK


def cmd_prompt(p: Parsed) -> int:
    from tether.guard.engine import Guard

    guard = Guard.from_file(str(p.args["CONFIG"]))
    emit(
        {
            "prompt": guard.system_prompt(),
            "context": guard.plan["context"],
            "session_start": guard.session_context(),
        }
    )
    return EXIT_OK


def _read_payload(attempt: Any) -> dict[str, Any]:
    try:
        payload = json.loads(sys.stdin.read() or "{}")
    except ValueError as exc:
        raise TetherError("invalid_json", f"hook input is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise TetherError("invalid_json", "hook input must be a JSON object")
    attempt.payload = payload
    return payload


def _decide(p: Parsed, attempt: Any) -> dict[str, Any] | None:
    from tether.guard.hooks import handle
    from tether.guard.session_store import SessionStore

    payload = _read_payload(attempt)
    guard = _load(p, payload.get("cwd"))
    attempt.configured = guard.plan.get("on_error")
    attempt.started = True
    return handle(payload, guard, SessionStore(attempt.state_dir))


def run_hook(argv: list[str]) -> int:
    """`tether guard hook ARGS`: one event from stdin, Claude Code's output on stdout. A command
    line that cannot be parsed is a guard that cannot start: the event is still answered."""
    from tether.guard.failsafe import Attempt, within

    try:
        p = parse(HOOK, argv)
        _on_error(p), _deadline(p)
    except TetherError as exc:
        attempt = Attempt(_state_dir(None), None)
        with contextlib.suppress(Exception):  # learn the event, to answer it
            within(DEFAULT_DEADLINE, lambda: _read_payload(attempt))
        return _failed(attempt, exc)
    if p.help:
        sys.stdout.write(HOOK.help_text())
        return EXIT_OK
    return cmd_hook(p)


def cmd_hook(p: Parsed) -> int:
    """Answer the event on stdin within `--deadline`, or as `failsafe` says."""
    from tether.guard.failsafe import Attempt, within

    attempt = Attempt(_state_dir(p.options.get("--state-dir")), _on_error(p))
    try:
        out = within(_deadline(p), lambda: _decide(p, attempt))
    except Exception as exc:
        return _failed(attempt, exc)
    _hook_output(out)
    return EXIT_OK


def _failed(attempt: Any, exc: Exception) -> int:
    code, out, error = attempt.failed(exc)
    if code:
        emit_error(error)
    _hook_output(out)
    return int(code)


def _hook_output(out: dict[str, Any] | None) -> None:
    """Claude Code's hook output: one line of JSON, or nothing."""
    if out is not None:
        sys.stdout.write(json.dumps(out) + "\n")


def cmd_serve(p: Parsed) -> int:
    from tether.guard.serve import DEFAULT_MAX_BODY_BYTES, TOKEN_ENV, ServeOptions, serve

    options = ServeOptions(
        host=p.options.get("--host", "127.0.0.1"),
        port=p.number("--port", DEFAULT_PORT) or 0,
        token=p.options.get("--token") or os.environ.get(TOKEN_ENV) or None,
        allowed_hosts=tuple(p.multi.get("--allow-host", [])),
        max_body_bytes=p.number("--max-body-bytes", DEFAULT_MAX_BODY_BYTES) or 0,
        on_error=_on_error(p),
        deadline=_deadline(p),
    )
    return serve(_load(p), _state_dir(p.options.get("--state-dir")), options)


def cmd_log(p: Parsed) -> int:
    from tether.guard.failsafe import log_path, read_log

    state_dir = _state_dir(p.options.get("--state-dir"))
    emit(
        {
            "log": log_path(state_dir),
            "errors": read_log(state_dir, p.number("--limit", DEFAULT_LIMIT) or 0),
        }
    )
    return EXIT_OK


def cmd_install(p: Parsed) -> int:
    from tether.cli import tether_command
    from tether.guard.install import install_claude

    agent = str(p.args["AGENT"])
    if agent not in AGENTS:
        raise TetherError(
            "usage", f"install takes {' or '.join(AGENTS)}, got {agent!r}; usage: {INSTALL.usage()}"
        )
    emit(
        install_claude(
            settings=p.options.get("--settings", os.path.join(".claude", "settings.json")),
            config=p.options.get("--config") or DEFAULT_CONFIG,
            command=p.options.get("--command") or tether_command(),
            http=p.options.get("--http"),
            on_error=_on_error(p),
        )
    )
    return EXIT_OK


def cmd_replay(p: Parsed) -> int:
    from tether.guard.engine import Guard
    from tether.guard.replay import replay

    guard = Guard.from_file(_find_config(p.options.get("--config")))
    emit(replay(guard, str(p.args["TRANSCRIPT"]), explain="--explain" in p.flags))
    return EXIT_OK


def cmd_status(p: Parsed) -> int:
    from tether.guard.binding import Binder
    from tether.guard.plan import load_plan

    project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    try:
        config = _find_config(p.options.get("--config"), project)
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


def cmd_test(p: Parsed) -> int:
    from tether.guard.cases import run_cases

    report = run_cases(
        str(p.args["CASES"]), config=p.options.get("--config"), explain="--explain" in p.flags
    )
    emit(report)
    if report["failed"]:
        raise TetherError("verify_failed", f"{report['failed']} guard test case(s) failed")
    return EXIT_OK


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
}


def main(argv: list[str]) -> int:
    """Run `tether guard <argv>`; returns the exit code."""
    if argv[:1] == ["hook"]:
        # The hook runs once per tool call, and answers even a command line it cannot parse.
        return run_hook(argv[1:])
    return run_family("guard", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
