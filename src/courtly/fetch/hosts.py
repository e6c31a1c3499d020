"""``/etc/hosts``-format files: names that bypass DNS (``--hosts-file PATH``)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from courtly.errors import ConfigError, InvalidURL
from courtly.url.canonical import canonicalize
from courtly.url.host import hostname_of
from courtly.write_failure import os_error_text

__all__ = ["check_hosts_file", "load_hosts_file", "normalise_host_name", "parse_hosts_text"]


def normalise_host_name(name: str) -> str:
    """The form host names are keyed by: the host as a URL spells it on the wire, lower
    case, without a trailing dot. A name in another script is IDNA-encoded as URLs are
    (UTS 46: ``Bücher.test`` is ``xn--bcher-kva.test``); one that cannot be encoded is only
    lower-cased (no URL can name it, so it never matches)."""
    if not name.isascii():
        encoded = _idna_name(name)
        if encoded is not None:
            return encoded
    return name.rstrip(".").lower()


def _idna_name(name: str) -> str | None:
    """``name`` IDNA-encoded as the host of an http URL, or ``None`` if no URL can have it."""
    try:
        return hostname_of(canonicalize(f"http://{name}/"))
    except InvalidURL:
        return None


def parse_hosts_text(text: str, skipped: list[str] | None = None) -> dict[str, list[str]]:
    """Parse hosts-file text into ``{name: [address, ...]}``.

    Each line is ``ADDRESS NAME [NAME...]``; ``#`` starts a comment; blank lines
    and lines whose first field is not an IPv4/IPv6 address are skipped (each of the
    latter, and a line with an address alone, is said in ``skipped`` if given:
    ``line N: why``). Names are normalised (:func:`normalise_host_name`); a name in another
    script is IDNA-encoded as in URLs (``bücher.test`` is ``xn--bcher-kva.test``, the
    host the crawler looks up), and one that cannot be is skipped and said. A name on
    several lines gets every address, in file order, without duplicates. Addresses are
    kept in canonical text form (``::1``, not ``0:0:0:0:0:0:0:1``).
    """
    table: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        try:
            address = str(ipaddress.ip_address(fields[0]))
        except ValueError:
            if skipped is not None:
                skipped.append(f"line {number}: {fields[0]!r} is not an IP address")
            continue
        if len(fields) < 2:
            if skipped is not None:
                skipped.append(f"line {number}: an address without a name")
            continue
        for name in fields[1:]:
            key = normalise_host_name(name) if name.isascii() else _idna_name(name)
            if key is None:
                if skipped is not None:
                    skipped.append(f"line {number}: {name!r} is not a valid host name")
                continue
            if not key:
                continue
            addresses = table.setdefault(key, [])
            if address not in addresses:
                addresses.append(address)
    return table


def load_hosts_file(path: Path | str, skipped: list[str] | None = None) -> dict[str, list[str]]:
    """Read an ``/etc/hosts``-format file; see :func:`parse_hosts_text` (and ``skipped``).

    Raises ``OSError`` when the file cannot be read. A leading byte order mark is
    dropped (else the first entry's address would not parse). Bytes that are not UTF-8
    are replaced (they can only occur in comments or in names nobody can ask for).
    """
    text = Path(path).read_text(encoding="utf-8-sig", errors="replace")
    return parse_hosts_text(text, skipped)


def check_hosts_file(path: Path | str) -> list[str]:
    """Read and parse ``path`` as the crawl will (:func:`load_hosts_file`): the lines it
    skips, in words (``line N: why``), for a warning; :class:`ConfigError` if it cannot
    be read. A typo there is a name resolved by DNS instead, so it is worth saying."""
    skipped: list[str] = []
    try:
        load_hosts_file(path, skipped)
    except OSError as error:
        raise ConfigError(os_error_text(error, f"--hosts-file {path}")) from None
    return skipped
