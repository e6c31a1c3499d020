from __future__ import annotations

from pathlib import Path

import pytest

from courtly.sandbox import SandboxSpec, SandboxWorld, format_hosts_file, parse_hosts_file
from courtly.sandbox.hosts_file import write_hosts_file
from courtly.sandbox.urls import normalise_path, split_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", "/"),
        ("/%7Euser/", "/~user/"),
        ("/%7euser/", "/~user/"),
        ("/p/./3.html", "/p/3.html"),
        ("/p/x/../3.html", "/p/3.html"),
        ("/p/%33.html#frag", "/p/3.html"),
        ("/a%2fb", "/a%2Fb"),
        ("/s/1.html?sid=ab", "/s/1.html?sid=ab"),
        ("/q?", "/q"),
        ("/../x", "/x"),
    ],
)
def test_normalise_path(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


def test_split_url_lowercases_host_and_reads_port() -> None:
    assert split_url("http://SHOP1.Site0.TEST:8080/p/%31.html#x") == (
        "shop1.site0.test",
        8080,
        "/p/1.html",
    )
    assert split_url("http://a.test")[1:] == (80, "/")
    with pytest.raises(ValueError):
        split_url("https://a.test/")


def test_hosts_file_is_etc_hosts_format() -> None:
    world = SandboxWorld(SandboxSpec.small(), 8080)
    text = format_hosts_file(world.host_addresses(), comment="sandbox")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(lines) == len(world.hosts)
    for line, host in zip(lines, world.hosts, strict=True):
        ip, name = line.split(" ")
        assert (ip, name) == (host.ip, host.name)
        assert ip.startswith("127.")
    assert parse_hosts_file(text) == world.host_addresses()


def test_parse_hosts_file_ignores_comments_and_keeps_first() -> None:
    text = "# c\n127.0.0.2 a.test b.test # trailing\n\n127.0.0.3 A.test\n"
    assert parse_hosts_file(text) == {"a.test": "127.0.0.2", "b.test": "127.0.0.2"}


def test_write_hosts_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    write_hosts_file(path, {"x.site0.test": "127.0.0.9"})
    assert path.read_text() == "127.0.0.9 x.site0.test\n"
