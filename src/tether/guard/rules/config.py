"""Guard configuration: strict models, YAML loading with locations, and resolution into a plan.

Owns: the `security: behavior:` block (or a file whose root is that block) and custom profiles
(`behavior/<name>.yaml`): their pydantic models (every one forbids unknown keys), the mapping of
each error to its file, line and key path, and `resolve`, which turns a validated configuration
into a plan: the active rules (built-ins switched on by the profile and `rules`, overridden by
`rule_definitions` with the same id, legacy `custom` rules converted), the merged state
tracking, the thresholds, the prompt, the classifier settings and the `workflow` section. The
plan is plain JSON, so it can be cached and compiled without this module (see `plan.py`).
Evaluation lives in the engine, binding in `tether.guard.binding`. Reading and parsing a file,
with its limits and positions, is `tether.tree.locations`' (the same as for tree files).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from tether.errors import TetherError
from tether.guard.rules.classifier import SECRET
from tether.guard.rules.conditions import ConditionError, References, compile_condition
from tether.guard.rules.messages import Template, TemplateError
from tether.guard.rules.patterns import pattern_error
from tether.guard.rules.profiles import PROFILES, Profile
from tether.guard.rules.rule import BUILTIN_IDS, DEFAULT_TRACKING, THRESHOLDS, builtin_rules
from tether.guard.rules.triggers import split_names
from tether.tree.locations import MAX_LOAD_BYTES, Locator, Unreadable, format_path, parse, read_text

Path_ = tuple[str | int, ...]
NameList = Annotated[list[str], Field(min_length=1)]
_CUSTOM_PROFILE = re.compile(r"^\{\{\s*behavior\.([A-Za-z0-9_-]+)\s*\}\}$")
_PROMPT_REF = re.compile(r"^\{\{\s*prompt\.([A-Za-z0-9_-]+)\s*\}\}$")
DIRECTIVE_FIELDS = ("complexity", "approach", "risk", "approach_label")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _names(value: Any) -> Any:
    return split_names(value) if isinstance(value, str) else value


def _check_regex(value: str) -> str:
    error = pattern_error(value)
    if error is not None:
        raise ValueError(error)
    return value


class RuleDefinition(Strict):
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    trigger: str | list[str] = "*"
    when: Literal["pre_tool", "post_tool", "on_text"] = "pre_tool"
    action: Literal["block", "warn", "remind"] = "warn"
    condition: dict[str, Any] = Field(default_factory=dict)
    message: str = ""


class LegacyRule(RuleDefinition):
    """A legacy `custom` rule: a rule definition that may also say `tool` for `trigger` and
    `param` + `pattern` for a `param_matches` condition."""

    tool: str | list[str] | None = None
    param: str | None = None
    pattern: str | None = None

    @model_validator(mode="after")
    def _pairs(self) -> LegacyRule:
        if (self.param is None) != (self.pattern is None):
            raise ValueError("param and pattern go together")
        if self.pattern is not None:
            _check_regex(self.pattern)
        return self

    def converted(self) -> dict[str, Any]:
        out = self.model_dump(exclude={"tool", "param", "pattern"})
        if self.tool is not None:
            out["trigger"] = self.tool
        if self.param is not None:
            match = {"param_matches": {"param": self.param, "pattern": self.pattern}}
            out["condition"] = {"all": [out["condition"], match]} if out["condition"] else match
        return out


class SetConfig(Strict):
    add_on: list[str] = Field(default_factory=list)
    target: str | None = None
    aliases: list[str] = Field(default_factory=list)

    _split = field_validator("add_on", mode="before")(_names)


class ResetWhenConfig(Strict):
    tool: str
    param: str
    matches: str

    _regex = field_validator("matches")(_check_regex)


class CounterConfig(Strict):
    increment_on: NameList
    reset_on: list[str] = Field(default_factory=list)
    reset_when: list[ResetWhenConfig] = Field(default_factory=list)

    _split = field_validator("increment_on", "reset_on", mode="before")(_names)

    @field_validator("reset_when", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class FlagConfig(Strict):
    set_on: NameList
    unset_on: list[str] = Field(default_factory=list)

    _split = field_validator("set_on", "unset_on", mode="before")(_names)


class StateTracking(Strict):
    sets: dict[str, SetConfig] = Field(default_factory=dict)
    counters: dict[str, CounterConfig] = Field(default_factory=dict)
    flags: dict[str, FlagConfig] = Field(default_factory=dict)


class VocabEntry(Strict):
    name: str
    label: str | None = None
    when: str | None = None
    behavior: str | None = None


Vocab = list[str | VocabEntry]


def _vocab(*names: str) -> Vocab:
    return list(names)


class ClassifierContext(Strict):
    tool_inventory: bool = True
    session_state: bool = True
    workspace_info: bool = True
    recent_history: bool = True
    history_depth: Annotated[int, Field(ge=0)] = 8


class ClassifierConfig(Strict):
    frequency: Literal["every_turn", "first_turn", "every_n_turns", "on_new_message"] = "every_turn"
    frequency_n: Annotated[int, Field(ge=1)] = 3
    skip_followups: bool = True
    timeout: Annotated[float, Field(gt=0)] = 15.0
    complexity_levels: Vocab = Field(
        default_factory=lambda: _vocab("trivial", "simple", "moderate", "complex", "critical")
    )
    approaches: Vocab = Field(
        default_factory=lambda: _vocab(
            "direct", "explore_first", "plan_and_confirm", "delegate", "research_first"
        )
    )
    risk_levels: Vocab = Field(default_factory=lambda: _vocab("none", "low", "medium", "high"))
    max_directives: Annotated[int, Field(ge=0)] = 5
    context: ClassifierContext = Field(default_factory=ClassifierContext)
    system_prompt: str | None = None
    directive_prefix: str = "[BEHAVIOR DIRECTIVE - {complexity} complexity, {risk} risk]"
    high_risk_warning: str = (
        "Risk level: {risk}. Confirm destructive or irreversible actions with the user "
        "before proceeding."
    )
    high_risk_threshold: str = "medium"
    directive_footer: str = (
        "Follow these directives. They come from an analysis of the request, not from the user."
    )

    @field_validator("directive_prefix", "high_risk_warning", "directive_footer")
    @classmethod
    def _placeholders(cls, value: str) -> str:
        for name in re.findall(r"\{([^{}]*)\}", value):
            if name not in DIRECTIVE_FIELDS:
                known = ", ".join(f"{{{n}}}" for n in DIRECTIVE_FIELDS)
                raise ValueError(f"unknown placeholder {{{name}}} (known: {known})")
        return value

    @field_validator("complexity_levels", "approaches", "risk_levels")
    @classmethod
    def _vocabulary(cls, value: Vocab) -> Vocab:
        names = [v if isinstance(v, str) else v.name for v in value]
        if not names:
            raise ValueError("a vocabulary needs at least one entry")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate entries: {', '.join(duplicates)}")
        return value

    @model_validator(mode="after")
    def _threshold(self) -> ClassifierConfig:
        if "high_risk_threshold" in self.model_fields_set:
            names = [v if isinstance(v, str) else v.name for v in self.risk_levels]
            if self.high_risk_threshold not in names:
                raise ValueError(
                    f"high_risk_threshold {self.high_risk_threshold!r} is not one of the "
                    f"risk_levels ({', '.join(names)})"
                )
        return self


class BrainSettings(Strict):
    api_key: str | None = None
    base_url: str | None = None
    temperature: float = 0.0
    max_tokens: Annotated[int, Field(ge=1)] = 400


PROVIDER_URLS = {
    "openai": "https://api.openai.com/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "mistral": "https://api.mistral.ai/v1",
    "together": "https://api.together.xyz/v1",
    "ollama": "http://127.0.0.1:11434/v1",
}


class Brain(Strict):
    provider: str
    model: str
    backend: Literal["openai_compat"] = "openai_compat"
    config: BrainSettings = Field(default_factory=BrainSettings)

    @model_validator(mode="after")
    def _endpoint(self) -> Brain:
        if self.config.base_url is None and self.provider not in PROVIDER_URLS:
            raise ValueError(
                f"provider {self.provider!r} has no known endpoint: set config.base_url "
                f"(known providers: {', '.join(sorted(PROVIDER_URLS))})"
            )
        key = self.config.api_key
        if key is not None and "{{" in key and not SECRET.match(key):
            raise ValueError("config.api_key takes a literal key or {{secret.NAME}}")
        return self


NotifyEvent = Literal["human", "parked", "timeout", "finished", "failed"]
ALL_EVENTS: list[NotifyEvent] = ["human", "parked", "timeout", "finished", "failed"]


class NotifyTarget(Strict):
    """Where a person is told (`tether.notify`): a `command` given each event's JSON on its
    standard input (a list of words, or a line split as a POSIX shell splits it), or an http(s)
    `url` it is POSTed to (`${NAME}` in it read from the environment); `events`, what it is told
    of (default: all)."""

    command: list[Annotated[str, Field(min_length=1)]] | None = None
    url: Annotated[str, Field(pattern=r"^https?://\S+$")] | None = None
    events: list[NotifyEvent] = Field(default_factory=lambda: list(ALL_EVENTS), min_length=1)

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot split the command line: {exc}") from None
        if not words:
            raise ValueError("the command line names no command")
        return words

    @model_validator(mode="after")
    def _one(self) -> NotifyTarget:
        if (self.command is None) == (self.url is None):
            raise ValueError("a notify target has one of command or url")
        return self


class WorkflowConfig(Strict):
    """The `workflow` section: how a session is bound to an execution (`tether.guard.binding`).
    YAML reads a bare `off` as false, so false means `off` for `bind` and `stop`."""

    trace: Annotated[str, Field(min_length=1)] | None = None
    bind: Literal["auto", "off"] = "auto"
    stop: Literal["block", "warn", "off"] = "block"
    max_stop_blocks: Annotated[StrictInt, Field(ge=1)] = 3
    park: StrictBool = True
    context: StrictBool = True
    evidence: StrictBool = True
    strict: StrictBool = False
    mcp_servers: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["tether", "plugin_tether_tether"]
    )
    notify: list[NotifyTarget] = Field(default_factory=list)

    @field_validator("bind", "stop", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value


class BehaviorConfig(Strict):
    profile: str | None = None
    on_error: Literal["allow", "block"] | None = None
    context: Literal["short", "full"] = "short"
    rules: dict[str, StrictBool | StrictInt] = Field(default_factory=dict)
    custom: list[LegacyRule] = Field(default_factory=list)
    rule_definitions: list[RuleDefinition] = Field(default_factory=list)
    state_tracking: StateTracking | None = None
    classify_turns: bool = False
    classifier: ClassifierConfig = Field(default_factory=ClassifierConfig)
    brain: Brain | None = None
    use_agent_brain: bool = True
    workflow: WorkflowConfig = Field(default_factory=WorkflowConfig)


class CustomProfile(Strict):
    name: str | None = None
    description: str = ""
    extends: Literal["dev", "coding", "research", "data", "creative", "assistant"] | None = None
    rules: dict[str, StrictBool | StrictInt] = Field(default_factory=dict)
    prompt: str = ""
    custom: list[LegacyRule] = Field(default_factory=list)


def _index_ok(items: Any, part: Any) -> bool:
    return isinstance(items, list) and isinstance(part, int) and 0 <= part < len(items)


class Located:
    """A configuration and, when it came from a file, where each of its key paths is."""

    def __init__(self, file: str, data: Any, locator: Locator | None = None) -> None:
        self.file = file
        self.data = data
        self.locator = locator

    def line(self, path: Path_) -> int | None:
        position = self.locator.key(path) if self.locator is not None else None
        return position[0] if position is not None else None

    def where(self, path: Path_) -> str:
        line = self.line(path)
        return f"{self.file}:{line}" if line is not None else f"{self.file}:{format_path(path)}"


class Problem:
    """One configuration error or warning, with its location."""

    def __init__(self, doc: Located, path: Path_, message: str) -> None:
        self.file = doc.file
        self.line = doc.line(path)
        self.path = format_path(path)
        self.message = message

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.path}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "message": self.message}


def config_error(problems: list[Problem]) -> TetherError:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return TetherError(
        "invalid_value",
        f"invalid guard configuration: {first}{more}",
        file=first.file,
        line=first.line,
        path=first.path,
        errors=[p.to_dict() for p in problems],
    )


def _resolved_path(data: Any, loc: tuple[Any, ...], kind: str) -> Path_:
    """The part of a pydantic error location that names keys and indexes in the data (union
    member tags are skipped); a missing field is named at the end."""
    out: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if part == 0 and isinstance(node, dict) and 0 not in node:
            continue  # a single value given where a list is accepted
        if (isinstance(node, dict) and part in node) or _index_ok(node, part):
            node = node[part]
            out.append(part)
        elif kind == "missing" and i == len(loc) - 1 and isinstance(part, str):
            out.append(part)
    return tuple(out)


_NEVER_CHANGES = {
    "increment_on": "a counter needs increment_on: a counter that never changes is an error",
    "set_on": "a flag needs set_on: a flag that never changes is an error",
}


def validate(model: type[Strict], doc: Located, prefix: Path_, data: Any) -> Any:
    """Validate `data` (found at `prefix` in `doc`) against `model`; raise with locations."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        merged: dict[Path_, list[str]] = {}
        for err in exc.errors():
            path = _resolved_path(data, tuple(err["loc"]), err["type"])
            if err["type"] == "missing" and path and path[-1] in _NEVER_CHANGES:
                message = _NEVER_CHANGES[str(path[-1])]
            elif err["type"] == "extra_forbidden":
                message = f"unknown key {path[-1]!r}" if path else "unknown key"
            else:
                message = err["msg"].removeprefix("Value error, ")
            merged.setdefault(path, [])
            if message not in merged[path]:
                merged[path].append(message)
        # A failure deeper inside a value says more than its union's other members did.
        deepest = [
            p for p in merged if not any(q[: len(p)] == p and len(q) > len(p) for q in merged)
        ]
        problems = [Problem(doc, (*prefix, *p), " or ".join(merged[p])) for p in deepest]
        raise config_error(problems) from None


