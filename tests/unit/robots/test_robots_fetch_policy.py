"""fetch_robots over an in-memory fetcher: status codes, redirects, size, errors."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from courtly.errors import FetchError
from courtly.fetch.records import FetchResult
from courtly.robots import RobotsFetchOutcome, fetch_robots

ROBOTS = "https://example.org/robots.txt"
UA = "courtly"


def response(
    url: str,
    status: int,
    body: bytes = b"",
    *,
    location: str | None = None,
    truncated: bool = False,
    headers: tuple[tuple[str, str], ...] = (),
) -> FetchResult:
    if location is not None:
        headers = (*headers, ("Location", location))
    return FetchResult(url, status, headers, body, 0.0, 0.1, truncated=truncated)


class MemoryFetcher:
    """Answers from a table; a URL missing from it (or mapped to an error) raises FetchError."""

    def __init__(self, table: Mapping[str, FetchResult | FetchError]) -> None:
        self.table = dict(table)
        self.requested: list[str] = []

    async def fetch(self, url: str) -> FetchResult:
        self.requested.append(url)
        answer = self.table.get(url, FetchError("connect", f"nothing at {url}"))
        if isinstance(answer, FetchError):
            raise answer
        return answer


async def fetch(table: Mapping[str, FetchResult | FetchError]) -> RobotsFetchOutcome:
    return await fetch_robots(MemoryFetcher(table), ROBOTS)


async def test_200_is_ok_and_parsed() -> None:
    outcome = await fetch({ROBOTS: response(ROBOTS, 200, b"User-agent: *\nDisallow: /x\n")})
    assert outcome.kind == "ok"
    assert outcome.rules is not None
    assert not outcome.rules.allowed("/x", UA)
    assert (outcome.status, outcome.hops, outcome.final_url, outcome.error) == (
        200,
        0,
        ROBOTS,
        None,
    )
    assert len(outcome.results) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
async def test_4xx_is_unavailable_allow_all(status: int) -> None:
    outcome = await fetch({ROBOTS: response(ROBOTS, status, b"User-agent: *\nDisallow: /\n")})
    assert outcome.kind == "unavailable"
    assert outcome.rules is None
    assert outcome.effective_rules().allowed("/x", UA)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
async def test_429_and_5xx_are_unreachable_disallow_all(status: int) -> None:
    outcome = await fetch({ROBOTS: response(ROBOTS, status)})
    assert outcome.kind == "unreachable"
    assert outcome.status == status
    assert not outcome.effective_rules().allowed("/x", UA)
    assert outcome.effective_rules().allowed("/robots.txt", UA)


@pytest.mark.parametrize("kind", ["timeout", "connect", "dns", "blocked"])
async def test_no_response_is_unreachable(kind: str) -> None:
    outcome = await fetch({ROBOTS: FetchError(kind, "boom")})
    assert outcome.kind == "unreachable"
    assert outcome.status is None
    assert outcome.error is not None and outcome.error.startswith(kind)
    assert outcome.results == ()


async def test_redirect_chain_of_five_is_followed() -> None:
    urls = [f"https://example.org/r{i}" for i in range(5)]
    table: dict[str, FetchResult | FetchError] = {
        ROBOTS: response(ROBOTS, 301, location="/r0"),
    }
    for here, there in itertools.pairwise(urls):
        table[here] = response(here, 302, location=there)
    table[urls[-1]] = response(urls[-1], 200, b"User-agent: *\nDisallow: /deep\n")
    outcome = await fetch(table)
    assert outcome.kind == "ok"
    assert outcome.hops == 5
    assert outcome.final_url == urls[-1]
    assert [result.url for result in outcome.results] == [ROBOTS, *urls]
    assert outcome.rules is not None and not outcome.rules.allowed("/deep", UA)


async def test_six_redirects_are_unavailable() -> None:
    urls = [f"https://example.org/r{i}" for i in range(6)]
    table: dict[str, FetchResult | FetchError] = {ROBOTS: response(ROBOTS, 301, location=urls[0])}
    for here, there in itertools.pairwise(urls):
        table[here] = response(here, 307, location=there)
    table[urls[-1]] = response(urls[-1], 200, b"User-agent: *\nDisallow: /\n")
    fetcher = MemoryFetcher(table)
    outcome = await fetch_robots(fetcher, ROBOTS)
    assert outcome.kind == "unavailable"
    assert outcome.hops == 5
    assert urls[-1] not in fetcher.requested
    assert outcome.effective_rules().allowed("/x", UA)


async def test_max_redirects_is_configurable() -> None:
    table = {
        ROBOTS: response(ROBOTS, 301, location="/a"),
        "https://example.org/a": response("https://example.org/a", 200, b"User-agent: *\n"),
    }
    outcome = await fetch_robots(MemoryFetcher(table), ROBOTS, max_redirects=0)
    assert outcome.kind == "unavailable"


async def test_redirect_loop_is_unavailable_without_refetching() -> None:
    other = "https://example.org/other.txt"
    fetcher = MemoryFetcher(
        {
            ROBOTS: response(ROBOTS, 301, location=other),
            other: response(other, 301, location=ROBOTS),
        }
    )
    outcome = await fetch_robots(fetcher, ROBOTS)
    assert outcome.kind == "unavailable"
    assert fetcher.requested == [ROBOTS, other]
    assert outcome.error is not None and "loop" in outcome.error


async def test_cross_host_and_relative_redirects() -> None:
    there = "https://cdn.example.net/files/robots.txt"
    outcome = await fetch(
        {
            ROBOTS: response(ROBOTS, 301, location=there),
            there: response(there, 302, location="robots-v2.txt"),
            "https://cdn.example.net/files/robots-v2.txt": response(
                "https://cdn.example.net/files/robots-v2.txt", 200, b"User-agent: *\nDisallow: /x\n"
            ),
        }
    )
    assert outcome.kind == "ok"
    assert outcome.final_url == "https://cdn.example.net/files/robots-v2.txt"


@pytest.mark.parametrize("location", [None, "", "ftp://example.org/robots.txt", "http://[bad"])
async def test_redirect_without_a_usable_location_is_unavailable(location: str | None) -> None:
    outcome = await fetch({ROBOTS: response(ROBOTS, 302, location=location)})
    assert outcome.kind == "unavailable"


async def test_redirect_to_an_error_is_judged_by_the_final_response() -> None:
    there = "https://example.org/moved"
    outcome = await fetch(
        {ROBOTS: response(ROBOTS, 301, location=there), there: response(there, 503)}
    )
    assert outcome.kind == "unreachable"
    assert outcome.status == 503
    assert len(outcome.results) == 2


async def test_body_broken_off_early_is_unreachable() -> None:
    outcome = await fetch(
        {ROBOTS: response(ROBOTS, 200, b"User-agent: *\nDisallow: /x\n", truncated=True)}
    )
    assert outcome.kind == "unreachable"
    assert not outcome.effective_rules().allowed("/y", UA)


async def test_body_cut_at_the_size_limit_is_parsed() -> None:
    body = b"User-agent: *\nDisallow: /early\n" + b"#" * 2_000 + b"\nDisallow: /late\n"
    outcome = await fetch_robots(
        MemoryFetcher({ROBOTS: response(ROBOTS, 200, body[:1_000], truncated=True)}),
        ROBOTS,
        max_bytes=1_000,
    )
    assert outcome.kind == "ok"
    assert outcome.rules is not None
    assert not outcome.rules.allowed("/early", UA)
    assert outcome.rules.allowed("/late", UA)


async def test_only_max_bytes_are_parsed() -> None:
    body = b"User-agent: *\nDisallow: /early\n" + b"#" * 2_000 + b"\nDisallow: /late\n"
    outcome = await fetch_robots(
        MemoryFetcher({ROBOTS: response(ROBOTS, 200, body)}), ROBOTS, max_bytes=1_000
    )
    assert outcome.rules is not None and outcome.rules.allowed("/late", UA)


@pytest.mark.parametrize(
    ("value", "expected"), [("120", 120.0), ("soon", None), ("Thu, 01 Jan 1970 00:02:00 GMT", 60.0)]
)
async def test_retry_after_is_read_from_the_last_response(
    value: str, expected: float | None
) -> None:
    outcome = await fetch({ROBOTS: response(ROBOTS, 503, headers=(("Retry-After", value),))})
    assert outcome.retry_after_s(now_at=60.0) == expected
