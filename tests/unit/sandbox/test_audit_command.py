"""``courtly sandbox audit`` on a directory no ``serve`` wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main


@pytest.mark.parametrize("content", [None, "{not json", '{"no": "spec"}'])
def test_a_directory_without_a_readable_sandbox_json_is_a_message(
    tmp_path: Path, content: str | None
) -> None:
    if content is not None:
        (tmp_path / "sandbox.json").write_text(content, encoding="utf-8")
    args = ["sandbox", "audit", "--dir", str(tmp_path), "--min-delay", "1", "--per-ip-cap", "2"]
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "no readable sandbox.json of a `courtly sandbox serve`" in result.output


@pytest.mark.parametrize(
    ("flag", "value"), [("--min-delay", "-1"), ("--per-ip-cap", "0"), ("--tolerance", "-0.1")]
)
def test_a_number_out_of_range_is_refused(tmp_path: Path, flag: str, value: str) -> None:
    """Before, the audit ran with them (a cap of 0 made every request a violation)."""
    args = ["sandbox", "audit", "--dir", str(tmp_path), "--min-delay", "1", "--per-ip-cap", "2"]
    result = CliRunner().invoke(cli_main, [*args, flag, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.output
