"""Compiled rule patterns and the per-group matcher.

Matching is linear in the path length for every pattern: a pattern is split
on ``*`` into literal pieces, the first piece must be a prefix, every middle
piece is found greedily leftmost (correct for ``*``-only globs: taking the
earliest occurrence never hurts a later piece), and the last piece is either
found anywhere after them or, with a final ``$``, must end the path. There
is no regular expression and no backtracking, so a hostile pattern such as
``/*a*a*a*a*b`` costs a few ``str.find`` scans of the path, not an
exponential search.

Precedence (RFC 9309 §2.2.2): the matching rule with the most octets in its
normalised pattern (``*`` and ``$`` included) wins; on a tie ``allow`` wins.
Each rule carries ``key = 2 * octets + allow`` so the winner is the maximum.

A group's rules are indexed by their *literal prefix* (the text before the
first ``*``): rules whose prefix has at least two characters are bucketed by
that exact prefix, and per two-character head we keep the distinct prefix
lengths. A lookup slices the path at those few lengths instead of scanning
every rule; rules with a shorter prefix (``/``, ``/*...``, ``*...``) are
tried one by one, best first, until none can beat the current winner.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CompiledRule", "RuleMatcher", "compile_rule"]

_HEAD_CHARS = 3


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One ``allow``/``disallow`` rule ready for matching.

    ``pattern`` is the normalised pattern as written; ``prefix`` is its literal
    text before the first ``*``; ``middles`` the non-empty literal pieces
    between wildcards; ``last`` the piece after the last wildcard (``None``
    when the pattern has no wildcard); ``anchored`` whether it ends with ``$``.
    """

    pattern: str
    allow: bool
    key: int
    prefix: str
    middles: tuple[str, ...]
    last: str | None
    anchored: bool

    def matches_after_prefix(self, path: str) -> bool:
        """True if ``path`` matches, given that it already starts with ``prefix``."""
        if self.last is None:
            return not self.anchored or len(path) == len(self.prefix)
        position = len(self.prefix)
        for piece in self.middles:
            found = path.find(piece, position)
            if found < 0:
                return False
            position = found + len(piece)
        last = self.last
        if self.anchored:
            return len(path) - len(last) >= position and path.endswith(last)
        return not last or path.find(last, position) >= 0

    def matches(self, path: str) -> bool:
        """True if the normalised ``path`` matches this rule."""
        return path.startswith(self.prefix) and self.matches_after_prefix(path)


def compile_rule(pattern: str, *, allow: bool) -> CompiledRule | None:
    """Compile a normalised pattern; ``None`` if it can never match (empty, or not ``/``/``*``-led).

    ``/fish*`` is the same as ``/fish`` and ``/*`` the same as ``/`` (trailing
    wildcards are dropped, their octets still count for precedence); ``/a*$``
    is ``/a``; runs of ``*`` collapse to one.
    """
    if not pattern or pattern[0] not in "/*":
        return None
    key = 2 * len(pattern) + int(allow)
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if body.endswith("*"):
        anchored = False
        body = body.rstrip("*")
    pieces = body.split("*")
    if len(pieces) == 1:
        return CompiledRule(pattern, allow, key, body, (), None, anchored)
    middles = tuple(piece for piece in pieces[1:-1] if piece)
    return CompiledRule(pattern, allow, key, pieces[0], middles, pieces[-1], anchored)


class RuleMatcher:
    """The merged rules of one group, indexed for fast precedence lookup.

    Paths given to it are normalised and start with ``/``.
    """

    __slots__ = (
        "_buckets",
        "_contains",
        "_generic",
        "_lengths",
        "_suffix_lengths",
        "_suffixes",
        "rules",
    )

    def __init__(self, rules: list[CompiledRule]) -> None:
        self.rules: tuple[CompiledRule, ...] = tuple(rules)
        ordered = sorted(rules, key=lambda rule: rule.key, reverse=True)
        generic: list[CompiledRule] = []
        contains: list[tuple[int, int, str]] = []
        suffixes: dict[str, list[CompiledRule]] = {}
        buckets: dict[str, list[CompiledRule]] = {}
        lengths: dict[str, set[int]] = {}
        for rule in ordered:
            if len(rule.prefix) >= _HEAD_CHARS:
                buckets.setdefault(rule.prefix, []).append(rule)
                lengths.setdefault(rule.prefix[:_HEAD_CHARS], set()).add(len(rule.prefix))
            elif rule.prefix in ("", "/") and rule.last and not rule.middles:
                if rule.anchored:
                    suffixes.setdefault(rule.last, []).append(rule)
                else:
                    contains.append((rule.key, len(rule.prefix), rule.last))
            else:
                generic.append(rule)
        self._generic = tuple(generic)
        self._contains = tuple(contains)
        self._suffixes = {last: tuple(group) for last, group in suffixes.items()}
        self._suffix_lengths = tuple(sorted({len(last) for last in suffixes}, reverse=True))
        self._buckets = {prefix: tuple(group) for prefix, group in buckets.items()}
        self._lengths = {
            head: tuple(sorted(sizes, reverse=True)) for head, sizes in lengths.items()
        }

    def best_key(self, path: str) -> int:
        """The precedence key of the winning rule for a normalised path, or -1 if none matches."""
        best = -1
        size_of_path = len(path)
        sizes = self._lengths.get(path[:_HEAD_CHARS])
        if sizes is not None:
            buckets = self._buckets
            for size in sizes:
                if size > size_of_path:
                    continue
                candidates = buckets.get(path[:size])
                if candidates is None:
                    continue
                for rule in candidates:
                    if rule.key <= best:
                        break
                    if rule.last is None:
                        if not rule.anchored or size == size_of_path:
                            best = rule.key
                            break
                    elif rule.matches_after_prefix(path):
                        best = rule.key
                        break
        for key, offset, needle in self._contains:
            if key <= best:
                break
            if path.find(needle, offset) >= 0:
                best = key
                break
        if self._suffix_lengths:
            suffixes = self._suffixes
            for size in self._suffix_lengths:
                if size > size_of_path:
                    continue
                candidates = suffixes.get(path[-size:])
                if candidates is None:
                    continue
                for rule in candidates:
                    if rule.key <= best:
                        break
                    if size_of_path - size >= len(rule.prefix):
                        best = rule.key
                        break
        for rule in self._generic:
            if rule.key <= best:
                break
            if rule.matches(path):
                best = rule.key
                break
        return best

    def allowed(self, path: str) -> bool:
        """True unless the winning rule for a normalised path is a ``disallow``."""
        best = self.best_key(path)
        return best < 0 or bool(best & 1)
