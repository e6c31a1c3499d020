"""``--dashboard [HOST:]PORT`` and the token rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from courtly.errors import ConfigError
from courtly.observe.command import dashboard_spec
from courtly.observe.server import Dashboard, is_loopback, parse_listen
from courtly.observe.sources import FileSource


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8765", ("127.0.0.1", 8765)),
        ("0", ("127.0.0.1", 0)),
        ("127.0.0.2:80", ("127.0.0.2", 80)),
        ("[::1]:9000", ("::1", 9000)),
        (":9000", ("127.0.0.1", 9000)),
        ("0.0.0.0:1", ("0.0.0.0", 1)),
    ],
)
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["", "host:", "x:y", "1:70000", "-1"])
def test_bad_listen_addresses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(text)


def test_loopback_needs_no_token_anything_else_does() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    spec = dashboard_spec("8765", None)
    assert spec is not None and (spec.host, spec.port, spec.token) == ("127.0.0.1", 8765, None)
    with pytest.raises(ConfigError, match="--dashboard-token"):
        dashboard_spec("0.0.0.0:8765", None)
    remote = dashboard_spec("0.0.0.0:8765", "t")
    assert remote is not None and remote.token == "t"
    with pytest.raises(ConfigError, match="needs --dashboard"):
        dashboard_spec(None, "t")
    assert dashboard_spec(None, None) is None


def test_the_server_refuses_an_open_address_without_a_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="token"):
        Dashboard(FileSource(tmp_path), "0.0.0.0", 0)
