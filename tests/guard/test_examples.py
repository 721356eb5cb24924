"""The configurations shipped in examples/guard load and behave as their comments say."""

from __future__ import annotations

from pathlib import Path

from tether.guard import Guard
from tether.guard.rules.fixtures import run_cases

EXAMPLES = Path(__file__).parents[2] / "examples" / "guard"


def load(name: str) -> Guard:
    return Guard.from_file(str(EXAMPLES / name))


def test_coding_protects_migrations_and_tightens_thresholds():
    guard = load("coding.yaml")
    assert guard.plan["thresholds"]["max_blind_reads"] == 2
    assert guard.classifier is not None
    d = guard.session().pre_tool("Write", {"file_path": "/p/db/migration_7.py"})
    assert d.blocked
    assert [f.rule for f in d.firings if f.action == "block"] == ["protect_migrations"]


def test_database_needs_a_backup_before_writes():
    s = load("database.yaml").session()
    d = s.pre_tool("database.execute", {"query": "DELETE FROM users WHERE id = 3"})
    assert d.blocked
    assert d.firings[0].message == (
        "BLOCKED: Create a backup before running 'DELETE FROM users WHERE id = 3'."
    )
    s.post_tool("database.backup", {})
    assert not s.pre_tool("database.execute", {"query": "DELETE FROM users WHERE id = 3"}).blocked
    assert s.post_tool("database.execute", {"query": "DELETE FROM users"}).rules == [
        "verify_row_count"
    ]
    for _ in range(3):
        s.post_tool("database.query", {"query": "select id from t", "table": "t"})
    assert s.pre_tool("database.query", {"query": "SELECT * FROM t"}).rules == [
        "no_select_star",
        "schema_before_query",
    ]
    s.post_tool("database.describe", {"table": "t"})
    assert s.pre_tool("database.query", {"query": "select id from t"}).rules == []


def test_research_reminds_to_cite_and_cross_reference():
    s = load("research.yaml").session()
    for i in range(3):
        assert s.post_tool("web.fetch", {"url": f"https://example.org/{i}"}).rules == [
            "cite_sources"
        ]
    assert s.pre_tool("memory.remember", {"text": "x"}).rules == ["cross_reference"]
    assert s.state.sets["fetched_urls"] == dict.fromkeys(
        f"https://example.org/{i}" for i in range(3)
    )


def test_strict_profile_and_its_cases():
    guard = load("strict.yaml")
    assert guard.plan["profile"]["name"] == "strict_dev"
    report = run_cases(str(EXAMPLES / "cases.yaml"))
    assert (report["passed"], report["failed"]) == (3, 0)
