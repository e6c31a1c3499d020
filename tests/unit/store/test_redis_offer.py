"""The order of a lease's visits across the Redis store's shards (``offer_key``)."""

from __future__ import annotations

import math

from courtly.store.redis.store import offer_key, parse_offer

NOW_MS = 1_000_000.0


def test_an_offer_reads_rank_time_and_due_since() -> None:
    assert parse_offer(b"2 1500 1200.5") == (2, 1500.0, 1200.5)
    assert parse_offer("") is None


def test_due_shards_go_by_best_head_then_time_aged_first_silent_last() -> None:
    offers = {
        "poor_old": (3, NOW_MS - 20_000, NOW_MS - 20_000),  # due 20 s: aged (bound 10 s)
        "poor_older": (3, NOW_MS - 30_000, NOW_MS - 30_000),
        "best_late": (1, NOW_MS - 10, NOW_MS - 10),
        "best_early": (1, NOW_MS - 500, NOW_MS - 500),
        "mid": (2, NOW_MS - 9_000, NOW_MS - 9_000),
    }
    keyed = {name: offer_key(offer, NOW_MS, 10.0) for name, offer in offers.items()}
    keyed["silent"] = offer_key(None, NOW_MS, 10.0)
    order = sorted(keyed, key=keyed.__getitem__)
    assert order == ["poor_older", "poor_old", "best_early", "best_late", "mid", "silent"]


def test_without_ageing_rank_decides() -> None:
    old = offer_key((3, 0.0, 0.0), NOW_MS, math.inf)
    assert offer_key((1, NOW_MS, NOW_MS), NOW_MS, math.inf) < old
