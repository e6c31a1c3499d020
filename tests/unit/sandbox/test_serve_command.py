"""``courtly sandbox serve`` where it cannot serve: a message naming the flag, exit 1, no
traceback (before: Python's traceback of the bind or of the directory's creation)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main
from courtly.sandbox import SandboxSpec
from courtly.sandbox.world import SandboxWorld


def test_a_port_already_taken_is_a_message(tmp_path: Path) -> None:
    world = SandboxWorld(SandboxSpec.small(), 0)
    first = sorted(set(world.host_addresses().values()))[0]  # an address the web serves on
    with socket.socket() as taken:
        taken.bind((first, 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["sandbox", "serve", "--spec", "small", "--dir", str(tmp_path / "web")]
        result = CliRunner().invoke(cli_main, [*args, "--port", str(port)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert f"Error: --port {port}: " in result.output


def test_a_directory_that_cannot_be_made_is_a_message(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("in the way\n", encoding="utf-8")
    where = tmp_path / "a-file" / "web"
    result = CliRunner().invoke(cli_main, ["sandbox", "serve", "--dir", str(where)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert f"Error: --dir {where}: Not a directory" in result.output


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--port", "70000"), ("--port", "-1"), ("--n-hosts", "0"), ("--workers", "0")],
)
def test_an_out_of_range_number_is_refused(tmp_path: Path, flag: str, value: str) -> None:
    """Before: a port out of range was Python's OverflowError from the bind, and a host or
    worker count below 1 was quietly taken as another number."""
    args = ["sandbox", "serve", "--spec", "broad", "--dir", str(tmp_path / "web"), flag, value]
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.output
    assert not (tmp_path / "web").exists()
