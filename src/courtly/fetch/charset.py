"""Decode a fetched body to text: the charset from headers, markup, or detection."""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

__all__ = ["DETECT_PREFIX_BYTES", "SNIFF_PREFIX_BYTES", "decode_text"]

SNIFF_PREFIX_BYTES = 4096
"""How far into the body ``<meta charset>`` and the XML declaration are looked for."""
DETECT_PREFIX_BYTES = 32 * 1024
"""How much of the body statistical detection looks at (it is slow: bounded for speed)."""

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

_META = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([a-z0-9_:.+-]+)""", re.IGNORECASE)
_XML_DECL = re.compile(rb"""^\s*<\?xml\s[^>]*?encoding\s*=\s*["']([a-z0-9_:.+-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([a-z0-9_:.+-]+)""", re.IGNORECASE)

# Labels browsers decode with a superset (WHATWG Encoding Standard), by Python codec name.
_SUPERSETS = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
}


def _codec_name(label: str | bytes) -> str | None:
    """The Python codec for a charset label (browser supersets applied), or ``None``."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    try:
        name = codecs.lookup(label.strip().lower()).name
    except LookupError:
        return None
    return _SUPERSETS.get(name, name)


def _from_markup(prefix: bytes) -> str | None:
    match = _XML_DECL.match(prefix) or _META.search(prefix)
    if match is None:
        return None
    name = _codec_name(match.group(1))
    if name is not None and name.startswith("utf-16"):
        # The markup was readable as ASCII, so it cannot really be UTF-16 (WHATWG).
        return "utf-8"
    return name


def decode_text(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode ``body``; return ``(text, encoding)`` with ``encoding`` a Python codec name.

    The encoding is the first of: a byte-order mark; the ``charset`` parameter of
    ``content_type``; ``<meta charset>`` / ``http-equiv`` or an XML declaration in
    the first :data:`SNIFF_PREFIX_BYTES`; UTF-8 if the whole body is valid UTF-8;
    statistical detection on the first :data:`DETECT_PREFIX_BYTES`; UTF-8. Labels are
    read as browsers do (``iso-8859-1`` decodes as ``cp1252``). Undecodable bytes
    become U+FFFD, so this never raises.
    """
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body.decode(bom_codec, "replace"), bom_codec
    name: str | None = None
    if content_type:
        match = _HEADER_CHARSET.search(content_type)
        if match is not None:
            name = _codec_name(match.group(1))
    if name is None:
        name = _from_markup(body[:SNIFF_PREFIX_BYTES])
    if name is not None:
        return body.decode(name, "replace"), name
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    best = from_bytes(body[:DETECT_PREFIX_BYTES]).best()
    if best is not None:
        detected = _codec_name(best.encoding)
        if detected is not None:
            return body.decode(detected, "replace"), detected
    return body.decode("utf-8", "replace"), "utf-8"
