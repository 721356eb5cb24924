"""The gate in front of the local HTTP servers (`tether.httpgate`), asked directly: the servers'
own tests (`tests/mcp/test_http_security.py`, `tests/guard/test_serve_security.py`,
`tests/viewer/test_server.py`) show each server answers what the gate decides."""

from __future__ import annotations

import pytest

from support.hosts import FOREIGN_HOSTS, LOOPBACK_HOSTS
from tether.errors import TetherError
from tether.httpgate import Gate, Refusal, require_token

PORT = 8977


def ask(gate: Gate, method: str = "GET", path: str = "/mcp", **headers: str) -> Refusal | None:
    """The gate's answer to a request with these headers (`content_type` for Content-Type)."""
    given = {name.replace("_", "-").lower(): value for name, value in headers.items()}
    given.setdefault("host", f"127.0.0.1:{PORT}")
    return gate.refusal(method, path, given.get)


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_is_refused(host: str) -> None:
    refused = ask(Gate("127.0.0.1", None), host=host.format(port=PORT))
    assert refused is not None
    assert (refused.status, refused.code) == (421, "forbidden")


@pytest.mark.parametrize("host", LOOPBACK_HOSTS)
def test_loopback_names_pass(host: str) -> None:
    assert ask(Gate("127.0.0.1", None), host=host.format(port=PORT)) is None


def test_the_bound_address_and_allowed_names_pass_in_any_case() -> None:
    gate = Gate("192.0.2.10", "t", allowed_hosts=("Guard.Internal",))
    auth = "Bearer t"
    assert ask(gate, host="192.0.2.10:80", authorization=auth) is None
    assert ask(gate, host="GUARD.internal", authorization=auth) is None
    assert ask(gate, host="192.0.2.11", authorization=auth) is not None
    # A wildcard address adds no name: only loopback and the allowed names are served.
    assert ask(Gate("0.0.0.0", "t"), host="0.0.0.0", authorization=auth) is not None


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "file://localhost",
        "http://localhost:80@evil.example",
        "ws://localhost",
    ],
)
def test_a_foreign_origin_is_refused(origin: str) -> None:
    refused = ask(Gate("127.0.0.1", None), origin=origin)
    assert refused is not None and refused.status == 403


def test_a_loopback_origin_passes() -> None:
    assert ask(Gate("127.0.0.1", None), origin=f"https://LOCALHOST:{PORT}") is None


def test_the_token_is_asked_on_every_path_but_health() -> None:
    gate = Gate("127.0.0.1", "s3cret")
    for given in (None, "Bearer wrong", "Basic s3cret", "s3cret"):
        headers = {} if given is None else {"authorization": given}
        refused = ask(gate, **headers)
        assert refused is not None and refused.status == 401, given
        assert refused.headers == {"WWW-Authenticate": 'Bearer realm="tether"'}
    assert ask(gate, authorization="bearer  s3cret ") is None
    assert ask(gate, path="/health") is None


def test_a_post_body_is_judged_by_its_declared_length_and_type() -> None:
    gate = Gate("127.0.0.1", None, max_body_bytes=100, length_required=True)
    json_type = "application/json; charset=utf-8"
    statuses = [
        (refused.status if (refused := ask(gate, "POST", **headers)) else None)
        for headers in (
            {"content_type": json_type},
            {"content_length": "-5", "content_type": json_type},
            {"content_length": "101", "content_type": json_type},
            {"content_length": "100", "content_type": "text/plain"},
            {"content_length": "100", "content_type": json_type},
        )
    ]
    assert statuses == [411, 400, 413, 415, None]
    # A GET's body is not the gate's business; a foreign sender is refused before its body.
    assert ask(gate, "GET", content_length="999") is None
    refused = ask(gate, "POST", host="evil.example", content_length="999")
    assert refused is not None and refused.status == 421


def test_serving_beyond_loopback_needs_a_token_and_a_limit_must_be_positive() -> None:
    require_token("127.0.0.1", None, "TOKEN")
    require_token("0.0.0.0", "t", "TOKEN")
    with pytest.raises(TetherError, match="TOKEN") as err:
        require_token("0.0.0.0", None, "TOKEN")
    assert err.value.code == "usage"
    with pytest.raises(TetherError) as err:
        Gate("127.0.0.1", None, max_body_bytes=0)
    assert err.value.code == "usage"
