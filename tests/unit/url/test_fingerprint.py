from __future__ import annotations

import subprocess
import sys

from xxhash import xxh3_64_intdigest

from courtly.url import canonicalize, url_fingerprint


def test_fingerprint_is_xxh3_64_of_utf8() -> None:
    for url in ["http://example.com/", "http://e.com/%C3%A9", "é"]:
        fingerprint = url_fingerprint(url)
        assert 0 <= fingerprint < 2**64
        assert fingerprint == xxh3_64_intdigest(url.encode("utf-8"))


def test_fingerprint_is_the_same_in_another_process() -> None:
    code = "from courtly.url import url_fingerprint; print(url_fingerprint('http://example.com/'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == url_fingerprint("http://example.com/")


def test_spellings_share_a_fingerprint_once_canonical() -> None:
    spellings = ["http://Example.COM:80/a#x", "http://example.com/./a?", "http://example.com/a"]
    assert len({url_fingerprint(canonicalize(url)) for url in spellings}) == 1
    assert url_fingerprint("http://example.com/a") != url_fingerprint("http://example.com/b")
