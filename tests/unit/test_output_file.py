"""``written_whole``: a named output appears whole or not at all, and a device, a pipe or a
link is never replaced by a regular file (``courtly export -o /dev/stdout`` run by root
replaced the device node with a file before)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main
from courtly.cli.output_file import written_whole
from courtly.exit_codes import ExitCode
from tests.fifo import read_fifo, read_fifo_done


def test_a_new_file_appears_whole_and_nothing_else_is_left(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with written_whole(path) as out:
        out.write("one\n")
        assert not path.exists()  # not before it is whole
    assert path.read_text() == "one\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_failed_write_leaves_the_old_file_and_names_what_the_user_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    with pytest.raises(OSError) as raised, written_whole(path) as out:
        out.write("new, half")
        raise OSError(28, "No space left on device")
    assert raised.value.filename == str(path)
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_link_to_a_file_stays_a_link_and_its_target_is_written(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with written_whole(link) as out:
        out.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"


def test_a_named_pipe_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = read_fifo(fifo, got)
    with written_whole(fifo) as out:
        out.write("through the pipe\n")
    assert read_fifo_done(fifo, reader, 10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_summary_json_into_a_named_pipe(tmp_path: Path) -> None:
    """A refused crawl's ``--summary-json PIPE``, through the command line (``export -o
    PIPE``: tests/integration/test_cli_errors.py)."""
    state = tmp_path / "S"
    state.mkdir()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = read_fifo(fifo, got)
    crawl = ["crawl", "--state", str(state), "--user-agent", "mybot/1.0 (+https://example.org/)"]
    result = CliRunner().invoke(cli_main, [*crawl, "--summary-json", str(fifo), "ftp://x.test/"])
    assert read_fifo_done(fifo, reader, 10), "the summary never went through the pipe"
    assert result.exit_code == ExitCode.REFUSED, result.output
    assert b'"outcome": "refused"' in got[0]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S", "pipe"]
