"""The batcher that sends the Redis store's concurrent calls in pipelines (no server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from courtly.store.redis.batcher import CallBatcher


class FakePipeline:
    def __init__(self, client: FakeClient) -> None:
        self._client = client
        self._commands: list[tuple[Any, ...]] = []

    def execute_command(self, *command: Any) -> None:
        self._commands.append(command)

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        assert raise_on_error is False
        self._client.rounds.append(list(self._commands))
        await self._client.gate.wait()
        if self._client.drop:
            raise ConnectionError("Connection closed by server.")
        out: list[Any] = []
        for command in self._commands:
            if command[0] == "FAIL":
                out.append(ValueError(f"bad {command[1]}"))
            else:
                out.append(command[1] * 2)
        return out


class FakeClient:
    """Answers each command ``(name, n)`` with ``2n``; ``("FAIL", n)`` with an error."""

    def __init__(self) -> None:
        self.rounds: list[list[tuple[Any, ...]]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.drop = False

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        assert transaction is False
        return FakePipeline(self)


async def test_concurrent_calls_share_one_pipeline_and_get_their_own_replies() -> None:
    client = FakeClient()
    batcher = CallBatcher(client)
    replies = await asyncio.gather(*(batcher.call("GET", n) for n in range(5)))
    assert replies == [0, 2, 4, 6, 8]
    assert client.rounds == [[("GET", n) for n in range(5)]]
    assert (batcher.sent_rounds, batcher.sent_commands) == (1, 5)


async def test_an_error_is_its_own_callers_alone() -> None:
    client = FakeClient()
    batcher = CallBatcher(client)
    results = await asyncio.gather(
        batcher.call("GET", 1),
        batcher.call("FAIL", 2),
        batcher.call("GET", 3),
        return_exceptions=True,
    )
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], ValueError)


async def test_a_round_that_fails_whole_fails_each_of_its_calls() -> None:
    client = FakeClient()
    client.drop = True
    batcher = CallBatcher(client)
    results = await asyncio.gather(
        batcher.call("GET", 1), batcher.call("GET", 2), return_exceptions=True
    )
    assert all(isinstance(r, ConnectionError) for r in results)
    client.drop = False
    assert await batcher.call("GET", 4) == 8


async def one_round_out() -> tuple[FakeClient, CallBatcher, asyncio.Future[Any]]:
    """A batcher of one round whose first call, ``GET 1``, is out and held by the server."""
    client = FakeClient()
    client.gate.clear()
    batcher = CallBatcher(client, rounds=1)
    first = asyncio.ensure_future(batcher.call("GET", 1))
    await asyncio.sleep(0.01)
    return client, batcher, first


async def test_calls_made_while_the_rounds_are_out_go_in_the_next_round() -> None:
    client, batcher, first = await one_round_out()
    later = [asyncio.ensure_future(batcher.call("GET", n)) for n in (2, 3)]
    await asyncio.sleep(0.01)
    assert client.rounds == [[("GET", 1)]]  # one round out at a time
    client.gate.set()
    assert await first == 2
    assert [await f for f in later] == [4, 6]
    assert client.rounds == [[("GET", 1)], [("GET", 2), ("GET", 3)]]


async def test_a_call_cancelled_before_its_round_left_is_not_sent() -> None:
    client, batcher, first = await one_round_out()
    dropped = asyncio.ensure_future(batcher.call("GET", 2))
    kept = asyncio.ensure_future(batcher.call("GET", 3))
    await asyncio.sleep(0.01)
    dropped.cancel()
    client.gate.set()
    assert await first == 2 and await kept == 6
    with pytest.raises(asyncio.CancelledError):
        await dropped
    assert client.rounds == [[("GET", 1)], [("GET", 3)]]
    await batcher.aclose()


async def test_a_first_call_goes_out_at_once_beside_the_rounds_of_the_others() -> None:
    client, batcher, other = await one_round_out()
    waiting = asyncio.ensure_future(batcher.call("GET", 2))
    lease = [asyncio.ensure_future(batcher.call_first("LEASE", n)) for n in (3, 4)]
    await asyncio.sleep(0.01)
    # the lane's round left while the other round was out; the other call still waits
    assert client.rounds == [[("GET", 1)], [("LEASE", 3), ("LEASE", 4)]]
    again = asyncio.ensure_future(batcher.call_first("LEASE", 5))
    await asyncio.sleep(0.01)
    assert len(client.rounds) == 2  # one round of the lane at a time
    client.gate.set()
    assert [await f for f in (other, waiting, *lease, again)] == [2, 4, 6, 8, 10]
    assert client.rounds[2:] == [[("LEASE", 5)], [("GET", 2)]]
    await batcher.aclose()


def test_rounds_and_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        CallBatcher(FakeClient(), rounds=0)
