"""The exception tree.

::

    CourtlyError
    ├── InvalidURL            a string that cannot be a crawlable http(s) URL
    ├── ConfigError           a configuration that cannot be used (clear message for the CLI)
    ├── StateError            a state directory that is corrupt, foreign or from a newer version
    │   └── StateLocked       a state file another process (a running crawl) holds
    ├── CrawlFailed           a crawl that ran could not go on (a full disk, a failed partition)
    └── FetchError            a fetch that failed before a response (kind says why)
        └── BlockedAddress    the address guard refused the resolved IP
"""

from __future__ import annotations

__all__ = [
    "BlockedAddress",
    "ConfigError",
    "CourtlyError",
    "CrawlFailed",
    "FetchError",
    "InvalidURL",
    "StateError",
    "StateLocked",
    "sole_error",
]


class CourtlyError(Exception):
    """Base class of every error courtly raises on purpose."""


class InvalidURL(CourtlyError, ValueError):
    """The string is not a crawlable http(s) URL (bad syntax, bad host, too long)."""


class ConfigError(CourtlyError, ValueError):
    """A configuration value is unusable; the message says which and why."""


class StateError(CourtlyError):
    """A state directory is corrupt, foreign, or written by a newer courtly."""


class StateLocked(StateError):
    """The state file is locked by another process: a crawl is running on it."""


class CrawlFailed(CourtlyError):
    """A crawl that ran could not go on: its state or its archive could not be written (a
    full disk, an I/O error) or one of its partitions failed. Unlike the errors above it is
    not refused input: the commands exit 1 (``ExitCode.FAILED``), not 2. What the crawl
    committed before is kept, so the same command resumes it once the cause is gone."""


class FetchError(CourtlyError):
    """A fetch failed before an HTTP response arrived.

    ``kind`` is a short stable label used in counters: ``"dns"``, ``"connect"``,
    ``"timeout"``, ``"blocked"``, ``"protocol"``, ``"too_long_url"``, ``"lease_expired"``.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class BlockedAddress(FetchError):
    """The address guard refused to connect to a resolved IP (private, loopback, metadata...)."""

    def __init__(self, message: str) -> None:
        super().__init__("blocked", message)


def sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error to raise in place of ``group`` (what an :class:`asyncio.TaskGroup`
    raises, even for a single failure): its only error, else its first
    :class:`CourtlyError`, else its first :class:`OSError` (the errors the commands turn
    into a message and an exit code), else the group itself. Nested groups are searched
    depth first."""
    leaves = list(_leaves(group))
    if len(leaves) == 1:
        return leaves[0]
    for kind in (CourtlyError, OSError):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return group


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            found.extend(_leaves(error))
        else:
            found.append(error)
    return found
