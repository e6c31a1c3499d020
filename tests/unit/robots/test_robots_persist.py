from __future__ import annotations

import pytest

from courtly.errors import StateError
from courtly.fetch.records import FetchResult
from courtly.robots import RobotsFetchOutcome, parse
from courtly.robots.persist import outcome_from_bytes, outcome_to_bytes

BODY = b"User-agent: *\nDisallow: /private\nCrawl-delay: 3\nSitemap: http://a.test/s.xml\n"


def _ok() -> RobotsFetchOutcome:
    result = FetchResult("http://a.test/robots.txt", 200, (), BODY, 1.0, 2.0)
    return RobotsFetchOutcome("ok", parse(BODY), 200, result.url, 0, None, (result,))


def test_ok_outcome_round_trips_with_its_rules() -> None:
    data = outcome_to_bytes(_ok(), 123.5)
    assert data is not None
    outcome, fetched_at = outcome_from_bytes(data)
    assert fetched_at == 123.5 and outcome.kind == "ok"
    rules = outcome.effective_rules()
    assert not rules.allowed("/private/x", "courtly")
    assert rules.allowed("/public", "courtly")
    assert rules.crawl_delay_s("courtly") == 3.0
    assert rules.sitemaps == ["http://a.test/s.xml"]


def test_unavailable_round_trips_as_allow_all() -> None:
    outcome = RobotsFetchOutcome("unavailable", None, 404, "http://a.test/robots.txt", 0, None)
    data = outcome_to_bytes(outcome, 5.0)
    assert data is not None
    restored, _ = outcome_from_bytes(data)
    assert restored.kind == "unavailable"
    assert restored.effective_rules().allowed("/anything", "courtly")


def test_unreachable_is_not_kept() -> None:
    outcome = RobotsFetchOutcome("unreachable", None, 503, "http://a.test/robots.txt", 0, "5xx")
    assert outcome_to_bytes(outcome, 5.0) is None


@pytest.mark.parametrize("data", [b"", b"{}", b"not json", b'{"v": 9, "kind": "ok"}'])
def test_garbage_is_a_state_error(data: bytes) -> None:
    with pytest.raises(StateError):
        outcome_from_bytes(data)
