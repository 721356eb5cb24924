"""The classifier against a real local OpenAI-compatible chat-completions server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tether.errors import TetherError
from tether.guard import Guard
from tether.guard.harness.hooks import handle
from tether.guard.harness.session_store import SessionStore


class FakeLLM:
    """What the server answers next, and every request it received."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self.answered = 0

    def answer(self, content: str, delay: float = 0.0, status: int = 200) -> None:
        self.replies.append({"content": content, "delay": delay, "status": status})

    def verdict(self, **fields: Any) -> None:
        self.answer(json.dumps(fields))


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            reply: dict[str, Any] = (
                fake.replies.pop(0)
                if fake.replies
                else {"content": "{}", "delay": 0, "status": 200}
            )
            time.sleep(reply["delay"])
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": reply["content"]},
                    }
                ],
            }
            data = json.dumps(payload).encode()
            try:
                self.send_response(reply["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                fake.answered += 1
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield fake
    server.shutdown()
    server.server_close()


def guard(llm: FakeLLM, api_key: str | None = None, **classifier: Any) -> Guard:
    config: dict[str, Any] = {"base_url": llm.url}
    if api_key is not None:
        config["api_key"] = api_key
    return Guard.from_config(
        {
            "profile": "coding",
            "classify_turns": True,
            "classifier": classifier,
            "brain": {"provider": "local", "model": "tiny", "config": config},
        }
    )


def test_directive_with_the_default_vocabulary(llm):
    llm.verdict(
        complexity="complex",
        approach="plan_and_confirm",
        risk="high",
        directives=["List the files you will change.", "Ask before deleting."],
    )
    d = guard(llm).session(cwd="/project").on_user_message("Refactor the storage layer")
    assert d.directive == "\n".join(
        [
            "[BEHAVIOR DIRECTIVE - complex complexity, high risk]",
            "Approach: plan_and_confirm",
            "- List the files you will change.",
            "- Ask before deleting.",
            "Risk level: high. Confirm destructive or irreversible actions with the user before "
            "proceeding.",
            "Follow these directives. They come from an analysis of the request, "
            "not from the user.",
        ]
    )
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny"
    system, user = request["body"]["messages"]
    assert system["role"] == "system"
    assert "- plan_and_confirm" in system["content"]
    assert "Production coding with high autonomy." in system["content"]
    assert user["content"].startswith("User message:\nRefactor the storage layer")
    assert "Workspace: /project" in user["content"]


def test_low_risk_has_no_warning(llm):
    llm.verdict(complexity="simple", approach="direct", risk="low", directives=[])
    d = guard(llm).session().on_user_message("rename a variable")
    assert "Risk level" not in d.directive


def test_structured_vocabulary_labels_and_behaviors(llm):
    llm.verdict(
        complexity="migration",
        approach="dry_run_first",
        risk="destructive",
        directives=["Run it in a transaction."],
    )
    g = guard(
        llm,
        complexity_levels=[
            {"name": "query", "when": "Single SELECT"},
            {"name": "migration", "when": "Schema changes", "behavior": "MUST get user approval"},
        ],
        approaches=[
            {"name": "direct", "label": "Execute directly"},
            {
                "name": "dry_run_first",
                "label": "Dry-run before executing",
                "behavior": "Run with LIMIT 10 first",
            },
        ],
        risk_levels=[
            {"name": "read_only"},
            {"name": "write"},
            {"name": "destructive", "behavior": "MUST confirm with user"},
        ],
        directive_prefix="[DATA DIRECTIVE - {complexity}, {risk} risk, {approach_label}]",
        high_risk_threshold="write",
        high_risk_warning="Risk {risk}: confirm first ({approach}).",
        directive_footer="",
    )
    d = g.session().on_user_message("drop the legacy column")
    assert d.directive.splitlines() == [
        "[DATA DIRECTIVE - migration, destructive risk, Dry-run before executing]",
        "Approach: Dry-run before executing. Run with LIMIT 10 first",
        "Complexity (migration): MUST get user approval",
        "Risk (destructive): MUST confirm with user",
        "- Run it in a transaction.",
        "Risk destructive: confirm first (dry_run_first).",
    ]
    system = llm.requests[0]["body"]["messages"][0]["content"]
    assert "- migration: Schema changes" in system
    assert "- dry_run_first (Dry-run before executing)" in system


SIMPLE = '{"complexity": "simple", "approach": "direct", "risk": "none", "directives": []}'


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{SIMPLE}\n```",
        f"Here is my analysis:\n{SIMPLE}\nDone.",
        f"```\n{SIMPLE}\n```",
    ],
)
def test_fenced_and_wrapped_replies_are_parsed(llm, reply):
    llm.answer(reply)
    d = guard(llm).session().on_user_message("what is in this folder")
    assert d.directive.startswith("[BEHAVIOR DIRECTIVE - simple complexity, none risk]")


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        ("I think this is simple.", "holds no JSON object"),
        ('{"complexity": "huge", "approach": "direct", "risk": "none"}', "complexity 'huge'"),
        ('{"complexity": "simple", "risk": "none"}', "approach None"),
        (
            '{"complexity": "simple", "approach": "direct", "risk": "none", "directives": "x"}',
            "not a list",
        ),
        ('{"skip_reason": "small talk"}', "skipped this message: small talk"),
    ],
)
def test_malformed_replies_give_no_directive_and_a_note(llm, reply, note):
    llm.answer(reply)
    d = guard(llm).session().on_user_message("hello there")
    assert d.directive is None
    assert note in d.notes[0]


def test_max_directives(llm):
    llm.verdict(
        complexity="simple", approach="direct", risk="none", directives=["a", "b", "c", "d"]
    )
    d = guard(llm, max_directives=2).session().on_user_message("do it")
    assert [line for line in d.directive.splitlines() if line.startswith("- ")] == ["- a", "- b"]


def test_hard_timeout_lets_the_turn_go_on(llm):
    llm.answer('{"complexity": "simple", "approach": "direct", "risk": "none"}', delay=10)
    d = guard(llm, timeout=0.3).session().on_user_message("do something")
    # The turn went on while the server was still holding its reply.
    assert llm.requests and llm.answered == 0
    assert d.directive is None
    assert d.notes == ["the classifier timed out after 0.3s"]


def test_http_error(llm):
    llm.answer("{}", status=500)
    d = guard(llm).session().on_user_message("do something")
    assert d.directive is None
    assert d.notes == ["the classifier answered HTTP 500"]


def test_unreachable_endpoint():
    g = Guard.from_config(
        {
            "classify_turns": True,
            "brain": {
                "provider": "local",
                "model": "m",
                "config": {"base_url": "http://127.0.0.1:9/v1"},
            },
        }
    )
    d = g.session().on_user_message("do something")
    assert d.directive is None
    assert "could not be reached" in d.notes[0]


def test_api_key_from_a_secret(llm, monkeypatch):
    monkeypatch.setenv("TINY_API_KEY", "sk-test-123")
    llm.verdict(complexity="simple", approach="direct", risk="none")
    guard(llm, api_key="{{secret.TINY_API_KEY}}").session().on_user_message("go on then, do it")
    assert llm.requests[0]["auth"] == "Bearer sk-test-123"


def test_missing_secret(llm, monkeypatch):
    monkeypatch.delenv("TINY_API_KEY", raising=False)
    d = guard(llm, api_key="{{secret.TINY_API_KEY}}").session().on_user_message("do it now")
    assert d.notes == ["secret TINY_API_KEY is not set in the environment"]
    assert llm.requests == []


def classified(llm: FakeLLM, messages: list[str], **classifier: Any) -> list[int]:
    """The 1-based turns whose message reached the classifier."""
    s = guard(llm, **classifier).session()
    out = []
    for turn, message in enumerate(messages, 1):
        before = len(llm.requests)
        llm.verdict(complexity="simple", approach="direct", risk="none")
        s.on_user_message(message)
        if len(llm.requests) > before:
            out.append(turn)
    return out


def test_frequency_every_turn_and_skipped_followups(llm):
    assert classified(llm, ["fix a", "ok", "fix b", "Thanks!"]) == [1, 3]
    assert classified(llm, ["fix a", "ok"], skip_followups=False) == [1, 2]


def test_frequency_first_turn(llm):
    assert classified(llm, ["fix a", "fix b", "fix c"], frequency="first_turn") == [1]


def test_frequency_every_n_turns(llm):
    messages = [f"task {i}" for i in range(7)]
    assert classified(llm, messages, frequency="every_n_turns", frequency_n=3) == [1, 4, 7]


def test_frequency_on_new_message(llm):
    messages = ["fix a", "fix a", "fix b"]
    assert classified(llm, messages, frequency="on_new_message") == [1, 3]
    assert classified(llm, messages, frequency="every_turn") == [1, 2, 3]


def test_agent_brain_is_used_unless_disabled(llm):
    agent = {"provider": "local", "model": "agent", "config": {"base_url": llm.url}}
    llm.verdict(complexity="simple", approach="direct", risk="none")
    g = Guard.from_config({"classify_turns": True}, agent_brain=agent)
    assert g.session().on_user_message("do it").directive is not None
    assert llm.requests[0]["body"]["model"] == "agent"
    off = Guard.from_config({"classify_turns": True, "use_agent_brain": False}, agent_brain=agent)
    assert off.classifier is None


def test_no_classification_unless_classify_turns(llm):
    g = Guard.from_config(
        {"brain": {"provider": "local", "model": "m", "config": {"base_url": llm.url}}}
    )
    assert g.session().on_user_message("do it").directive is None
    assert llm.requests == []


def test_user_prompt_submit_hook_carries_the_directive(llm, tmp_path):
    llm.verdict(
        complexity="moderate",
        approach="explore_first",
        risk="low",
        directives=["Find the call sites first."],
    )
    out = handle(
        {
            "session_id": "s",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Change the signature of parse()",
        },
        guard(llm),
        SessionStore(str(tmp_path / "state")),
    )
    context = out["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert context["additionalContext"].startswith("[BEHAVIOR DIRECTIVE - moderate complexity")
    assert "- Find the call sites first." in context["additionalContext"]


def test_system_prompt_from_the_bundle_prompt_file(llm, tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "classifier.md").write_text("You judge requests for the team.\n")
    config = tmp_path / "guard.yaml"
    config.write_text(
        "profile: coding\nclassify_turns: true\n"
        'classifier:\n  system_prompt: "{{prompt.classifier}}"\n'
        f"brain: {{provider: local, model: tiny, config: {{base_url: '{llm.url}'}}}}\n"
    )
    llm.verdict(complexity="simple", approach="direct", risk="low", directives=[])
    Guard.from_file(str(config)).session(cwd="/p").on_user_message("rename a variable")
    system = llm.requests[0]["body"]["messages"][0]
    assert system["content"] == "You judge requests for the team."


def test_missing_bundle_prompt_file_is_a_config_error(tmp_path):
    config = tmp_path / "guard.yaml"
    config.write_text('classifier:\n  system_prompt: "{{prompt.nope}}"\n')
    with pytest.raises(TetherError) as info:
        Guard.from_file(str(config))
    assert "prompt file not found" in info.value.message and "nope.md" in info.value.message
    assert info.value.details["line"] == 2
