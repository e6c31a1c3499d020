"""Percent-encoding normalisation shared by rule patterns and request paths.

RFC 9309 §2.2.2 compares rules and URIs octet by octet after one common
normalisation, which we apply to *both* sides:

* ``%XX`` escapes of **unreserved** characters (``A-Z a-z 0-9 - . _ ~``) are
  decoded (``%7E`` → ``~``, ``%41`` → ``A``);
* every other escape is kept, with its hex digits upper-cased (``%2f`` →
  ``%2F``): reserved characters such as ``/``, ``?`` or ``;`` stay distinct
  from their escaped spelling;
* octets outside printable ASCII (controls, space, DEL, and every byte of a
  non-ASCII character's UTF-8 form) are percent-encoded (``é`` → ``%C3%A9``);
* a ``%`` not followed by two hex digits is kept as a literal ``%``.

In a request path a literal ``*`` or ``$`` is encoded (``%2A``, ``%24``), so
that a rule can only match them through its own ``%2A``/``%24``; in a rule
pattern ``*`` is the wildcard and a final ``$`` the end anchor (a ``$``
anywhere else is a literal and becomes ``%24``).
"""

from __future__ import annotations

import re

__all__ = ["normalize_path", "normalize_pattern", "path_of"]

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPE = tuple(f"%{octet:02X}" for octet in range(256))
_CHAR = tuple(chr(octet) for octet in range(256))

# scheme://authority, to be dropped from an absolute URL.
_SCHEME_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*").match


def _normalize(text: str, *, literal: bytes) -> str:
    """Normalise ``text``; octets in ``literal`` are percent-encoded too."""
    data = text.encode("utf-8", "surrogatepass")
    out: list[str] = []
    append = out.append
    size = len(data)
    index = 0
    while index < size:
        octet = data[index]
        if octet == 0x25:
            if index + 2 < size and data[index + 1] in _HEX and data[index + 2] in _HEX:
                value = int(data[index + 1 : index + 3], 16)
                append(_CHAR[value] if value in _UNRESERVED else _ESCAPE[value])
                index += 3
                continue
            append("%")
        elif octet <= 0x20 or octet >= 0x7F or octet in literal:
            append(_ESCAPE[octet])
        else:
            append(_CHAR[octet])
        index += 1
    return "".join(out)


def normalize_path(path: str) -> str:
    """Normalise a request path (with its query) for matching; see the module doc."""
    if (
        path.isascii()
        and path.isprintable()
        and " " not in path
        and "%" not in path
        and "*" not in path
        and "$" not in path
    ):
        return path
    return _normalize(path, literal=b"*$")


def normalize_pattern(pattern: str) -> str:
    """Normalise a rule pattern; ``*`` stays a wildcard and a final ``$`` stays an anchor."""
    if (
        pattern.isascii()
        and pattern.isprintable()
        and " " not in pattern
        and "%" not in pattern
        and "$" not in pattern
    ):
        return pattern
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    return _normalize(body, literal=b"$") + ("$" if anchored else "")


def path_of(url: str) -> str:
    """The path and query of ``url`` (a full URL or a path), fragment dropped, not normalised.

    ``http://h`` gives ``/``; ``?q`` gives ``/?q``. A string starting with ``/``
    is always a path (``//x/y`` is the path ``//x/y``, not a host).
    """
    if not url.startswith("/"):
        found = _SCHEME_AUTHORITY(url)
        if found is not None:
            url = url[found.end() :]
    cut = url.find("#")
    if cut >= 0:
        url = url[:cut]
    if not url.startswith("/"):
        url = "/" + url
    return url
