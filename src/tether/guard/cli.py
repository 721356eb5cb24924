"""`tether guard …`: the guard's command line.

Owns: argument parsing and output for `check`, `prompt`, `hook`, `serve`, `install
claude|codex|gemini|cursor`, `log`, `replay`, `status` (the workflow bindings, `binding`) and
`test`; errors go to stderr as JSON `{"error": {"code", "message", ...}}` with the exit code of
their class. Normal output is JSON on stdout, except `hook`, whose stdout is exactly the hook
output of Claude Code, or of the harness `--harness` names (`harness`; nothing when there is
nothing to say). A hook that cannot decide answers as `failsafe` says: under
`on_error: block` a `PreToolUse` is denied (exit 0, or exit 2 when the event itself could not be
read), otherwise it exits 1, Claude Code's non-blocking error; every such error is logged. The
main `tether` command calls `main(argv)` with the arguments after `guard`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any, NoReturn

from tether.errors import EXIT_INTERNAL, TetherError

CONFIG_ENV = "TETHER_GUARD_CONFIG"
DEFAULT_CONFIG = os.path.join(".tether", "guard.yaml")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise TetherError("usage", f"{self.prog}: {message}")


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


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


def _load(args: argparse.Namespace, cwd: str | None = None) -> Any:
    from tether.guard.engine import Guard

    return Guard.from_file(
        _find_config(args.config, cwd), cache_dir=os.path.join(_state_dir(args.state_dir), "plans")
    )


def _classifier_warnings(plan: dict[str, Any]) -> list[dict[str, Any]]:
    if plan["classify_turns"] and plan["brain"] is None:
        message = (
            "classify_turns is on but no brain is configured: hooks will not classify "
            "(the Python API may pass agent_brain)"
        )
        return [{"path": "classify_turns", "message": message}]
    return []


def cmd_check(args: argparse.Namespace) -> int:
    from tether.guard.engine import Guard

    guard = Guard.from_file(args.config)
    _emit(
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
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from tether.guard.engine import Guard

    _emit({"prompt": Guard.from_file(args.config).system_prompt()})
    return 0


def _read_payload(
    attempt: Any, harness: str = "claude", config: str | None = None
) -> list[dict[str, Any]]:
    """The event on stdin, read as Claude Code's (`harness.events`); `attempt.payload` is the
    first payload read, or the event as sent when the guard does not answer it."""
    from tether.guard.harness import events

    try:
        payload = json.loads(sys.stdin.read() or "{}")
    except ValueError as exc:
        raise TetherError("invalid_json", f"hook input is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise TetherError("invalid_json", "hook input must be a JSON object")
    found = events(harness, payload, config)
    attempt.payload = found[0] if found else payload
    return found


def _decide(args: argparse.Namespace, attempt: Any) -> dict[str, Any] | None:
    from tether.guard.harness import answer
    from tether.guard.hooks import handle
    from tether.guard.session_store import SessionStore

    found = _read_payload(attempt, args.harness, args.config)
    if not found:
        return None
    cwd = found[0].get("cwd")
    if args.harness != "claude" and args.config and not os.path.isabs(args.config):
        args.config = os.path.join(str(cwd), args.config)  # the project's, not the hook's folder
    guard = _load(args, cwd)
    attempt.configured = guard.plan.get("on_error")
    attempt.started = True
    store = SessionStore(attempt.state_dir)
    return answer(args.harness, found, lambda payload: handle(payload, guard, store))


def _harness_flag(argv: list[str]) -> str:
    """`--harness` of a hook command line that may not parse as a whole."""
    p = _Parser(prog="tether guard hook", add_help=False)
    _harness_option(p)
    try:
        return str(p.parse_known_args(argv)[0].harness)
    except TetherError:
        return "claude"


def run_hook(argv: list[str]) -> int:
    """`tether guard hook ARGS`: one event from stdin, the harness's output on stdout."""
    from tether.guard.failsafe import DEFAULT_DEADLINE, Attempt, within
    from tether.guard.harness import error_text, render

    attempt = Attempt(_state_dir(None), None)
    harness = _harness_flag(argv)
    try:
        try:
            args = _hook_options(_Parser(prog="tether guard hook")).parse_args(argv)
        except TetherError:
            with contextlib.suppress(Exception):  # learn the event, to answer it
                within(DEFAULT_DEADLINE, lambda: _read_payload(attempt, harness))
            raise
        attempt.state_dir, attempt.flag = _state_dir(args.state_dir), args.on_error
        out = within(args.deadline, lambda: _decide(args, attempt))
        code = 0
    except Exception as exc:
        code, failed, error = attempt.failed(exc)
        out = render(harness, attempt.payload or {}, failed)
        if code:
            sys.stderr.write(error_text(harness, error) + "\n")
    if out is not None:
        sys.stdout.write(json.dumps(out) + "\n")
    return code


