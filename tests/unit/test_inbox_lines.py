"""Inbox lines: a page's forwarded links carry their cash; lines without it still read."""

from __future__ import annotations

import json

from courtly.frontier.records import QueuedUrl
from courtly.parallel.inbox import decode_line, encode_line


def test_a_line_with_cash_round_trips() -> None:
    entries = [
        QueuedUrl("http://b.test/t", "b.test", 2, 1),
        QueuedUrl("http://c.test/", "c.test", 3, 4),
    ]
    line = encode_line("http://a.test/", entries, [0.25, 0.125])
    got: list[QueuedUrl] = []
    referrers: list[str | None] = []
    cash: list[float | None] = []
    decode_line(line.rstrip(b"\n"), got, referrers, cash)
    assert got == entries
    assert referrers == ["http://a.test/"] * 2
    assert cash == [0.25, 0.125]


def test_a_line_without_cash_reads_with_none() -> None:
    old = json.dumps([None, [["http://b.test/sitemap.xml", "b.test", 1, 1]]]).encode()
    got: list[QueuedUrl] = []
    referrers: list[str | None] = []
    cash: list[float | None] = []
    decode_line(old, got, referrers, cash)
    assert (got, referrers, cash) == (
        [QueuedUrl("http://b.test/sitemap.xml", "b.test", 1, 1)],
        [None],
        [None],
    )
    assert encode_line(None, got).rstrip(b"\n") == old.replace(b" ", b"")


def test_an_unreadable_line_adds_nothing() -> None:
    got: list[QueuedUrl] = []
    referrers: list[str | None] = []
    cash: list[float | None] = []
    decode_line(
        b'["http://a.test/",[["http://b.test/t","b.test",2,1,0.5],["x"]]]', got, referrers, cash
    )
    assert (got, referrers, cash) == ([], [], [])
