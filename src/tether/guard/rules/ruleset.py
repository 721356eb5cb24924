"""The guard: a compiled rule set, and per-session decisions over tool calls and text.

Owns: `Guard` (built from a configuration file or mapping; compiles the plan's rules and
tracking, indexes rules by phase and tool, holds the sessions), `GuardSession` (one session's
state and event log; `pre_tool`, `post_tool`, `on_text`, `on_user_message`, `system_prompt`) and
`Decision` (what fired, the text to inject, and the explanation of every fired rule). It does not
parse configuration (config), persist sessions (session_store) or speak any agent's protocol
(hooks, serve).

Pinned semantics:
- `pre_tool` rules see the state before the call; `pre_tool` changes no tracked state, whatever
  it decides (a blocked call never ran).
- `post_tool` first records the call (sets, counters, flags, counts, streak, history), then runs
  the `post_tool` rules against the updated state. A failed call (`error` given, or `ok` false)
  counts as a call but adds to no set, moves no counter or flag, and runs no `post_tool` rule; a
  call with no sign either way (`ok` null) ran, and counts as one that did.
- A turn is one user message (`on_user_message`); `step` counts model steps separately: a step
  begins with the model's first text or tool call after a user message or a tool result.
- Every fired rule is recorded in the session's violations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from tether.guard.rules.conditions import POST, PRE, TEXT, Context, References
from tether.guard.rules.messages import injected
from tether.guard.rules.rule import Rule
from tether.guard.rules.state import SessionState, Tracking, outcome
from tether.guard.rules.triggers import canonical

if TYPE_CHECKING:
    from tether.guard.rules.classifier import Classifier

_SEVERITY = {"allow": 0, "remind": 1, "warn": 2, "block": 3}


class Firing(NamedTuple):
    """One rule that fired: its action, its message, where it was defined and why it fired."""

    rule: str
    action: str
    message: str
    text: str
    source: str
    explanation: dict[str, Any]

    def to_dict(self, explain: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "action": self.action,
            "message": self.message,
            "source": self.source,
        }
        if explain:
            out["explanation"] = self.explanation
        return out


class Decision:
    """The outcome of one event: `action` is the strongest fired action, or `allow`."""

    __slots__ = ("directive", "evaluated", "firings", "notes", "phase", "tool")

    def __init__(self, phase: str, tool: str | None = None) -> None:
        self.phase = phase
        self.tool = tool
        self.firings: list[Firing] = []
        self.directive: str | None = None
        self.evaluated: list[dict[str, Any]] = []
        self.notes: list[str] = []

    @property
    def action(self) -> str:
        best = "allow"
        for firing in self.firings:
            if _SEVERITY[firing.action] > _SEVERITY[best]:
                best = firing.action
        return best

    @property
    def rules(self) -> list[str]:
        """The ids of the rules that fired, in rule order."""
        return [f.rule for f in self.firings]

    @property
    def blocked(self) -> bool:
        return any(f.action == "block" for f in self.firings)

    @property
    def text(self) -> str:
        """Everything to put in front of the model, one fired rule (or directive) a paragraph."""
        parts = [f.text for f in self.firings]
        if self.directive:
            parts.append(self.directive)
        return "\n\n".join(parts)

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase, "action": self.action}
        if self.tool is not None:
            out["tool"] = self.tool
        out["rules"] = [f.to_dict(explain) for f in self.firings]
        if self.directive is not None:
            out["directive"] = self.directive
        if self.notes:
            out["notes"] = self.notes
        if explain and self.evaluated:
            out["evaluated"] = self.evaluated
        return out


class Guard:
    """A compiled rule set. `session(id)` gives each session its own state."""

    def __init__(self, plan: dict[str, Any], agent_brain: dict[str, Any] | None = None) -> None:
        self.plan = plan
        self.tracking = Tracking(plan["tracking"])
        refs = References(validating=False)
        self.rules = [Rule.compile(spec, refs) for spec in plan["rules"]]
        self.set_keys = {name: spec.keys for name, spec in self.tracking.sets.items()}
        self._index: dict[tuple[str, str], list[Rule]] = {}
        self._sessions: dict[str, GuardSession] = {}
        self.classifier: Classifier | None = None
        brain = plan["brain"] or (agent_brain if plan["use_agent_brain"] else None)
        if plan["classify_turns"] and brain is not None:
            from tether.guard.rules.classifier import Classifier

            self.classifier = Classifier(plan["classifier"], brain, plan["profile"])

    @classmethod
    def from_file(
        cls,
        path: str,
        cache_dir: str | None = None,
        agent_brain: dict[str, Any] | None = None,
    ) -> Guard:
        """A guard from a YAML file (`security: behavior:` or a behavior block at the root)."""
        from tether.guard.rules.plan import load_plan

        return cls(load_plan(path, cache_dir), agent_brain)

    @classmethod
    def from_config(
        cls,
        data: dict[str, Any],
        base_dir: str | None = None,
        agent_brain: dict[str, Any] | None = None,
    ) -> Guard:
        """A guard from a mapping; `base_dir` is where `behavior/<name>.yaml` profiles live."""
        from tether.guard.rules.config import plan_from_dict

        return cls(plan_from_dict(data, base_dir), agent_brain)

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return list(self.plan["warnings"])

    def rules_for(self, phase: str, tool: str) -> list[Rule]:
        """The rules of `phase` whose trigger matches `tool` (every `on_text` rule for text)."""
        key = (phase, tool)
        found = self._index.get(key)
        if found is None:
            found = [
                r
                for r in self.rules
                if r.when == phase and (phase == TEXT or r.trigger.matches(tool))
            ]
            self._index[key] = found
        return found

    def session(
        self,
        session_id: str = "default",
        cwd: str | None = None,
        state: SessionState | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> GuardSession:
        """The session `session_id`, created on first use with its own empty state."""
        found = self._sessions.get(session_id)
        if found is None or state is not None:
            found = GuardSession(self, session_id, cwd, state or SessionState(), on_event)
            self._sessions[session_id] = found
        return found

    def end_session(self, session_id: str) -> None:
        """Free a session's state."""
        self._sessions.pop(session_id, None)

    def system_prompt(self, full: bool = True) -> str:
        """The system-prompt section: the active rules' descriptions and the profile's prompt,
        whole, or short (a long prompt section cut to its heading and first paragraph)."""
        lines = []
        described = [r for r in self.rules if r.description]
        if described:
            lines.append("## Behavioral rules")
            lines.append("A guard watches your tool calls and enforces these rules:")
            lines.extend(f"- {r.description} ({r.id}, {r.action})" for r in described)
        profile = self.plan["profile"]
        if profile is not None:
            if lines:
                lines.append("")
            lines.append(f"## Profile: {profile['name']}")
            lines.append(f"Autonomy: {profile['autonomy']}. Verbosity: {profile['verbosity']}.")
            prompt = profile["prompt"] if full else profile["prompt_short"]
            if prompt:
                lines.append("")
                lines.append(prompt.strip())
        return "\n".join(lines)

    def session_context(self) -> str:
        """What a session is given when it starts: the system-prompt section, short unless the
        configuration says `context: full`."""
        return self.system_prompt(full=self.plan["context"] == "full")


