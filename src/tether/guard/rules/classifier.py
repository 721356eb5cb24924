"""The classifier: a small LLM that reads each user message and returns a behavior directive.

Owns: when a message is classified (frequency modes, skipped follow-ups), the prompt sent to any
OpenAI-compatible chat-completions endpoint (the vocabularies with their labels, guidance and
behaviors, and the session context asked for), the call itself under a hard deadline, parsing the
reply (bare JSON, fenced, or wrapped in text), and the directive text (prefix, approach, the
chosen levels' behaviors, directives, high-risk warning, footer). Any failure (timeout, HTTP
error, malformed reply, a value outside the vocabulary, a missing secret) yields no directive and
a note saying why: the turn always goes on.

Frequency modes, for the turn a message starts: `every_turn` classifies every message,
`first_turn` only the first, `every_n_turns` turns 1, 1+n, 1+2n…, and `on_new_message` only a
message that differs from the previous one. With `skip_followups`, acknowledgements (`ok`,
`yes`, `continue`, `thanks`, `oui`, `valide`…) are never classified.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tether.guard.rules.deadline import DeadlineExceeded, within
from tether.guard.rules.state import SessionState

FOLLOWUPS = frozenset(
    {
        "ok", "okay", "k", "yes", "y", "yep", "yup", "yeah", "sure", "no", "continue", "go",
        "go on", "go ahead", "proceed", "next", "done", "thanks", "thank you", "thx", "lgtm",
        "perfect", "great", "good", "fine", "sounds good", "oui", "non", "merci", "valide",
        "vas-y", "d'accord",
    }
)  # fmt: skip
SECRET = re.compile(r"^\{\{\s*secret\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
FIELDS = ("complexity", "approach", "risk")
VOCABS = {"complexity": "complexity_levels", "approach": "approaches", "risk": "risk_levels"}


class ClassifierError(Exception):
    pass


def _entries(vocab: list[Any]) -> list[dict[str, Any]]:
    return [{"name": v} if isinstance(v, str) else v for v in vocab]


def parse_reply(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, in a ``` fence, or the outermost {...} in prose."""
    candidates = [text.strip()]
    candidates += _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ClassifierError(f"the reply holds no JSON object: {text[:200]!r}")


