"""``--dashboard [HOST:]PORT`` and the token rule."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main
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


def _state_with_status(root: Path) -> Path:
    state = root / "S"
    state.mkdir()
    (state / "status.json").write_text('{"running": false}', encoding="utf-8")
    return state


def test_courtly_dashboard_names_its_own_flags(tmp_path: Path) -> None:
    """`courtly dashboard` takes --listen and --token, and its messages say so (they said
    --dashboard and --dashboard-token, `courtly crawl`'s names)."""
    state = _state_with_status(tmp_path)
    for args, message in (
        (["--listen", "nonsense"], "Error: --listen: not a [HOST:]PORT: 'nonsense'"),
        (["--listen", "0.0.0.0:1"], "Error: --listen on 0.0.0.0 is reachable from other "),
    ):
        result = CliRunner().invoke(cli_main, ["dashboard", "--state", str(state), *args])
        assert result.exit_code == 2 and message in result.output, result.output


def test_courtly_dashboard_on_a_taken_address_is_a_message_not_a_traceback(
    tmp_path: Path,
) -> None:
    state = _state_with_status(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["dashboard", "--state", str(state), "--listen", f"127.0.0.1:{port}"]
        result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert f"Error: --listen 127.0.0.1:{port}: " in result.output
    assert "address already in use" in result.output
