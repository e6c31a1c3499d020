from __future__ import annotations

from courtly.parse import charset_of, is_html, media_type_of


def test_header_decides_when_definite() -> None:
    assert is_html("text/html", b"%PDF-1.7")
    assert is_html("TEXT/HTML; charset=UTF-8", b"")
    assert is_html("application/xhtml+xml", b"<?xml?>")
    assert not is_html("text/plain", b"<html><body>hi</body></html>")
    assert not is_html("application/pdf", b"<html>")
    assert not is_html("image/png", b"\x89PNG")


def test_body_is_sniffed_when_the_header_says_nothing() -> None:
    assert is_html(None, b"  \n<!DOCTYPE html><html>")
    assert is_html("", b"\xef\xbb\xbf<html lang=en>")
    assert is_html("application/octet-stream", b"<HEAD><title>x")
    assert is_html(None, b"<!-- comment -->")
    assert is_html(None, b"<p>")
    assert not is_html(None, b"<?xml version='1.0'?><urlset/>")
    assert not is_html(None, b"%PDF-1.4")
    assert not is_html(None, b"<pre>")  # not an HTML opener in the sniffing table
    assert not is_html(None, b"")


def test_media_type_and_charset() -> None:
    assert media_type_of(" Text/HTML ; charset=x") == "text/html"
    assert media_type_of(None) == ""
    assert charset_of('text/html; Charset="Shift_JIS"') == "shift_jis"
    assert charset_of("text/html") is None
    assert charset_of("text/html; charset=") is None
    assert charset_of(None) is None
