from __future__ import annotations

import gzip
import time
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.parse import Sitemap, SitemapUrl, parse_sitemap

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc> http://a.test/one?x=1&amp;y=2 </loc>
    <lastmod>2024-05-01T10:00:00+00:00</lastmod>
    <changefreq>Daily</changefreq>
    <priority>0.8</priority>
    <image:image><image:loc>http://img.test/ignored.png</image:loc></image:image>
  </url>
  <url><loc>http://a.test/two</loc><priority>7</priority><changefreq>often</changefreq></url>
  <url><loc>ftp://a.test/not-http</loc></url>
  <url><loc>/relative</loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>
"""


def test_urlset_fields_and_validation() -> None:
    sitemap = parse_sitemap(URLSET)
    assert sitemap == Sitemap(
        urls=(
            SitemapUrl(
                loc="http://a.test/one?x=1&y=2",
                lastmod="2024-05-01T10:00:00+00:00",
                changefreq="daily",
                priority=0.8,
            ),
            SitemapUrl(loc="http://a.test/two"),
        ),
        kind="urlset",
    )


def test_sitemap_index() -> None:
    body = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>http://a.test/s1.xml</loc><lastmod>2024-01-01</lastmod></sitemap>
      <sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>"""
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "sitemapindex"
    assert sitemap.sitemaps == ("http://a.test/s1.xml", "http://a.test/s2.xml.gz")
    assert sitemap.urls == () and sitemap.error is None


def test_namespaces_are_ignored() -> None:
    prefixed = b"""<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:url><sm:loc>http://a.test/p</sm:loc></sm:url></sm:urlset>"""
    no_namespace = b"<urlset><url><loc>http://a.test/p</loc></url></urlset>"
    undeclared = b"<urlset><url><loc>http://a.test/p</loc><video:x>1</video:x></url></urlset>"
    for body in (prefixed, no_namespace, undeclared):
        sitemap = parse_sitemap(body)
        assert [u.loc for u in sitemap.urls] == ["http://a.test/p"], body
        assert sitemap.error is None, body


def test_gzip_is_detected_by_magic_number_including_concatenated_members() -> None:
    body = gzip.compress(URLSET[:200]) + gzip.compress(URLSET[200:])
    assert parse_sitemap(body).urls == parse_sitemap(URLSET).urls


def test_plain_text_sitemap() -> None:
    body = b"\xef\xbb\xbfhttp://a.test/1\r\n  https://a.test/2  \n\nnot a url\nftp://x\nhttp://a.test/3"
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "text"
    assert [u.loc for u in sitemap.urls] == [
        "http://a.test/1",
        "https://a.test/2",
        "http://a.test/3",
    ]
    assert parse_sitemap(gzip.compress(body)).urls == sitemap.urls


def test_feeds_are_sitemaps_too() -> None:
    rss = b"""<rss version="2.0"><channel><link>http://a.test/</link>
      <item><title>t</title><link>http://a.test/post1</link></item></channel></rss>"""
    atom = b"""<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://a.test/"/>
      <entry><link rel="self" href="http://a.test/self"/><link href="http://a.test/e1"/></entry>
      </feed>"""
    assert [u.loc for u in parse_sitemap(rss).urls] == ["http://a.test/post1"]
    assert [u.loc for u in parse_sitemap(atom).urls] == ["http://a.test/e1"]


def test_malformed_xml_keeps_what_came_before_and_reports() -> None:
    body = b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc></ur"
    sitemap = parse_sitemap(body)
    assert [u.loc for u in sitemap.urls] == ["http://a.test/1"]
    assert sitemap.error is not None and "malformed" in sitemap.error


def test_not_a_sitemap() -> None:
    html = parse_sitemap(b"<html><body><a href='http://a.test/'>x</a></body></html>")
    assert html.urls == () and html.error is not None
    empty = parse_sitemap(b"   \n")
    assert empty.urls == () and empty.error == "empty sitemap"


