"""Small URL helpers for the sandbox: split, normalise and spell sandbox URLs.

The sandbox has its own few lines here (rather than the crawler's canonicaliser)
so that the ground truth and the auditor do not depend on the code they judge.
Only what the sandbox emits needs handling: ``http`` URLs on one port.
"""

from __future__ import annotations

import re

__all__ = ["host_url", "normalise_path", "registered_domain", "split_url"]

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _fix_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _remove_dot_segments(path: str) -> str:
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def normalise_path(path_qs: str) -> str:
    """``path?query`` with dot segments removed, unreserved escapes decoded, others upper-cased.

    The fragment (if any) is dropped, an empty path becomes ``/`` and an empty
    query (a bare ``?``) is dropped.
    """
    path_qs = path_qs.split("#", 1)[0]
    path, sep, query = path_qs.partition("?")
    path = _ESCAPE.sub(_fix_escape, path) if "%" in path else path
    if "." in path:
        path = _remove_dot_segments(path)
    if not path.startswith("/"):
        path = "/" + path
    if "%" in query:
        query = _ESCAPE.sub(_fix_escape, query)
    return f"{path}?{query}" if sep and query else path


def host_url(host: str, port: int, path_qs: str = "/") -> str:
    """The canonical spelling ``http://host[:port]/path`` (``:80`` omitted)."""
    authority = host if port == 80 else f"{host}:{port}"
    return f"http://{authority}{path_qs}"


def split_url(url: str) -> tuple[str, int, str]:
    """``(host, port, normalised path?query)`` of an ``http`` URL; host lower-cased.

    Raises ``ValueError`` for anything but ``http://``.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError(f"not an http URL: {url!r}")
    rest = rest.split("#", 1)[0]
    cut = len(rest)
    for mark in "/?":
        pos = rest.find(mark)
        if 0 <= pos < cut:
            cut = pos
    authority, path_qs = rest[:cut], rest[cut:]
    authority = authority.rpartition("@")[2]
    host, colon, port_text = authority.partition(":")
    port = int(port_text) if colon and port_text else 80
    return host.lower().rstrip("."), port, normalise_path(path_qs or "/")


def registered_domain(host: str) -> str:
    """The sandbox's notion of a registered domain: the last two labels (``site2.test``)."""
    labels = host.split(".")
    return ".".join(labels[-2:])
