from __future__ import annotations

import codecs

import pytest

from courtly.fetch import decode_text
from courtly.fetch.charset import DETECT_PREFIX_BYTES, SNIFF_PREFIX_BYTES

TEXT = "Grüße aus Köln – café, naïve, œuvre"


def test_header_charset_wins_over_markup() -> None:
    body = b'<meta charset="utf-8">' + TEXT.encode("cp1252", "replace")
    text, encoding = decode_text(body, "text/html; charset=windows-1252")
    assert encoding == "cp1252"
    assert TEXT in text


@pytest.mark.parametrize(
    "content_type",
    ["text/html;charset=UTF-8", 'text/html; charset="utf-8"', "text/html; Charset = utf8"],
)
def test_header_charset_spellings(content_type: str) -> None:
    assert decode_text(TEXT.encode(), content_type) == (TEXT, "utf-8")


def test_latin1_labels_decode_as_windows_1252() -> None:
    body = "“quoted” €5".encode("cp1252")
    text, encoding = decode_text(body, "text/html; charset=ISO-8859-1")
    assert encoding == "cp1252"
    assert text == "“quoted” €5"


@pytest.mark.parametrize(
    "head",
    [
        b'<html><head><meta charset="koi8-r">',
        b"<html><head><META CHARSET=koi8-r>",
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r">',
        b'<?xml version="1.0" encoding="KOI8-R"?><feed>',
    ],
)
def test_markup_declares_the_charset(head: bytes) -> None:
    russian = "Привет, мир"
    text, encoding = decode_text(head + russian.encode("koi8-r"), "text/html")
    assert codecs.lookup(encoding).name == "koi8-r"
    assert russian in text


def test_markup_beyond_the_sniff_prefix_is_ignored() -> None:
    body = b" " * SNIFF_PREFIX_BYTES + b'<meta charset="koi8-r">' + b"plain"
    assert decode_text(body, None)[1] == "utf-8"


def test_meta_utf16_means_utf8() -> None:
    body = b'<meta charset="utf-16">' + TEXT.encode()
    assert decode_text(body, None) == (body.decode(), "utf-8")


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
)
def test_byte_order_mark_wins_over_everything(bom: bytes, codec: str) -> None:
    text, _ = decode_text(bom + TEXT.encode(codec), "text/html; charset=iso-8859-2")
    assert text.lstrip("\ufeff") == TEXT


def test_valid_utf8_without_declaration_is_utf8() -> None:
    assert decode_text(TEXT.encode(), None) == (TEXT, "utf-8")
    assert decode_text(b"", None) == ("", "utf-8")


def test_undeclared_legacy_text_is_detected() -> None:
    russian = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 20
    text, encoding = decode_text(russian.encode("cp1251"), None)
    assert text == russian
    assert encoding == "cp1251"


def test_detection_only_reads_a_bounded_prefix() -> None:
    russian = "Съешь же ещё этих мягких французских булок, да выпей чаю. "
    body = russian.encode("cp1251") * (4 * DETECT_PREFIX_BYTES // len(russian))
    text, encoding = decode_text(body, None)
    assert encoding == "cp1251"
    assert len(text) == len(body)  # the whole body is decoded, not just the prefix


def test_unknown_label_falls_through_and_never_raises() -> None:
    text, encoding = decode_text(b"abc \xff\xfe\xfd", "text/html; charset=no-such-charset")
    assert isinstance(text, str)
    assert codecs.lookup(encoding)
