"""Per-URL cost of the URL layer and the seen-set, on a synthetic but messy link set.

    python benchmarks/urls.py            # a table
    python benchmarks/urls.py --json     # one JSON object (µs per URL, ns per add)

The data is generated from a fixed seed: pages on a few dozen hosts (IDN, ports, IPv4/IPv6,
trailing dots, mixed case), each with relative, absolute, protocol-relative and junk hrefs
(``%7E``, lower-case escapes, dot segments, fragments, empty queries, backslashes, mailto:).
Every figure is the median of ``--repeat`` runs over fresh copies of the strings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from urllib.parse import urljoin

from courtly.frontier.seen import BloomSeenSet, ExactSeenSet
from courtly.url import (
    DomainResolver,
    Scope,
    TrapConfig,
    UrlJoiner,
    canonicalize,
    host_key,
    trap_reason,
)

_HOSTS = [
    "Example.COM",
    "www.example.com",
    "example.com.",
    "Bücher.example",
    "faß.de",
    "пример.рф",
    "a.site1.test:8080",
    "b.site2.test:8080",
    "news.bbc.co.uk",
    "user.github.io",
    "127.0.0.1:8080",
    "[::1]:8080",
    "shop.example.org:443",
    "docs.example.net:80",
]
_SEGMENTS = ["a", "b", "docs", "%7Euser", "caf%c3%a9", "café", "2024", "index.html", ".", ".."]
_HREF_SHAPES = [
    "{path}",
    "./{path}",
    "../{path}",
    "/{path}",
    "/{path}?q={n}&page={n}",
    "/{path}?",
    "{path}#top",
    "//{host}/{path}",
    "http://{host}/{path}",
    "https://{host}/{path}?id={n}",
    "mailto:someone@example.com",
    "javascript:void(0)",
    " /{path} ",
    "..\\{path}",
]


def _make_pages(seed: int, pages: int, links_per_page: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)

    def path() -> str:
        return "/".join(rng.choice(_SEGMENTS) for _ in range(rng.randint(1, 4)))

    result: list[tuple[str, list[str]]] = []
    for page in range(pages):
        scheme = rng.choice(["http", "https"])
        base = f"{scheme}://{rng.choice(_HOSTS)}/{path()}/p{page}.html"
        hrefs = [
            rng.choice(_HREF_SHAPES).format(
                path=path(), host=rng.choice(_HOSTS), n=rng.randint(0, 10**6)
            )
            for _ in range(links_per_page)
        ]
        result.append((base, hrefs))
    return result


def _fresh(strings: list[str]) -> list[str]:
    """Copies that are new objects (no cached str hash, no identity hits in caches)."""
    return [(s + " ")[:-1] for s in strings]


def _median_per_item(run: Callable[[], int], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        items = run()
        timings.append((time.perf_counter() - start) / items)
    return statistics.median(timings)


def measure(
    seed: int = 7, pages: int = 200, links_per_page: int = 100, repeat: int = 5
) -> dict[str, float]:
    """Return the figures: ``*_us`` microseconds per URL, ``*_ns`` nanoseconds per operation."""
    data = _make_pages(seed, pages, links_per_page)
    # The canonicalize input: raw absolute URLs as a naive joiner leaves them (not canonical).
    noisy = [
        url
        for base, hrefs in data
        for href in hrefs
        if (url := urljoin(base, href.strip())).startswith(("http://", "https://"))
    ]
    absolute: list[str] = []
    for base, hrefs in data:
        joiner = UrlJoiner(base)
        absolute.extend(joined for href in hrefs if (joined := joiner.join(href)) is not None)
    results: dict[str, float] = {}

    def canonicalize_all() -> int:
        round_urls = _fresh(noisy)
        for url in round_urls:
            canonicalize(url)
        return len(round_urls)

    results["canonicalize_us"] = _median_per_item(canonicalize_all, repeat) * 1e6

    def join_all() -> int:
        count = 0
        for base, hrefs in data:
            joiner = UrlJoiner(base)
            for href in _fresh(hrefs):
                joiner.join(href)
            count += len(hrefs)
        return count

    results["join_us"] = _median_per_item(join_all, repeat) * 1e6

    seen_urls = [f"https://h{i % 997}.example/path/{i}/page.html?q={i * 7}" for i in range(200_000)]

    def seen_add(seen: BloomSeenSet | ExactSeenSet) -> Callable[[], int]:
        def run() -> int:
            urls = _fresh(seen_urls)
            for url in urls:
                seen.add(url)
            return len(urls)

        return run

    results["seen_add_ns"] = (
        _median_per_item(lambda: seen_add(BloomSeenSet(len(seen_urls)))(), repeat) * 1e9
    )
    results["exact_seen_add_ns"] = (
        _median_per_item(lambda: seen_add(ExactSeenSet())(), repeat) * 1e9
    )
    resolver = DomainResolver()
    resolver.registered_domain("warm.example.com")
    canonical = sorted(set(absolute))

    def host_keys() -> int:
        for url in _fresh(canonical):
            host_key(url, "domain", resolver)
        return len(canonical)

    results["host_key_domain_us"] = _median_per_item(host_keys, repeat) * 1e6
    scope = Scope.from_seeds(["http://example.com/"], "domain", exclude=[r"\.pdf$"], max_depth=5)

    def scope_checks() -> int:
        for url in _fresh(canonical):
            scope.check(url, 2)
        return len(canonical)

    results["scope_check_us"] = _median_per_item(scope_checks, repeat) * 1e6
    cfg = TrapConfig()

    def trap_checks() -> int:
        for url in _fresh(canonical):
            trap_reason(url, cfg)
        return len(canonical)

    results["trap_reason_us"] = _median_per_item(trap_checks, repeat) * 1e6
    results["urls"] = float(len(noisy))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    results = measure(pages=args.pages, repeat=args.repeat)
    if args.json:
        print(json.dumps({key: round(value, 3) for key, value in results.items()}))
    else:
        for key, value in results.items():
            print(f"{key:>22}  {value:10.3f}")


if __name__ == "__main__":
    main()
