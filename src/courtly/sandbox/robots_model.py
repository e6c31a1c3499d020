"""The robots.txt rules the sandbox emits, as a model it can evaluate itself.

Ground truth is computed from this model, never by re-parsing the text: the
text is rendered *from* the model. Matching follows RFC 9309 for what the model
can express: the longest matching pattern wins, allow wins a tie, ``*`` matches
any run of octets and a trailing ``$`` anchors the end; the group for a product
token is the merge of every group naming it, else of every ``*`` group.
"""

from __future__ import annotations

from dataclasses import dataclass

from courtly.sandbox.urls import normalise_path

__all__ = ["RobotsGroup", "RobotsModel", "RobotsRule", "pattern_matches"]


def pattern_matches(pattern: str, path: str) -> bool:
    """Whether a robots ``pattern`` (with ``*`` and a trailing ``$``) matches ``path``.

    Linear in ``len(path) * pieces``: the first piece is a prefix, middle pieces
    are found leftmost, and an anchored last piece must be a suffix placed
    after the others.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    pieces = pattern.split("*")
    first = pieces[0]
    if not path.startswith(first):
        return False
    pos = len(first)
    if len(pieces) == 1:
        return not anchored or pos == len(path)
    middle, last = pieces[1:-1], pieces[-1]
    for piece in middle:
        found = path.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    if anchored:
        return path.endswith(last) and len(path) - len(last) >= pos
    return path.find(last, pos) >= 0


@dataclass(frozen=True, slots=True)
class RobotsRule:
    """One ``Allow`` or ``Disallow`` line."""

    allow: bool
    pattern: str

    def line(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"


@dataclass(frozen=True, slots=True)
class RobotsGroup:
    """A group: its user-agent lines, its rules and an optional Crawl-delay (seconds)."""

    agents: tuple[str, ...]
    rules: tuple[RobotsRule, ...] = ()
    crawl_delay_s: float | None = None


@dataclass(frozen=True, slots=True)
class RobotsModel:
    """A whole robots.txt: groups plus Sitemap lines (absolute URLs)."""

    groups: tuple[RobotsGroup, ...] = ()
    sitemaps: tuple[str, ...] = ()

    def render(self) -> str:
        """The robots.txt text for this model (UTF-8, LF line ends)."""
        lines = ["# courtly sandbox robots.txt"]
        for group in self.groups:
            if not group.rules:
                raise ValueError("a group without rules would merge with the next one")
            lines.extend(f"User-agent: {agent}" for agent in group.agents)
            lines.extend(rule.line() for rule in group.rules)
            if group.crawl_delay_s is not None:
                lines.append(f"Crawl-delay: {_number(group.crawl_delay_s)}")
            lines.append("")
        lines.extend(f"Sitemap: {url}" for url in self.sitemaps)
        return "\n".join(lines) + "\n"

    def groups_for(self, token: str) -> tuple[RobotsGroup, ...]:
        """The groups that apply to product ``token`` (case-insensitive), else the ``*`` groups."""
        wanted = token.lower()
        named = tuple(g for g in self.groups if any(a.lower() == wanted for a in g.agents))
        if named:
            return named
        return tuple(g for g in self.groups if "*" in g.agents)

    def allowed(self, path_qs: str, token: str) -> bool:
        """Whether ``token`` may fetch ``path_qs`` under this model."""
        path = normalise_path(path_qs)
        if path == "/robots.txt":
            return True
        best_len = -1
        best_allow = True
        for group in self.groups_for(token):
            for rule in group.rules:
                if not rule.pattern or not pattern_matches(rule.pattern, path):
                    continue
                size = len(rule.pattern)
                if size > best_len or (size == best_len and rule.allow):
                    best_len, best_allow = size, rule.allow
        return best_allow

    def crawl_delay_s(self, token: str) -> float:
        """The largest Crawl-delay among the groups for ``token``; 0.0 when none."""
        delays = [g.crawl_delay_s for g in self.groups_for(token) if g.crawl_delay_s is not None]
        return max(delays, default=0.0)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"
