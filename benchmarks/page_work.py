"""The least work an archiving crawler does for a page, for the bare loop's ``--work`` floor.

What every crawler that keeps what it fetched and follows links pays for a page, done
the cheapest correct way with the libraries courtly uses, and nothing more:

* **links**: the page parsed with Lexbor (``selectolax``), each ``<a href>`` joined to
  the page's URL (``yarl``), the new ones kept in a set (no canonical form, no scope,
  no priority, no trap guard);
* **archive**: a WARC response record (HTTP head and body, block and payload SHA-1)
  and its request record (block SHA-1), each one gzip member (ISA-L at courtly's
  default level 2), appended to one file with one unbuffered write;
* **store**: one SQLite row for the page and one for each new link, in WAL mode with
  ``synchronous = FULL`` (courtly's default), committed every 0.2 s.

No politeness, no robots.txt, no lease, no events, no redirects followed. Read
against the bare loop, it says what these three cost the machine; read against
courtly, what courtly spends beyond them (politeness, priority, robots.txt,
canonical URLs, dedup, traps, crash-safe leases, events).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import uuid
from pathlib import Path

from isal import isal_zlib
from selectolax.lexbor import LexborHTMLParser
from yarl import URL

GZIP_LEVEL = 2
"""courtly's default ``warc_gzip_level`` (ISA-L)."""
COMMIT_INTERVAL_S = 0.2
"""courtly's default commit interval."""
_GZIP_WBITS = 31


def _member(data: bytes) -> bytes:
    return isal_zlib.compress(data, GZIP_LEVEL, wbits=_GZIP_WBITS)


def _record(kind: str, url: str, block: bytes, digests: list[tuple[str, str]]) -> bytes:
    head = [
        "WARC/1.1",
        f"WARC-Type: {kind}",
        f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>",
        f"WARC-Date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"WARC-Target-URI: {url}",
        *(f"{name}: sha1:{value}" for name, value in digests),
        f"Content-Type: application/http; msgtype={kind}",
        f"Content-Length: {len(block)}",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


def _sha1(*parts: bytes) -> str:
    digest = hashlib.sha1()
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


class PageWork:
    """Links, archive and store for each page fetched (module doc); one per process."""

    def __init__(self, directory: Path, name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._warc = open(directory / f"{name}.warc.gz", "ab", buffering=0)  # noqa: SIM115
        self._db = sqlite3.connect(directory / f"{name}.sqlite3", isolation_level=None)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS pages (url TEXT PRIMARY KEY, status, size)")
        self._db.execute("CREATE TABLE IF NOT EXISTS found (url TEXT, referrer TEXT)")
        self._db.execute("BEGIN")
        self._last_commit = time.monotonic()
        self._seen: set[str] = set()
        self.links = 0

    def page(self, url: str, status: int, http_head: bytes, body: bytes) -> None:
        """Do a page's work (module doc) for the answer ``http_head`` + ``body``."""
        new = self._links(url, body) if status == 200 else []
        response = _record(
            "response",
            url,
            http_head + body,
            [("WARC-Payload-Digest", _sha1(body)), ("WARC-Block-Digest", _sha1(http_head, body))],
        )
        request_head = f"GET {URL(url).raw_path_qs} HTTP/1.1\r\n\r\n".encode()
        request = _record(
            "request", url, request_head, [("WARC-Block-Digest", _sha1(request_head))]
        )
        self._warc.write(_member(response) + _member(request))
        db = self._db
        db.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)", (url, status, len(body)))
        if new:
            db.executemany("INSERT INTO found VALUES (?, ?)", [(link, url) for link in new])
        now = time.monotonic()
        if now - self._last_commit >= COMMIT_INTERVAL_S:
            db.execute("COMMIT")
            db.execute("BEGIN")
            self._last_commit = now

    def _links(self, url: str, body: bytes) -> list[str]:
        base = URL(url)
        seen = self._seen
        new: list[str] = []
        for node in LexborHTMLParser(body).css("a"):
            href = node.attributes.get("href")
            if not href:
                continue
            self.links += 1
            try:
                link = str(base.join(URL(href)))
            except ValueError:
                continue
            if link not in seen:
                seen.add(link)
                new.append(link)
        return new

    def close(self) -> None:
        self._db.execute("COMMIT")
        self._db.close()
        self._warc.close()
        os.sync()
