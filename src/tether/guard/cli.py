"""`tether guard …`: the guard's command line.

Owns: argument parsing and output for `check`, `prompt`, `hook`, `serve`, `install claude`,
`replay` and `test`; errors go to stderr as JSON `{"error": {"code", "message", ...}}` with the
exit code of their class. Normal output is JSON on stdout, except `hook`, whose stdout is exactly
Claude Code's hook output (nothing when there is nothing to say) and which never exits with 2
(Claude Code reads 2 as "block"): any failure there exits 1, a non-blocking error.
The main `tether` command calls `main(argv)` with the arguments after `guard`. `status` shows
the workflow bindings (`binding`).
"""

from __future__ import annotations

import argparse
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


def cmd_hook(args: argparse.Namespace) -> int:
    from tether.guard.hooks import handle
    from tether.guard.session_store import SessionStore

    try:
        payload = json.loads(sys.stdin.read() or "{}")
    except ValueError as exc:
        raise TetherError("invalid_json", f"hook input is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise TetherError("invalid_json", "hook input must be a JSON object")
    guard = _load(args, payload.get("cwd"))
    out = handle(payload, guard, SessionStore(_state_dir(args.state_dir)))
    if out is not None:
        sys.stdout.write(json.dumps(out) + "\n")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from tether.guard.serve import serve

    guard = _load(args)
    return serve(guard, _state_dir(args.state_dir), args.host, args.port)


def cmd_install(args: argparse.Namespace) -> int:
    from tether.cli import tether_command
    from tether.guard.install import install_claude

    _emit(
        install_claude(
            settings=args.settings,
            config=args.config or DEFAULT_CONFIG,
            command=args.command or tether_command(),
            http=args.http,
        )
    )
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


def _hook_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument(
        "--config",
        help=f"configuration file (default: ${CONFIG_ENV}, or {DEFAULT_CONFIG} in the project)",
    )
    p.add_argument("--state-dir", help="where session state is kept")
    p.set_defaults(run=cmd_hook)
    return p


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
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8977)
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("install", help="install the guard's hooks into an agent")
    p.add_argument("agent", choices=["claude"])
    p.add_argument("--settings", default=os.path.join(".claude", "settings.json"))
    p.add_argument("--config", help=f"configuration file (default {DEFAULT_CONFIG})")
    p.add_argument(
        "--command",
        default=None,
        help="how hooks invoke tether (default: this installation's tether, by absolute path)",
    )
    p.add_argument("--http", help="install http hooks posting to this URL (see `serve`)")
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
    hook = bool(argv) and argv[0] == "hook"
    try:
        # The hook runs once per tool call: it parses only its own options.
        parser = _hook_options(_Parser(prog="tether guard hook")) if hook else build_parser()
        args = parser.parse_args(argv[1:] if hook else argv)
        return int(args.run(args))
    except TetherError as exc:
        sys.stderr.write(json.dumps({"error": exc.to_dict()}, default=str) + "\n")
        return EXIT_INTERNAL if hook else exc.exit_code
    except Exception as exc:  # the last line of defence: report, never a traceback on stdout
        error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
        sys.stderr.write(json.dumps({"error": error}) + "\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
