"""Profiles: the six built-in presets of rule toggles, thresholds and prompt text.

Owns: what `dev`, `coding`, `research`, `data`, `creative` and `assistant` switch on, their
thresholds, autonomy and verbosity, and their system-prompt text (`dev` ships the long developer
section, a package file), whole or short: the short text keeps of a long section its heading and
first paragraph. It does not load custom profiles from `behavior/<name>.yaml` (configuration
does, and lays them over one of these as `base`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

from tether.guard.rules.rule import BUILTIN_IDS


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    toggles: dict[str, bool] = field(default_factory=dict)
    thresholds: dict[str, int] = field(default_factory=dict)
    autonomy: str = "medium"
    verbosity: str = "normal"
    prompt: str = ""
    section: str | None = None  # a long prompt section shipped in the package (prompts/NAME.md)
    base: Profile | None = None  # the built-in profile a custom one extends

    def prompt_text(self, full: bool = True) -> str:
        """The prompt section: the base's, then this profile's own. A long section from the
        package is given whole when `full`, else its heading and first paragraph."""
        own = self.prompt
        if self.section is not None:
            text = section(self.section)
            own = text if full else _lead(text)
        base = self.base.prompt_text(full) if self.base is not None else ""
        return "\n\n".join(p for p in (base, own.strip()) if p)


def _only(*ids: str) -> dict[str, bool]:
    return {rule_id: rule_id in ids for rule_id in BUILTIN_IDS}


def _all_but(*ids: str) -> dict[str, bool]:
    return {rule_id: rule_id not in ids for rule_id in BUILTIN_IDS}


def section(name: str) -> str:
    """The prompt section `prompts/<name>.md` shipped in the package."""
    path = resources.files("tether.guard.rules").joinpath(f"prompts/{name}.md")
    return path.read_text(encoding="utf-8")


def _lead(text: str) -> str:
    """A section's heading and first paragraph (its first paragraph when it has no heading)."""
    blocks = [block.strip() for block in text.strip().split("\n\n") if block.strip()]
    if len(blocks) > 1 and blocks[0].startswith("#") and "\n" not in blocks[0]:
        return f"{blocks[0]}\n\n{blocks[1]}"
    return blocks[0] if blocks else ""


PROFILES: dict[str, Profile] = {
    "dev": Profile(
        "dev",
        "Senior-developer discipline: the highest standard.",
        _all_but(),
        {"max_blind_reads": 2, "changes_before_test_reminder": 2},
        autonomy="medium",
        section="dev",
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