def cmd_serve(args: argparse.Namespace) -> int:
    from tether.guard.serve import DEFAULT_MAX_BODY_BYTES, TOKEN_ENV, ServeOptions, serve

    options = ServeOptions(
        host=args.host,
        port=args.port,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        allowed_hosts=tuple(args.allow_host),
        max_body_bytes=DEFAULT_MAX_BODY_BYTES
        if args.max_body_bytes is None
        else args.max_body_bytes,
        on_error=args.on_error,
        deadline=args.deadline,
        harness=args.harness,
    )
    return serve(_load(args), _state_dir(args.state_dir), options)


def cmd_log(args: argparse.Namespace) -> int:
    from tether.guard.failsafe import log_path, read_log

    state_dir = _state_dir(args.state_dir)
    _emit({"log": log_path(state_dir), "errors": read_log(state_dir, args.limit)})
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    from tether.cli.launch import launch
    from tether.guard.install import install_claude, install_harness, settings_file

    command = launch(args.command)
    if args.agent != "claude":
        if args.http:
            raise TetherError("usage", f"{args.agent} runs command hooks only: drop --http")
        result = install_harness(
            args.agent,
            file=args.settings,
            config=args.config or DEFAULT_CONFIG,
            command=command.shell(),
            on_error=args.on_error,
            portable=command.portable,
        )
        _emit({**result, "launch": command.to_dict()})
        return 0
    settings, note = settings_file(args.settings, command, http=args.http is not None)
    result = install_claude(
        settings=settings,
        config=args.config or DEFAULT_CONFIG,
        command=command.shell(),
        http=args.http,
        on_error=args.on_error,
    )
    _emit({**result, "launch": command.to_dict(), **({"note": note} if note else {})})
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from tether.guard.engine import Guard
    from tether.guard.replay import replay

    guard = Guard.from_file(_find_config(args.config))
    _emit(replay(guard, args.transcript, explain=args.explain))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from tether.guard.binding import Binder
    from tether.guard.plan import load_plan

    project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    try:
        config = _find_config(args.config, project)
    except TetherError:
        config = None  # no configuration: no configured trace, sessions may still be bound
    settings = load_plan(config)["workflow"] if config else {"trace": None}
    binder = Binder(settings, _state_dir(args.state_dir))
    if args.session:
        _emit(binder.status(args.session, project))
    else:
        _emit({"config": config, "trace": settings["trace"], "sessions": binder.sessions()})
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from tether.guard.cases import run_cases

    report = run_cases(args.cases, config=args.config, explain=args.explain)
    _emit(report)
    if report["failed"]:
        raise TetherError("verify_failed", f"{report['failed']} guard test case(s) failed")
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _on_error(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--on-error",
        choices=["block", "allow"],
        help=f"{what} (default: the configuration's on_error, else block)",
    )


