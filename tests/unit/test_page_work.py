"""The floor's page work (``benchmarks/page_work.py``) does what it says: WARC records an
independent reader accepts, with digests that match, the page's new links, its rows."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from page_work import PageWork  # noqa: E402

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
PAGE = (
    b"<html><body><a href='/a'>a</a> <a href='b?x=1'>b</a> <a href='/a'>again</a>"
    b"<a href='http://other.test/'>o</a><a>no href</a></body></html>"
)


def test_a_page_is_archived_linked_and_stored(tmp_path: Path) -> None:
    work = PageWork(tmp_path, "p0")
    work.page("http://a.test/dir/page", 200, HEAD, PAGE)
    work.page("http://a.test/dir/b?x=1", 200, HEAD, PAGE)  # links seen before: none new
    work.close()

    with (tmp_path / "p0.warc.gz").open("rb") as f:
        records = [
            (r.rec_type, r.rec_headers, r.content_stream().read())
            for r in ArchiveIterator(f, check_digests="raise")
        ]
    assert [kind for kind, _, _ in records] == ["response", "request"] * 2
    _, headers, block = records[0]
    assert headers.get_header("WARC-Target-URI") == "http://a.test/dir/page"
    payload = hashlib.sha1(PAGE).digest()
    assert headers.get_header("WARC-Payload-Digest") == "sha1:" + payload.hex()
    assert block == PAGE  # warcio hands the payload after the HTTP head

    assert work.links == 8  # four hrefs a page, twice
    db = sqlite3.connect(tmp_path / "p0.sqlite3")
    found = [row[0] for row in db.execute("SELECT url FROM found ORDER BY rowid")]
    pages = db.execute("SELECT count(*) FROM pages").fetchone()[0]
    db.close()
    assert found == ["http://a.test/a", "http://a.test/dir/b?x=1", "http://other.test/"]
    assert pages == 2
