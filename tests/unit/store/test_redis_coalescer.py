"""The coalescer behind the Redis store's cross-shard ADDs (no server needed)."""

from __future__ import annotations

import asyncio

import pytest

from courtly.store.redis.coalescer import Coalescer


class Recorder:
    """A ``send`` that records its calls and answers each item doubled, after a turn."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[tuple[str, list[int]]] = []
        self.fail_on = fail_on

    async def __call__(self, key: str, items: list[int]) -> list[int]:
        self.calls.append((key, list(items)))
        await asyncio.sleep(0)
        if key == self.fail_on:
            raise RuntimeError(f"send {key} failed")
        return [2 * item for item in items]


async def test_concurrent_callers_share_one_send_per_key_and_get_their_own_results() -> None:
    send = Recorder()
    coalescer: Coalescer[str, int, int] = Coalescer(send)
    one, two = await asyncio.gather(
        coalescer.submit([("a", 1), ("b", 2), ("a", 3)]),
        coalescer.submit([("b", 4), ("a", 5)]),
    )
    assert one == [2, 4, 6] and two == [8, 10]
    assert sorted(send.calls) == [("a", [1, 3, 5]), ("b", [2, 4])]
    assert (coalescer.rounds, coalescer.sends) == (1, 2)


async def test_items_submitted_during_a_round_go_in_the_next_one() -> None:
    gate = asyncio.Event()
    calls: list[list[int]] = []

    async def send(key: str, items: list[int]) -> list[int]:
        calls.append(list(items))
        await gate.wait()
        return items

    coalescer: Coalescer[str, int, int] = Coalescer(send)
    first = asyncio.create_task(coalescer.submit([("k", 1)]))
    await asyncio.sleep(0.01)  # the first round is in flight
    later = [asyncio.create_task(coalescer.submit([("k", i)])) for i in (2, 3)]
    await asyncio.sleep(0.01)
    assert calls == [[1]] and not first.done()
    gate.set()
    assert await first == [1]
    assert [await task for task in later] == [[2], [3]]
    assert calls == [[1], [2, 3]]
    assert coalescer.rounds == 2


async def test_a_failed_send_fails_only_the_callers_whose_items_it_carried() -> None:
    coalescer: Coalescer[str, int, int] = Coalescer(Recorder(fail_on="bad"))
    good, bad = await asyncio.gather(
        coalescer.submit([("ok", 1)]),
        coalescer.submit([("ok", 2), ("bad", 3)]),
        return_exceptions=True,
    )
    assert good == [2]
    assert isinstance(bad, RuntimeError)
    assert await coalescer.submit([("ok", 7)]) == [14]  # the next round runs as usual
    assert await coalescer.submit([]) == []
    await coalescer.aclose()


@pytest.mark.parametrize("n", [1, 50])
async def test_results_come_back_in_the_order_of_submission(n: int) -> None:
    async def plus_one(key: int, items: list[int]) -> list[int]:
        return [item + 1 for item in items]

    coalescer: Coalescer[int, int, int] = Coalescer(plus_one)
    items = [(i % 3, i) for i in range(n)]
    assert await coalescer.submit(items) == [i + 1 for i in range(n)]