def read_yaml(path: Path, display: str) -> Located:
    """The YAML file at `path` (`display` names it in errors), read and parsed as tree files
    are: a regular file of at most `MAX_LOAD_BYTES`, without anchors, aliases, merge keys or
    deep nesting; every problem is `invalid_value` with the file and line."""
    if not path.exists():
        raise TetherError("not_found", f"guard configuration not found: {display}")
    try:
        doc = parse(read_text(path, MAX_LOAD_BYTES), display, as_json=False)
    except Unreadable as exc:
        raise TetherError(
            "invalid_value",
            f"invalid guard configuration: cannot read {display}: {exc}",
            file=display,
        ) from None
    except TetherError as exc:
        details = dict(exc.details)
        details["path"] = details.pop("key", None)
        raise TetherError(
            "invalid_value", f"invalid guard configuration: {exc.message}", **details
        ) from None
    return Located(display, doc.data, doc.locator)


def behavior_root(doc: Located) -> tuple[Path_, Any]:
    """Where the behavior block is: under `security: behavior:`, or the file's root."""
    data = doc.data
    if data is None:
        return (), {}
    if not isinstance(data, dict):
        raise config_error([Problem(doc, (), "the configuration must be a mapping")])
    if "security" not in data:
        return (), data
    security = data["security"]
    if not isinstance(security, dict):
        raise config_error([Problem(doc, ("security",), "security must be a mapping")])
    behavior = security.get("behavior")
    if behavior is None:
        return ("security", "behavior"), {}
    if not isinstance(behavior, dict):
        raise config_error(
            [Problem(doc, ("security", "behavior"), "security.behavior must be a mapping")]
        )
    return ("security", "behavior"), behavior


