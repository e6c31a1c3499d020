"""robots.txt matching throughput: courtly.robots against protego, side by side.

Usage::

    .venv/bin/python benchmarks/robots.py          # a short table
    .venv/bin/python benchmarks/robots.py --json   # one JSON object

``allowed_per_s`` is the median of 5 runs of ``allowed()`` over a fixed mix
of allowed and disallowed URLs against a generated 300-rule robots.txt
(several bot groups, a large ``*`` group, plain prefixes, ``*`` and ``$``
patterns, escapes). ``protego_allowed_per_s`` is ``Protego.can_fetch`` on the
same file and URLs in the same process. ``hostile_pattern_us`` is one
``allowed()`` of the pattern ``/*a*a*a*a*a*a*a*b`` against a 10 KB path of
``a``. ``disagreements_vs_protego`` counts the distinct URLs of the mix on
which the two disagree: protego weighs a rule's ``?`` as three octets (it
compares ``%3F``), RFC 9309 and courtly as one (see docs/robots.md).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

from protego import Protego

from courtly.robots import parse

_USER_AGENT = "courtly/0.1 (+https://example.org/bot)"
_RUNS = 5
_SECTIONS = (
    "wiki",
    "w",
    "api",
    "search",
    "user",
    "account",
    "cart",
    "checkout",
    "tag",
    "category",
    "archive",
    "blog",
    "news",
    "products",
    "static",
    "media",
    "admin",
    "login",
    "export",
    "print",
)
_WORDS = (
    "special",
    "talk",
    "edit",
    "history",
    "random",
    "feed",
    "compare",
    "preview",
    "share",
    "download",
    "private",
    "draft",
    "report",
    "index",
    "page",
    "item",
    "sort",
    "filter",
    "lang",
    "session",
)


def realistic_robots(rules_wanted: int = 300, seed: int = 7) -> str:
    """A deterministic robots.txt with ``rules_wanted`` rules in a realistic mix."""
    rng = random.Random(seed)
    lines = ["# generated for the robots benchmark", "Sitemap: https://example.org/sitemap.xml"]
    for bot in ("Googlebot", "Bingbot", "GPTBot", "CCBot", "AhrefsBot"):
        lines += ["", f"User-agent: {bot}", "Disallow: /private/", "Allow: /private/ok"]
    lines += ["", "User-agent: *", "Crawl-delay: 1"]
    written = 10
    while written < rules_wanted:
        section = rng.choice(_SECTIONS)
        word = rng.choice(_WORDS)
        kind = rng.random()
        verb = "Allow" if rng.random() < 0.2 else "Disallow"
        if kind < 0.55:
            depth = rng.randint(0, 2)
            tail = "/".join(rng.choice(_WORDS) + str(rng.randint(0, 99)) for _ in range(depth))
            pattern = f"/{section}/{word}" + (f"/{tail}" if tail else "")
        elif kind < 0.70:
            pattern = f"/{section}/*{word}"
        elif kind < 0.80:
            pattern = f"/*?{word}="
        elif kind < 0.87:
            pattern = f"/*.{rng.choice(('pdf', 'zip', 'xml', 'json'))}$"
        elif kind < 0.94:
            pattern = f"/{section}/{word}$"
        else:
            pattern = f"/{section}/{word}%C3%A9{rng.randint(0, 9)}"
        lines.append(f"{verb}: {pattern}")
        written += 1
    return "\n".join(lines) + "\n"


def url_mix(count: int = 2000, seed: int = 11) -> list[str]:
    """A deterministic mix of full URLs, some hitting rules and some not."""
    rng = random.Random(seed)
    urls = []
    for _ in range(count):
        section = rng.choice(_SECTIONS)
        word = rng.choice(_WORDS)
        shape = rng.random()
        if shape < 0.4:
            path = f"/{section}/{word}/{rng.choice(_WORDS)}{rng.randint(0, 99)}"
        elif shape < 0.6:
            path = f"/{section}/{rng.randint(1000, 9999)}?{word}={rng.randint(0, 9)}"
        elif shape < 0.7:
            path = f"/{section}/{word}.{rng.choice(('pdf', 'html', 'zip'))}"
        elif shape < 0.8:
            path = f"/{section}/{word}"
        else:
            path = f"/articles/{rng.randint(1, 10**6)}/{word}-{rng.randint(0, 99)}"
        urls.append(f"https://example.org{path}")
    return urls


def _rate(check: object, urls: list[str]) -> float:
    assert callable(check)
    started = time.perf_counter()
    for url in urls:
        check(url, _USER_AGENT)
    return len(urls) / (time.perf_counter() - started)


def measure() -> dict[str, float | int]:
    """Run every measurement; returns the JSON-ready figures."""
    text = realistic_robots()
    urls = url_mix() * 10
    rules = parse(text)
    protego = Protego.parse(text)
    distinct = set(urls)
    disagreements = sum(
        rules.allowed(url, _USER_AGENT) != protego.can_fetch(url, _USER_AGENT) for url in distinct
    )
    ours = []
    theirs = []
    for _ in range(_RUNS):
        ours.append(_rate(rules.allowed, urls))
        theirs.append(_rate(protego.can_fetch, urls))
    allowed_per_s = statistics.median(ours)
    protego_per_s = statistics.median(theirs)
    hostile = parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*b\n")
    hostile_url = "/" + "a" * 10_000
    timings = []
    for _ in range(_RUNS):
        started = time.perf_counter()
        hostile.allowed(hostile_url, _USER_AGENT)
        timings.append((time.perf_counter() - started) * 1e6)
    started = time.perf_counter()
    for _ in range(20):
        parse(text)
    parse_ms = (time.perf_counter() - started) / 20 * 1e3
    disallowed = sum(not rules.allowed(url, _USER_AGENT) for url in urls) / len(urls)
    return {
        "rules": sum(1 for line in text.splitlines() if line.startswith(("Allow", "Disallow"))),
        "urls": len(urls),
        "disallowed_share": round(disallowed, 3),
        "disagreements_vs_protego": disagreements,
        "allowed_per_s": round(allowed_per_s),
        "protego_allowed_per_s": round(protego_per_s),
        "ratio_vs_protego": round(allowed_per_s / protego_per_s, 2),
        "hostile_pattern_us": round(statistics.median(timings), 1),
        "parse_ms": round(parse_ms, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args(argv)
    figures = measure()
    if options.json:
        print(json.dumps(figures))
        return 0
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