class Classifier:
    """Classification settings (the plan's `classifier`) and the brain that answers."""

    def __init__(
        self, config: dict[str, Any], brain: dict[str, Any], profile: dict[str, Any] | None
    ) -> None:
        self.config = config
        self.brain = brain
        self.profile = profile
        self.vocab = {field: _entries(config[VOCABS[field]]) for field in FIELDS}

    @property
    def timed_out(self) -> str:
        return f"the classifier timed out after {self.config['timeout']}s"

    def due(self, state: SessionState, text: str) -> bool:
        """Whether the message starting the next turn gets classified."""
        cfg = self.config
        message = text.strip()
        if not message:
            return False
        if cfg["skip_followups"] and message.lower().strip(" .!?,") in FOLLOWUPS:
            return False
        turn = state.turn + 1
        mode = cfg["frequency"]
        if mode == "first_turn":
            return turn == 1
        if mode == "every_n_turns":
            return (turn - 1) % cfg["frequency_n"] == 0
        if mode == "on_new_message":
            return message != (state.last_user_message or "").strip()
        return True

    def system_prompt(self) -> str:
        if self.config["system_prompt"]:
            return str(self.config["system_prompt"])
        lines = [
            "You read a user's message to an AI agent before the agent acts, and decide how the "
            "agent should approach it.",
        ]
        if self.profile is not None and self.profile.get("description"):
            lines.append(f"The agent works under this profile: {self.profile['description']}")
        for field in FIELDS:
            lines.append("")
            lines.append(f"{field} (pick exactly one name):")
            for entry in self.vocab[field]:
                line = f"- {entry['name']}"
                if entry.get("label"):
                    line += f" ({entry['label']})"
                if entry.get("when"):
                    line += f": {entry['when']}"
                lines.append(line)
        lines += [
            "",
            "Reply with one JSON object and nothing else:",
            '{"complexity": "<name>", "approach": "<name>", "risk": "<name>", '
            '"directives": ["<short imperative instruction>", ...], "skip_reason": null}',
            f"Give at most {self.config['max_directives']} directives, each specific to this "
            "message. When the message needs no guidance, set skip_reason to a short reason.",
        ]
        return "\n".join(lines)

    def user_prompt(self, text: str, state: SessionState, cwd: str | None) -> str:
        ctx = self.config["context"]
        lines = ["User message:", text, ""]
        if ctx["workspace_info"] and cwd:
            lines.append(f"Workspace: {cwd}")
        if ctx["session_state"]:
            lines.append(f"Turn: {state.turn}")
            lines.append(f"Total tool calls: {state.total_tool_calls}")
            for name, values in state.sets.items():
                recent = ", ".join(list(values)[-3:])
                lines.append(
                    f"{name.replace('_', ' ').capitalize()}: {len(values)} (recent: {recent})"
                )
            for name, value in state.counters.items():
                lines.append(f"{name.replace('_', ' ').title()}: {value}")
            active = [name for name, on in state.flags.items() if on]
            if active:
                lines.append(f"Active flags: {', '.join(active)}")
        history = state.history[-ctx["history_depth"] :] if ctx["history_depth"] else []
        if ctx["recent_history"] and history:
            lines.append(
                "Recent actions: " + ", ".join(f"{t}({target or ''})" for t, target, _ in history)
            )
        if ctx["tool_inventory"] and state.history:
            lines.append(
                "Tools used so far: " + ", ".join(sorted({t for t, _, _ in state.history}))
            )
        return "\n".join(lines)

    def _request(self, system: str, user: str) -> str:
        import urllib.error
        import urllib.request

        settings = self.brain.get("config") or {}
        base = settings.get("base_url")
        if not base:
            raise ClassifierError("the brain has no base_url")
        headers = {"Content-Type": "application/json"}
        key = settings.get("api_key")
        if key:
            secret = SECRET.match(key)
            if secret:
                key = os.environ.get(secret.group(1))
                if not key:
                    raise ClassifierError(f"secret {secret.group(1)} is not set in the environment")
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self.brain["model"],
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": settings.get("temperature", 0.0),
            "max_tokens": settings.get("max_tokens", 400),
        }
        request = urllib.request.Request(
            base.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.config["timeout"]) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ClassifierError(f"the classifier answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if isinstance(exc, TimeoutError) or isinstance(
                getattr(exc, "reason", None), TimeoutError
            ):
                raise ClassifierError(self.timed_out) from None
            raise ClassifierError(f"the classifier could not be reached: {exc}") from None
        try:
            return str(reply["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError):
            raise ClassifierError("the classifier's reply has no choices[0].message") from None

    def classify(self, text: str, state: SessionState, cwd: str | None) -> dict[str, Any]:
        """The classifier's verdict, within the hard timeout; raises ClassifierError."""
        system, user = self.system_prompt(), self.user_prompt(text, state, cwd)
        try:
            reply = within(self.config["timeout"], lambda: self._request(system, user))
        except DeadlineExceeded:
            raise ClassifierError(self.timed_out) from None
        verdict = parse_reply(reply)
        if verdict.get("skip_reason"):
            return verdict
        for field in FIELDS:
            names = [entry["name"] for entry in self.vocab[field]]
            if verdict.get(field) not in names:
                raise ClassifierError(
                    f"the reply's {field} {verdict.get(field)!r} is not one of {', '.join(names)}"
                )
        directives = verdict.get("directives") or []
        if not isinstance(directives, list):
            raise ClassifierError("the reply's directives is not a list")
        verdict["directives"] = [str(d) for d in directives if str(d).strip()]
        return verdict

    def _entry(self, field: str, name: str) -> dict[str, Any]:
        return next(entry for entry in self.vocab[field] if entry["name"] == name)

    def format(self, verdict: dict[str, Any]) -> str:
        """The directive text for a verdict."""
        cfg = self.config
        approach = self._entry("approach", verdict["approach"])
        values = {
            "complexity": verdict["complexity"],
            "approach": verdict["approach"],
            "risk": verdict["risk"],
            "approach_label": approach.get("label") or verdict["approach"],
        }

        def fill(template: str) -> str:
            for name, value in values.items():
                template = template.replace("{" + name + "}", value)
            return template

        lines = [fill(cfg["directive_prefix"])]
        line = f"Approach: {values['approach_label']}"
        if approach.get("behavior"):
            line += f". {approach['behavior']}"
        lines.append(line)
        for field in ("complexity", "risk"):
            behavior = self._entry(field, verdict[field]).get("behavior")
            if behavior:
                lines.append(f"{field.capitalize()} ({verdict[field]}): {behavior}")
        lines += [f"- {d}" for d in verdict["directives"][: cfg["max_directives"]]]
        risks = [entry["name"] for entry in self.vocab["risk"]]
        threshold = cfg["high_risk_threshold"]
        if threshold in risks and risks.index(verdict["risk"]) >= risks.index(threshold):
            lines.append(fill(cfg["high_risk_warning"]))
        if cfg["directive_footer"]:
            lines.append(fill(cfg["directive_footer"]))
        return "\n".join(lines)

    def directive(
        self, text: str, state: SessionState, cwd: str | None
    ) -> tuple[str | None, str | None]:
        """(directive, note): the directive, or None and why there is none."""
        try:
            verdict = self.classify(text, state, cwd)
        except ClassifierError as exc:
            return None, str(exc)
        if verdict.get("skip_reason"):
            return None, f"the classifier skipped this message: {verdict['skip_reason']}"
        return self.format(verdict), None
