from __future__ import annotations

from pathlib import Path

import pytest

from courtly.errors import ConfigError
from courtly.fetch import load_hosts_file, parse_hosts_text
from courtly.fetch.hosts import check_hosts_file

SAMPLE = """\
# a comment line
127.0.0.1   localhost loopback
::1         localhost ip6-localhost   # trailing comment

10.0.0.5\tAlpha.Example.\talpha
10.0.0.6 alpha.example
0:0:0:0:0:0:0:1 six.example
not-an-ip   broken.example
   # indented comment
192.168.0.9
fe80::1%lo link.example
"""


def test_parse_names_addresses_and_comments() -> None:
    table = parse_hosts_text(SAMPLE)
    assert table["localhost"] == ["127.0.0.1", "::1"]
    assert table["loopback"] == ["127.0.0.1"]
    assert table["ip6-localhost"] == ["::1"]
    # names are lower-cased and lose a trailing dot; several lines accumulate
    assert table["alpha.example"] == ["10.0.0.5", "10.0.0.6"]
    assert table["alpha"] == ["10.0.0.5"]
    # addresses come out canonical
    assert table["six.example"] == ["::1"]
    assert table["link.example"] == ["fe80::1%lo"]
    # a bad address skips the line; an address without names adds nothing
    assert "broken.example" not in table
    assert "192.168.0.9" not in table
    assert "#" not in "".join(table)


def test_duplicate_lines_do_not_duplicate_addresses() -> None:
    table = parse_hosts_text("1.2.3.4 a\n1.2.3.4 a A\n")
    assert table == {"a": ["1.2.3.4"]}


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(SAMPLE, encoding="utf-8")
    assert load_hosts_file(path) == parse_hosts_text(SAMPLE)
    assert load_hosts_file(str(path)) == parse_hosts_text(SAMPLE)


def test_empty_file_gives_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_bytes(b"# nothing\n\n")
    assert load_hosts_file(path) == {}


def test_a_file_with_a_byte_order_mark_keeps_its_first_entry(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_bytes(b"\xef\xbb\xbf127.0.0.7 first.test\r\n127.0.0.8 second.test\r\n")
    assert load_hosts_file(path) == {"first.test": ["127.0.0.7"], "second.test": ["127.0.0.8"]}


def test_the_lines_skipped_are_said_for_a_warning(tmp_path: Path) -> None:
    """A typo in a hosts file sends its name to DNS instead: the crawl warns of each line
    it skips (blank lines and comments are not skipped lines)."""
    path = tmp_path / "hosts"
    path.write_text(
        "# sandbox\n\n127.0.0.2 a.test\ngarbage here\n127.0.0.3\n999.1.1.1 b.test  # typo\n",
        encoding="utf-8",
    )
    assert check_hosts_file(path) == [
        "line 4: 'garbage' is not an IP address",
        "line 5: an address without a name",
        "line 6: '999.1.1.1' is not an IP address",
    ]
    assert load_hosts_file(path) == {"a.test": ["127.0.0.2"]}
    with pytest.raises(ConfigError, match=r"--hosts-file .*nope: No such file"):
        check_hosts_file(tmp_path / "nope")
