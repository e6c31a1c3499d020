"""Near-duplicates by construction: the pairs the SimHash threshold is calibrated on.

* :func:`sandbox_texts` — the main texts (:func:`courtly.parse.main_text.main_text`) of a
  sandbox web's content pages, the *distinct* pages. Their prose is a window of one
  seeded filler at an offset set by the page's title, so two pages' windows may overlap
  (a short page inside a long one, two pages sharing a passage): such a pair shares text
  without being one page, and :func:`resemblance` says how much.
* :func:`variant` — a near-duplicate of a text by construction, one of
  :data:`VARIANT_KINDS`: what changes between two fetches of one page, or between a
  page and its copy elsewhere, while it stays the same page (a counter or date, one
  sentence more or less, a few words edited).
* :func:`resemblance` — the Jaccard similarity of two texts' 5-word shingle sets (with
  the sandbox's 37-word vocabulary, shorter shingles collide by chance).

Everything is a pure function of its arguments and a seed.
"""

from __future__ import annotations

import random
import re

from courtly.parse.main_text import main_text
from courtly.sandbox.resources import Page
from courtly.sandbox.spec import SandboxSpec
from courtly.sandbox.world import SandboxWorld

__all__ = ["VARIANT_KINDS", "resemblance", "sandbox_texts", "variant"]

VARIANT_KINDS = (
    "counter",  # one word replaced: a visit counter, a date
    "sentence_added",  # one sentence inserted at a random place
    "sentence_removed",  # one sentence taken out
    "words_1pct",  # 1% of the words replaced (at least one)
    "words_2pct",  # 2% of the words replaced
    "words_5pct",  # 5%: an edited page, looser than a near-duplicate
)
_SENTENCE = re.compile(r"[^.]+\.\s*")


def sandbox_texts(spec: SandboxSpec, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` (URL, main text) pairs of ``spec``'s content pages, host by host."""
    world = SandboxWorld(spec, 8080)
    out: list[tuple[str, str]] = []
    for index in range(spec.pages_per_host):
        for profile in world.hosts:
            if profile.dead or profile.pages <= index:
                continue
            path = f"/p/{index}.html"
            resource = world.resolve(profile.name, path)
            if not isinstance(resource, Page):
                continue  # not a content page on this host (a redirect, a special page)
            text = main_text(world.render(resource))
            if text:
                out.append((world.url(profile.name, path), text))
                if len(out) >= limit:
                    return out
    return out


def variant(text: str, kind: str, seed: int) -> str:
    """A near-duplicate of ``text`` of ``kind`` (:data:`VARIANT_KINDS`), seeded."""
    rng = random.Random(f"{seed}|{kind}")
    words = text.split()
    if kind == "counter" or kind.startswith("words_"):
        share = {"counter": 0.0, "words_1pct": 0.01, "words_2pct": 0.02, "words_5pct": 0.05}[kind]
        count = max(1, round(len(words) * share))
        for position in rng.sample(range(len(words)), min(count, len(words))):
            words[position] = f"edit{rng.randrange(10**6)}"
        return " ".join(words)
    sentences = _SENTENCE.findall(text) or [text]
    if kind == "sentence_added":
        new = " ".join(f"added{rng.randrange(10**6)}" for _ in range(rng.randint(6, 18))) + ". "
        sentences.insert(rng.randrange(len(sentences) + 1), new)
    elif kind == "sentence_removed":
        if len(sentences) > 1:
            del sentences[rng.randrange(len(sentences))]
    else:
        raise ValueError(f"unknown variant kind {kind!r}")
    return " ".join("".join(sentences).split())


def _shingles(text: str, size: int = 5) -> set[str]:
    words = text.lower().split()
    return {" ".join(words[i : i + size]) for i in range(max(1, len(words) - size + 1))}


def resemblance(a: str, b: str) -> float:
    """Jaccard similarity of ``a``'s and ``b``'s 5-word shingle sets (0..1)."""
    left, right = _shingles(a), _shingles(b)
    union = len(left | right)
    return len(left & right) / union if union else 1.0
