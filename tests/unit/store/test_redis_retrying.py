"""Which failures of a Redis call the store retries (nothing was sent) and which it raises."""

from __future__ import annotations

import asyncio

import pytest

from courtly.store.redis.store import RedisStore


def _store() -> RedisStore:
    return RedisStore(object(), "crawl", retry_s=5.0)  # the client is never used here


@pytest.mark.parametrize(
    "message",
    [
        "'NoneType' object has no attribute 'execute_command'",  # ASK to an unknown node
        "'NoneType' object has no attribute 'writelines'",  # the writer dropped under the call
        "unable to perform operation on <TCPTransport closed=True>; the handler is closed",
    ],
)
def test_a_call_that_sent_nothing_is_tried_again(message: str) -> None:
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            error: Exception = (
                RuntimeError(message) if "handler" in message else AttributeError(message)
            )
            raise error
        return "ok"

    assert asyncio.run(_store()._retrying(call)) == "ok"
    assert calls == 2


def test_the_error_the_client_raises_while_handling_an_ask_to_an_unknown_node_is_retried() -> None:
    """Version 8 of the cluster client records a metric of the failed call on the node it
    looked up, ``None`` for a master it does not know yet: its own AttributeError, raised
    while handling the first one, is what reaches the store (seen in a reshard test)."""
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            try:
                raise AttributeError("'NoneType' object has no attribute 'execute_command'")
            except AttributeError:
                raise AttributeError(  # noqa: B904 (the client's own code raises it so)
                    "'NoneType' object has no attribute 'connection_kwargs'"
                )
        return "ok"

    assert asyncio.run(_store()._retrying(call)) == "ok"
    assert calls == 2


def test_any_other_attribute_error_is_raised_at_once() -> None:
    calls = 0

    async def call() -> None:
        nonlocal calls
        calls += 1
        raise AttributeError("'Lease' object has no attribute 'nope'")

    with pytest.raises(AttributeError):
        asyncio.run(_store()._retrying(call))
    assert calls == 1


def test_an_attribute_error_on_a_none_node_alone_is_raised_at_once() -> None:
    """``connection_kwargs`` of ``None`` without the ASK error under it is a bug: raised."""
    calls = 0

    async def call() -> None:
        nonlocal calls
        calls += 1
        raise AttributeError("'NoneType' object has no attribute 'connection_kwargs'")

    with pytest.raises(AttributeError):
        asyncio.run(_store()._retrying(call))
    assert calls == 1
