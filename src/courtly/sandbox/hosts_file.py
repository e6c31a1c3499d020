"""Hosts files in ``/etc/hosts`` format: ``127.0.0.7 shop3.site2.test``, one name a line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["format_hosts_file", "parse_hosts_file", "write_hosts_file"]


def format_hosts_file(addresses: Mapping[str, str], *, comment: str = "") -> str:
    """The text of a hosts file mapping each name to its address, in the mapping's order."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines.extend(f"{ip} {name}" for name, ip in addresses.items())
    return "\n".join(lines) + "\n"


def parse_hosts_file(text: str) -> dict[str, str]:
    """Name -> address from hosts-file text (comments and blank lines ignored; first entry wins)."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        ip, *names = line.split()
        for name in names:
            result.setdefault(name.lower(), ip)
    return result


def write_hosts_file(path: Path, addresses: Mapping[str, str], *, comment: str = "") -> Path:
    """Write :func:`format_hosts_file` output to ``path`` (atomically) and return ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(format_hosts_file(addresses, comment=comment), encoding="utf-8")
    tmp.replace(path)
    return path