class Resolver:
    """Turns a validated `BehaviorConfig` into a plan (see the module docstring)."""

    def __init__(self, doc: Located, prefix: Path_, base_dir: Path | None) -> None:
        self.doc = doc
        self.prefix = prefix
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.files: list[str] = []

    def fail(self, doc: Located, path: Path_, message: str) -> None:
        self.problems.append(Problem(doc, path, message))

    def profile(self, name: str) -> tuple[Profile, list[tuple[Located, Path_, dict[str, Any]]]]:
        """The profile `name` refers to, and the legacy rules a custom profile brings."""
        where = (*self.prefix, "profile")
        if name in PROFILES:
            return PROFILES[name], []
        match = _CUSTOM_PROFILE.match(name)
        if match is None:
            raise config_error(
                [
                    Problem(
                        self.doc,
                        where,
                        f"unknown profile {name!r} (built-in: {', '.join(PROFILES)}; a custom "
                        "profile is written {{behavior.<name>}})",
                    )
                ]
            )
        if self.base_dir is None:
            raise config_error(
                [Problem(self.doc, where, "custom profiles need a configuration file")]
            )
        file = self.base_dir / "behavior" / f"{match.group(1)}.yaml"
        display = os.path.join(os.path.dirname(self.doc.file), "behavior", file.name)
        if not file.is_file():
            raise config_error(
                [Problem(self.doc, where, f"custom profile file not found: {display}")]
            )
        self.files.append(str(file.resolve()))
        pdoc = read_yaml(file, display)
        custom = validate(CustomProfile, pdoc, (), pdoc.data if pdoc.data is not None else {})
        base = PROFILES[custom.extends] if custom.extends else Profile("", "")
        toggles, thresholds = self.checked_rules(pdoc, (), custom.rules)
        profile = Profile(
            name=custom.name or match.group(1),
            description=custom.description or base.description,
            toggles={**base.toggles, **toggles},
            thresholds={**base.thresholds, **thresholds},
            autonomy=base.autonomy,
            verbosity=base.verbosity,
            prompt=custom.prompt,
            base=base,
        )
        legacy: list[tuple[Located, Path_, dict[str, Any]]] = [
            (pdoc, ("custom", i), rule.converted()) for i, rule in enumerate(custom.custom)
        ]
        return profile, legacy

    def classifier(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The classifier settings, with a `{{prompt.<name>}}` system prompt read from the
        bundle's `prompts/<name>.md` (or `.txt`) beside the configuration file."""
        reference = settings.get("system_prompt")
        match = _PROMPT_REF.match(reference.strip()) if isinstance(reference, str) else None
        if match is None:
            return settings
        where = (*self.prefix, "classifier", "system_prompt")
        if self.base_dir is None:
            self.fail(self.doc, where, "a {{prompt.<name>}} reference needs a configuration file")
            return settings
        name = match.group(1)
        for file in (self.base_dir / "prompts" / f"{name}.{ext}" for ext in ("md", "txt")):
            if file.is_file():
                self.files.append(str(file.resolve()))
                return {**settings, "system_prompt": file.read_text(encoding="utf-8").strip()}
        display = os.path.join(os.path.dirname(self.doc.file), "prompts", f"{name}.md")
        self.fail(self.doc, where, f"prompt file not found: {display} (or .txt)")
        return settings

    def checked_rules(
        self, doc: Located, prefix: Path_, rules: dict[str, bool | int]
    ) -> tuple[dict[str, bool], dict[str, int]]:
        """Split legacy `rules` into rule toggles (true/false) and thresholds (numbers).

        `max_sequential_same_tool` is both a rule and its threshold: a number sets the threshold
        and switches the rule on, `false` switches it off."""
        toggles: dict[str, bool] = {}
        thresholds: dict[str, int] = {}
        for key, value in rules.items():
            path = (*prefix, "rules", key)
            if isinstance(value, bool) and key in BUILTIN_IDS:
                toggles[key] = value
            elif not isinstance(value, bool) and key in THRESHOLDS:
                if value < 0:
                    self.fail(doc, path, f"{key} is a threshold: a whole number >= 0")
                thresholds[key] = value
                if key in BUILTIN_IDS:
                    toggles[key] = True
            elif key in THRESHOLDS:
                self.fail(doc, path, f"{key} takes a whole number (a threshold)")
            elif key in BUILTIN_IDS:
                self.fail(doc, path, f"{key} is a rule: true or false")
            else:
                self.fail(
                    doc,
                    path,
                    f"unknown rule or threshold {key!r} (rules: {', '.join(BUILTIN_IDS)}; "
                    f"thresholds: {', '.join(THRESHOLDS)})",
                )
        return toggles, thresholds

    def tracking(self, user: StateTracking | None) -> dict[str, Any]:
        merged = {kind: dict(specs) for kind, specs in DEFAULT_TRACKING.items()}
        if user is not None:
            dumped = user.model_dump(exclude_none=True)
            for kind in ("sets", "counters", "flags"):
                merged[kind].update(dumped[kind])
        return merged

    def rule(
        self,
        doc: Located,
        path: Path_,
        spec: dict[str, Any],
        tracking: dict[str, Any],
    ) -> dict[str, Any]:
        refs = References()
        try:
            compile_condition(spec.get("condition") or None, refs)
        except ConditionError as exc:
            self.fail(doc, (*path, "condition", *exc.path), exc.message)
        try:
            template = Template(spec.get("message", ""))
            for kind, name in template.references:
                table = "sets" if kind == "set_count" else f"{kind}s"
                if name not in tracking[table]:
                    self.fail(doc, (*path, "message"), self.unknown_name(kind, name, tracking))
        except TemplateError as exc:
            self.fail(doc, (*path, "message"), str(exc))
        for table, kind, found in (
            ("sets", "set", refs.sets),
            ("counters", "counter", refs.counters),
            ("flags", "flag", refs.flags),
        ):
            for where, name in found:
                if name not in tracking[table]:
                    self.fail(
                        doc,
                        (*path, "condition", *where),
                        self.unknown_name(kind, name, tracking),
                    )
        for where, key in refs.unknown:
            self.warnings.append(
                Problem(doc, (*path, "condition", *where), f"unknown condition type {key!r}")
            )
        return {**spec, "source": doc.where(path)}

    @staticmethod
    def unknown_name(kind: str, name: str, tracking: dict[str, Any]) -> str:
        table = "sets" if kind in ("set", "set_count") else f"{kind}s"
        known = ", ".join(sorted(tracking[table])) or "none"
        return f"unknown {table[:-1]} {name!r} (tracked {table}: {known})"

    def resolve(self, config: BehaviorConfig) -> dict[str, Any]:
        prefix = self.prefix
        legacy: list[tuple[Located, Path_, dict[str, Any]]] = []
        profile = None
        if config.profile is not None:
            profile, legacy = self.profile(config.profile)
        toggles, thresholds = self.checked_rules(self.doc, prefix, config.rules)
        if profile is not None:
            toggles = {**profile.toggles, **toggles}
            thresholds = {**profile.thresholds, **thresholds}
        thresholds = {**THRESHOLDS, **thresholds}
        tracking = self.tracking(config.state_tracking)

        chosen: dict[str, dict[str, Any]] = {}
        profile_label = f"builtin (profile {profile.name})" if profile else "builtin (rules)"
        for spec in builtin_rules(thresholds):
            if toggles.get(spec["id"]) is True:
                chosen[spec["id"]] = {**spec, "source": profile_label}
        seen: set[str] = set()
        defined = [
            (self.doc, (*prefix, "rule_definitions", i), rule.model_dump())
            for i, rule in enumerate(config.rule_definitions)
        ]
        converted = [
            (self.doc, (*prefix, "custom", i), rule.converted())
            for i, rule in enumerate(config.custom)
        ]
        for doc, path, spec in [*defined, *legacy, *converted]:
            if spec["id"] in seen:
                self.fail(doc, (*path, "id"), f"rule id {spec['id']!r} is defined twice")
                continue
            seen.add(spec["id"])
            chosen[spec["id"]] = self.rule(doc, path, spec, tracking)
        classifier = self.classifier(config.classifier.model_dump())
        if self.problems:
            raise config_error(self.problems)
        return {
            "profile": None
            if profile is None
            else {
                "name": profile.name,
                "description": profile.description,
                "autonomy": profile.autonomy,
                "verbosity": profile.verbosity,
                "prompt": profile.prompt_text(),
                "prompt_short": profile.prompt_text(full=False),
            },
            "thresholds": thresholds,
            "rules": list(chosen.values()),
            "tracking": tracking,
            "classify_turns": config.classify_turns,
            "classifier": classifier,
            "brain": None if config.brain is None else _brain(config.brain),
            "use_agent_brain": config.use_agent_brain,
            "on_error": config.on_error,
            "context": config.context,
            "workflow": config.workflow.model_dump(),
            "warnings": [w.to_dict() for w in self.warnings],
        }


def _brain(brain: Brain) -> dict[str, Any]:
    """The brain with its endpoint filled in from the provider when not given."""
    out = brain.model_dump()
    out["config"]["base_url"] = out["config"]["base_url"] or PROVIDER_URLS[brain.provider]
    return out


def _plan(doc: Located, base_dir: Path | None) -> tuple[dict[str, Any], list[str]]:
    prefix, data = behavior_root(doc)
    config = validate(BehaviorConfig, doc, prefix, data)
    resolver = Resolver(doc, prefix, base_dir)
    return resolver.resolve(config), resolver.files


def plan_from_file(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[str]]:
    """The plan of a configuration file, and every other file it read (custom profiles)."""
    file = Path(path)
    doc = read_yaml(file, str(path))
    return _plan(doc, file.resolve().parent)


def plan_from_dict(data: dict[str, Any], base_dir: str | None = None) -> dict[str, Any]:
    """The plan of a configuration given as a mapping (locations are key paths only)."""
    doc = Located("<config>", data)
    return _plan(doc, Path(base_dir) if base_dir else None)[0]