class GuardSession:
    """One session's state, its event log, and the decisions made on it."""

    def __init__(
        self,
        guard: Guard,
        session_id: str,
        cwd: str | None,
        state: SessionState,
        on_event: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.guard = guard
        self.session_id = session_id
        self.cwd = cwd
        self.state = state
        self.events: list[dict[str, Any]] = []
        self.on_event = on_event

    def record(self, event: dict[str, Any]) -> None:
        """Fold one event into the state and append it to the log."""
        self.state.apply(event)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _context(self, phase: str, tool: str = "", **kw: Any) -> Context:
        return Context(
            phase,
            self.state,
            self.guard.set_keys,
            self.cwd,
            tool=tool,
            canon=canonical(tool) if tool else "",
            **kw,
        )

    def _run(self, decision: Decision, rules: list[Rule], ctx: Context, explain: bool) -> Decision:
        for rule in rules:
            if rule.condition.test(ctx):
                decision.firings.append(
                    Firing(
                        rule.id,
                        rule.action,
                        message := rule.message.render(ctx),
                        injected(rule.action, rule.id, message),
                        rule.source,
                        {
                            "rule": rule.id,
                            "source": rule.source,
                            "phase": decision.phase,
                            "condition": rule.condition.explain(ctx),
                        },
                    )
                )
            elif explain:
                decision.evaluated.append(
                    {
                        "rule": rule.id,
                        "source": rule.source,
                        "fired": False,
                        "condition": rule.condition.explain(ctx),
                    }
                )
        for firing in decision.firings:
            self.record(
                {
                    "e": "decision",
                    "rule": firing.rule,
                    "action": firing.action,
                    "phase": decision.phase,
                }
            )
        return decision

    def pre_tool(self, tool: str, params: dict[str, Any], explain: bool = False) -> Decision:
        """Decide on a call about to run. The state is not changed by the call itself."""
        rules = self.guard.rules_for(PRE, tool)
        decision = Decision(PRE, tool)
        if not rules:
            return decision
        return self._run(decision, rules, self._context(PRE, tool, params=params), explain)

    def post_tool(
        self,
        tool: str,
        params: dict[str, Any],
        result: Any = None,
        error: Any = None,
        explain: bool = False,
        ok: bool | None = None,
    ) -> Decision:
        """Record a call, then run post rules unless it failed. It failed when `error` is given;
        else it went as `ok` says when the caller read that (`claude.tool_ok`), else as `result`
        says (`state.outcome`: None when it says nothing)."""
        if error is not None and error is not False:
            ok = False
        elif ok is None:
            ok = outcome(result)
        self.record(self.guard.tracking.tool_event(tool, params, ok, self.cwd))
        decision = Decision(POST, tool)
        rules = self.guard.rules_for(POST, tool)
        if ok is False or not rules:
            return decision
        ctx = self._context(POST, tool, params=params, result=result)
        return self._run(decision, rules, ctx, explain)

    def on_text(self, text: str, explain: bool = False) -> Decision:
        """Record text the model produced, then run the `on_text` rules on it."""
        self.record({"e": "text", "text": text[:2000]})
        return self._run(
            Decision(TEXT), self.guard.rules_for(TEXT, ""), self._context(TEXT, text=text), explain
        )

    def note_text(self) -> None:
        """Record that the model produced text this turn, without running `on_text` rules."""
        if not self.state.text_this_turn:
            self.record({"e": "text", "text": ""})

    def on_user_message(self, text: str) -> Decision:
        """Start a new turn; ask the classifier for a directive when one is due."""
        classifier = self.guard.classifier
        due = classifier is not None and classifier.due(self.state, text)
        self.record({"e": "user", "text": text[:2000], "classified": due})
        decision = Decision("user_message")
        if classifier is not None and due:
            directive, note = classifier.directive(text, self.state, self.cwd)
            decision.directive = directive
            if note:
                decision.notes.append(note)
        return decision

    def system_prompt(self) -> str:
        return self.guard.system_prompt()
