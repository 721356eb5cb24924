"""Profiles: the six built-in presets of rule toggles, thresholds and prompt text.

Owns: what `dev`, `coding`, `research`, `data`, `creative` and `assistant` switch on, their
thresholds, autonomy and verbosity, and their system-prompt text (`dev` ships the long developer
section). It does not load custom profiles from `behavior/<name>.yaml` (configuration does, and
lays them over one of these).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

from tether.guard.rules import BUILTIN_IDS


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    toggles: dict[str, bool] = field(default_factory=dict)
    thresholds: dict[str, int] = field(default_factory=dict)
    autonomy: str = "medium"
    verbosity: str = "normal"
    prompt: str = ""

    def prompt_text(self) -> str:
        """The prompt section; `dev` reads its long developer section from the package."""
        if self.name == "dev":
            return dev_prompt()
        return self.prompt


def _only(*ids: str) -> dict[str, bool]:
    return {rule_id: rule_id in ids for rule_id in BUILTIN_IDS}


def _all_but(*ids: str) -> dict[str, bool]:
    return {rule_id: rule_id not in ids for rule_id in BUILTIN_IDS}


def dev_prompt() -> str:
    """The developer-discipline prompt section of the `dev` profile."""
    return resources.files("tether.guard").joinpath("prompts/dev.md").read_text(encoding="utf-8")


PROFILES: dict[str, Profile] = {
    "dev": Profile(
        "dev",
        "Senior-developer discipline: the highest standard.",
        _all_but(),
        {"max_blind_reads": 2, "changes_before_test_reminder": 2},
        autonomy="medium",
    ),
    "coding": Profile(
        "coding",
        "Production coding with high autonomy.",
        _all_but("web_search_when_unknown"),
        {"max_blind_reads": 3, "changes_before_test_reminder": 2},
        autonomy="high",
        prompt="Work autonomously: read before you edit, search before you read, run the tests "
        "after your changes, and confirm anything destructive with the user.",
    ),
    "research": Profile(
        "research",
        "Read-heavy research workflows.",
        _all_but(
            "read_before_edit", "test_after_changes", "verify_after_edit", "always_lint_check"
        ),
        {"max_blind_reads": 10},
        autonomy="high",
        prompt="Gather from several sources, cite what you use, and say how sure you are.",
    ),
    "data": Profile(
        "data",
        "Data analysis and ETL.",
        _all_but("delegate_complex"),
        autonomy="medium",
        prompt="Check schemas and samples before transforming data, verify row counts after "
        "each change, and never modify data you have not backed up.",
    ),
    "creative": Profile(
        "creative",
        "Writing and content generation.",
        _only(
            "read_before_edit",
            "read_before_write_existing",
            "confirm_destructive",
            "plan_before_execute",
            "web_search_when_unknown",
        ),
        autonomy="low",
        verbosity="detailed",
        prompt="Propose an outline before writing, explain your choices, and check facts you "
        "are not sure of.",
    ),
    "assistant": Profile(
        "assistant",
        "General-purpose assistant with minimal enforcement.",
        _only(
            "read_before_edit",
            "read_before_write_existing",
            "confirm_destructive",
            "web_search_when_unknown",
        ),
        autonomy="medium",
    ),
}