def test_entity_declarations_and_dtds_are_refused() -> None:
    billion_laughs = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<urlset><url><loc>http://a.test/&lol3;</loc></url></urlset>"""
    xxe = b"""<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>http://a.test/&x;</loc></url></urlset>"""
    external_dtd = b"""<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "http://evil.test/x.dtd">
<urlset><url><loc>http://a.test/</loc></url></urlset>"""
    for body in (billion_laughs, xxe, external_dtd):
        sitemap = parse_sitemap(body)
        assert sitemap.urls == ()
        assert sitemap.error == "DTD not allowed"
    undefined = parse_sitemap(b"<urlset><url><loc>http://a.test/&x;</loc></url></urlset>")
    assert undefined.urls == () and undefined.error is not None


def test_gzip_bomb_is_bounded() -> None:
    # ~100 MiB of zeros compresses to ~100 KB; only max_bytes are ever inflated
    inflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\n" * (1 << 20)
    bomb = b"".join(inflater.compress(chunk) for _ in range(100)) + inflater.flush()
    assert len(bomb) < 200_000
    started = time.perf_counter()
    sitemap = parse_sitemap(bomb, max_bytes=2 << 20)
    assert sitemap.truncated
    assert time.perf_counter() - started < 2.0


def test_size_limit_on_plain_input() -> None:
    body = b"".join(b"http://a.test/%d\n" % i for i in range(1000))
    sitemap = parse_sitemap(body, max_bytes=100)
    assert sitemap.truncated and 0 < len(sitemap.urls) < 10


def test_url_limit() -> None:
    entries = b"".join(b"<url><loc>http://a.test/%d</loc></url>" % i for i in range(50))
    sitemap = parse_sitemap(b"<urlset>" + entries + b"</urlset>", max_urls=10)
    assert len(sitemap.urls) == 10 and sitemap.truncated
    text = parse_sitemap(b"".join(b"http://a.test/%d\n" % i for i in range(50)), max_urls=10)
    assert len(text.urls) == 10 and text.truncated
    exact = parse_sitemap(b"".join(b"http://a.test/%d\n" % i for i in range(10)), max_urls=10)
    assert len(exact.urls) == 10 and not exact.truncated


def test_truncated_gzip_keeps_the_readable_part() -> None:
    entries = b"".join(b"<url><loc>http://a.test/%d</loc></url>" % i for i in range(2000))
    body = gzip.compress(b"<urlset>" + entries + b"</urlset>")
    sitemap = parse_sitemap(body[: len(body) // 2])
    assert 0 < len(sitemap.urls) < 2000
    assert sitemap.error is not None


def test_overlong_locs_are_skipped() -> None:
    long_loc = b"http://a.test/" + b"x" * 3000
    body = (
        b"<urlset><url><loc>"
        + long_loc
        + b"</loc></url><url><loc>http://a.test/ok</loc></url></urlset>"
    )
    assert [u.loc for u in parse_sitemap(body).urls] == ["http://a.test/ok"]
    text = parse_sitemap(long_loc * 10 + b"\nhttp://a.test/ok\n")
    assert [u.loc for u in text.urls] == ["http://a.test/ok"]


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=3000), gz=st.booleans())
def test_arbitrary_bytes_never_raise(body: bytes, gz: bool) -> None:
    sitemap = parse_sitemap(gzip.compress(body) if gz else body, max_bytes=4096, max_urls=50)
    assert len(sitemap.urls) + len(sitemap.sitemaps) <= 50


_PIECES = st.sampled_from(
    [
        "<urlset>",
        "</urlset>",
        "<url>",
        "</url>",
        "<loc>",
        "</loc>",
        "http://a.test/",
        "<sitemapindex>",
        "<sitemap>",
        "&amp;",
        "&x;",
        "<!DOCTYPE x>",
        "<![CDATA[",
        "]]>",
        "<priority>",
        "0.5",
        "</priority>",
        "\n",
        "\x00",
        "<?xml version='1.0' encoding='latin-1'?>",
        "<?xml version='1.0' encoding='bogus'?>",
    ]
)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_PIECES, max_size=30))
def test_sitemap_shaped_noise_never_raises(parts: list[str]) -> None:
    sitemap = parse_sitemap("".join(parts).encode())
    assert all(u.loc.startswith(("http://", "https://")) for u in sitemap.urls)