def _hook_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from tether.guard.failsafe import DEFAULT_DEADLINE

    p.add_argument(
        "--config",
        help=f"configuration file (default: ${CONFIG_ENV}, or {DEFAULT_CONFIG} in the project)",
    )
    p.add_argument("--state-dir", help="where session state and the error log are kept")
    _on_error(p, "a tool call the guard cannot decide is denied (block) or goes ahead (allow)")
    p.add_argument(
        "--deadline",
        type=_seconds,
        default=DEFAULT_DEADLINE,
        help=f"seconds before an undecided event counts as an error (default {DEFAULT_DEADLINE:g})",
    )
    _harness_option(p)
    return p


def _harness_option(p: argparse.ArgumentParser) -> None:
    from tether.guard.harness import HARNESSES

    p.add_argument(
        "--harness",
        choices=HARNESSES,
        default="claude",
        help="whose hook events these are, answered in its format (default claude)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tether guard", description="The behavior engine over tool calls.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="validate a configuration and list its active rules"
    )
    p.add_argument("config")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("prompt", help="print the system-prompt section of a configuration")
    p.add_argument("config")
    p.set_defaults(run=cmd_prompt)

    _hook_options(sub.add_parser("hook", help="answer one Claude Code hook event (stdin)"))
    p = _hook_options(sub.add_parser("serve", help="serve Claude Code http hooks, kept warm"))
    p.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8977)
    p.add_argument(
        "--token",
        help="bearer token hooks must send (default: $TETHER_GUARD_TOKEN); required off loopback",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        help="also accept Host/Origin H (repeatable; loopback is always accepted)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        help="largest request body accepted (default 8388608: 8 MiB)",
    )
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("log", help="print the errors the guard logged")
    p.add_argument("--state-dir", help="where session state and the error log are kept")
    p.add_argument("--limit", type=int, default=50, help="the last N errors (default 50)")
    p.set_defaults(run=cmd_log)

    p = sub.add_parser("install", help="install the guard's hooks into an agent")
    p.add_argument("agent", choices=["claude", "codex", "gemini", "cursor"])
    p.add_argument(
        "--settings",
        help="hooks file (claude: .claude/settings.json, or .claude/settings.local.json when "
        "the command is a path on this machine; codex: .codex/hooks.json; gemini: "
        ".gemini/settings.json; cursor: .cursor/hooks.json)",
    )
    p.add_argument("--config", help=f"configuration file (default {DEFAULT_CONFIG})")
    p.add_argument(
        "--command",
        default=None,
        help="how hooks invoke tether (default: tether when it is on PATH, uvx --from tether-bt "
        "tether under uvx, else this installation's full path)",
    )
    p.add_argument("--http", help="claude: install http hooks posting to this URL (see `serve`)")
    _on_error(p, "written into the hook command and a new configuration")
    p.set_defaults(run=cmd_install)

    p = sub.add_parser("replay", help="run a recorded Claude Code session through a rule set")
    p.add_argument("transcript")
    p.add_argument("--config")
    p.add_argument("--explain", action="store_true")
    p.set_defaults(run=cmd_replay)

    p = sub.add_parser("status", help="which execution each session is bound to (workflow)")
    p.add_argument("--session", help="one session: its binding and its execution's open steps")
    p.add_argument("--config", help=f"configuration file (default: as for hook, {DEFAULT_CONFIG})")
    p.add_argument("--state-dir", help="where session state is kept")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("test", help="run fixture cases: given these calls, expect these decisions")
    p.add_argument("cases")
    p.add_argument("--config", help="configuration file (default: the cases file's `config`)")
    p.add_argument("--explain", action="store_true")
    p.set_defaults(run=cmd_test)
    return parser


def main(argv: list[str]) -> int:
    """Run `tether guard <argv>`; returns the exit code."""
    if argv and argv[0] == "hook":
        # The hook runs once per tool call: it parses only its own options.
        return run_hook(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        return int(args.run(args))
    except TetherError as exc:
        sys.stderr.write(json.dumps({"error": exc.to_dict()}, default=str) + "\n")
        return exc.exit_code
    except Exception as exc:  # the last line of defence: report, never a traceback on stdout
        error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
        sys.stderr.write(json.dumps({"error": error}) + "\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
