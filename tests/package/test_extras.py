"""A missing extra names the command that installs it into the installation Tether runs from:
pipx's environment (`pipx inject`), a `uv tool` environment (`uv tool install --force --with`),
uvx (`uvx --with`), a virtual environment or the system's Python (that interpreter's own pip),
each told apart by what the installer leaves in `sys.prefix`. Every extra gives the same
`missing_extra` (the PostgreSQL store and OpenTelemetry alike). The real pipx and uv installs
run the command the error gives (`tests/package/test_install_from_checkout.py`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tether import installation, store
from tether.errors import TetherError
from tether.verbs import Runtime

POSTGRES = "'psycopg[binary]>=3.2' 'psycopg-pool>=3.2'"
OTEL = "'opentelemetry-sdk>=1.30' 'opentelemetry-exporter-otlp-proto-http>=1.30'"


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment's folder that this process takes for its own."""
    env = tmp_path / "venvs" / "tether-bt"
    (env / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(env))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    monkeypatch.setattr(sys, "executable", str(env / "bin" / "python"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    return env


def refusal(monkeypatch: pytest.MonkeyPatch) -> TetherError:
    """What a postgresql:// URI gives without the driver."""
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "tether.store.postgres", raising=False)
    monkeypatch.setattr(store, "_stores", {})
    with pytest.raises(TetherError) as err:
        Runtime().next("postgresql://u@127.0.0.1:1/db#run")
    return err.value


def test_under_pipx_the_command_injects_the_extra_into_pipxs_environment(
    prefix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (prefix / "pipx_metadata.json").write_text("{}")
    error = refusal(monkeypatch)
    assert (error.code, error.exit_code) == ("missing_extra", 1)
    assert error.details["installed_with"] == "pipx"
    assert error.details["command"] == f"pipx inject tether-bt {POSTGRES}"
    assert f"pipx's environment {prefix}" in error.message
    assert error.details["command"] in error.message
    assert "pip install '.[postgres]'" not in error.message  # never reaches pipx's environment


def test_under_uv_tool_the_command_reinstalls_the_tool_with_the_extra(
    prefix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (prefix / "uv-receipt.toml").write_text("[tool]\n")
    source = installation.installed_from() or "tether-bt"
    error = refusal(monkeypatch)
    assert error.details["installed_with"] == "uv tool"
    assert error.details["command"] == (
        "uv tool install --force --with 'psycopg[binary]>=3.2' --with 'psycopg-pool>=3.2' "
        + shlex.quote(source)
    )


def test_under_uvx_the_command_runs_uvx_with_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "uv-cache" / "archive-v0" / "abc"
    env.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(env))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    source = installation.installed_from() or "tether-bt"
    error = refusal(monkeypatch)
    assert error.details["installed_with"] == "uvx"
    assert error.details["command"].startswith(f"uvx --from {shlex.quote(source)} --with ")


def test_in_a_virtual_environment_or_the_systems_python_its_own_pip_installs_the_extra(
    prefix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = refusal(monkeypatch)
    assert error.details["installed_with"] == "venv"
    assert error.details["command"] == f"{prefix / 'bin' / 'python'} -m pip install {POSTGRES}"
    assert f"the virtual environment {prefix}" in error.message
    # the system's Python: no virtual environment
    monkeypatch.setattr(sys, "base_prefix", str(prefix))
    error = refusal(monkeypatch)
    assert error.details["installed_with"] == "system"
    assert error.details["command"] == f"{prefix / 'bin' / 'python'} -m pip install {POSTGRES}"
    assert f"the system's Python {prefix / 'bin' / 'python'}" in error.message


def test_the_otel_extra_gives_the_same_error_with_its_own_requirements(
    prefix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (prefix / "pipx_metadata.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    from tether.otel.send import Sender

    with pytest.raises(TetherError) as err:
        Sender("http://127.0.0.1:1")
    assert err.value.code == "missing_extra"
    assert err.value.details["command"] == f"pipx inject tether-bt {OTEL}"


def test_from_a_source_tree_the_checkouts_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installation, "requirements", lambda extra: None)
    assert installation.install_command("postgres").startswith("pip install '.[postgres]'")
