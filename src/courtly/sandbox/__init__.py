"""A deterministic synthetic web on loopback, for the demo, tests and benchmarks.

:class:`SandboxServer` serves a :class:`SandboxSpec` on many 127.x addresses and
logs every request; :class:`SandboxTruth` says what a polite crawler may and
should fetch; :func:`audit` judges a crawl from the request log.
"""

from __future__ import annotations

from courtly.sandbox.audit import AuditFinding, AuditReport, audit
from courtly.sandbox.hosts_file import format_hosts_file, parse_hosts_file, write_hosts_file
from courtly.sandbox.lateness import Lateness, lateness, lateness_summary
from courtly.sandbox.layout import HostProfile, Layout, build_layout
from courtly.sandbox.request_log import RequestLogWriter, RequestRecord, load_log
from courtly.sandbox.resources import (
    BigPage,
    Document,
    GzipBomb,
    Hang,
    Link,
    Page,
    Redirect,
    Resource,
)
from courtly.sandbox.robots_model import RobotsGroup, RobotsModel, RobotsRule
from courtly.sandbox.server import SandboxServer, make_gzip_bomb
from courtly.sandbox.spec import ROBOTS_VARIANTS, SandboxSpec
from courtly.sandbox.truth import SandboxTruth, Scope
from courtly.sandbox.world import SandboxWorld

__all__ = [
    "ROBOTS_VARIANTS",
    "AuditFinding",
    "AuditReport",
    "BigPage",
    "Document",
    "GzipBomb",
    "Hang",
    "HostProfile",
    "Lateness",
    "Layout",
    "Link",
    "Page",
    "Redirect",
    "RequestLogWriter",
    "RequestRecord",
    "Resource",
    "RobotsGroup",
    "RobotsModel",
    "RobotsRule",
    "SandboxServer",
    "SandboxSpec",
    "SandboxTruth",
    "SandboxWorld",
    "Scope",
    "audit",
    "build_layout",
    "format_hosts_file",
    "lateness",
    "lateness_summary",
    "load_log",
    "make_gzip_bomb",
    "parse_hosts_file",
    "write_hosts_file",
]
