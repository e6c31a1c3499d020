from __future__ import annotations

from pathlib import Path

import pytest

from courtly.clock import FakeClock
from courtly.errors import ConfigError
from courtly.fetch import load_hosts_file, parse_hosts_text
from courtly.fetch.dns import DnsCache
from courtly.fetch.hosts import check_hosts_file, normalise_host_name

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


def test_a_name_in_another_script_is_keyed_as_urls_spell_it_on_the_wire(tmp_path: Path) -> None:
    """A URL's host goes out IDNA-encoded (``http://bücher.test/`` asks for
    ``xn--bcher-kva.test``), so a hosts file that names it in its own script must key it
    the same way, or the name is silently sent to DNS. One no URL can have is said."""
    path = tmp_path / "hosts"
    path.write_text(
        "127.0.0.5 Bücher.test. faß.de\n127.0.0.6 xn--bcher-kva.test\n127.0.0.7 a\u2488.test\n",
        encoding="utf-8",
    )
    assert load_hosts_file(path) == {
        "xn--bcher-kva.test": ["127.0.0.5", "127.0.0.6"],
        "xn--fa-hia.de": ["127.0.0.5"],
    }
    assert check_hosts_file(path) == ["line 3: 'a\u2488.test' is not a valid host name"]
    assert normalise_host_name("BÜCHER.test") == "xn--bcher-kva.test"
    assert normalise_host_name("Example.COM.") == "example.com"
    assert normalise_host_name("a\u2488.test") == "a\u2488.test"  # matches no URL's host


async def test_dns_overrides_named_in_another_script_answer_the_encoded_host() -> None:
    cache = DnsCache(FakeClock(), overrides={"bücher.test": ["127.0.0.5"]})
    assert await cache.resolve("xn--bcher-kva.test") == ("127.0.0.5",)
    assert await cache.resolve("BÜCHER.TEST") == ("127.0.0.5",)
