"""Payloads move in batches: one store step per write or read, completed blobs emptied
with the next write, unstored requests answered from memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scrapy import Request, Spider

from courtly.frontier import QueueConfig
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.keys import PAYLOAD_NAMESPACE
from courtly.integrations.scrapy.payloads import PUT_CHUNK, Payloads
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.store.memory import MemoryStore


class _Spider(Spider):
    name = "payloads"


class _Sink:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def set_value(self, key: str, value: object) -> None:
        self.values[key] = value


class _CountingStore(MemoryStore):
    """The memory store, counting its batched steps."""

    def __init__(self) -> None:
        super().__init__(QueueConfig())
        self.puts: list[int] = []
        self.gets: list[int] = []

    async def put_blobs(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
        self.puts.append(len(items))
        await super().put_blobs(namespace, items)

    async def get_blobs(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        self.gets.append(len(keys))
        return await super().get_blobs(namespace, keys)


def _payloads() -> tuple[Payloads, RequestCodec]:
    codec = RequestCodec(_Spider())
    return Payloads(codec, SchedulerStats(_Sink())), codec


async def test_writes_and_reads_are_one_step_each_and_clears_wait_for_the_next_write() -> None:
    store = _CountingStore()
    payloads, _ = _payloads()
    requests = {f"id{i}": Request(f"http://a.test/{i}") for i in range(3)}
    items = []
    for payload_id, request in requests.items():
        data = payloads.encode(payload_id, request)
        assert data is not None
        items.append((payload_id, data))
    await payloads.put_many(store, items)
    assert store.puts == [3]
    loaded = await payloads.load_many(store, ["id2", "missing", "id0"])
    assert store.gets == [3]
    assert [None if x is None else (x[0].url, x[1]) for x in loaded] == [
        ("http://a.test/2", True),
        None,
        ("http://a.test/0", True),
    ]
    payloads.clear("id0")
    assert await store.get_blob(PAYLOAD_NAMESPACE, "id0")  # not yet emptied
    await payloads.put_many(store, [])
    assert store.puts == [3, 1]
    assert await store.get_blob(PAYLOAD_NAMESPACE, "id0") == b""
    await payloads.put_many(store, [])
    assert store.puts == [3, 1]  # nothing to write: no step


async def test_a_large_write_is_chunked_and_memory_copies_need_no_read() -> None:
    store = _CountingStore()
    payloads, codec = _payloads()
    data = codec.encode(Request("http://a.test/x"))
    assert data is not None
    await payloads.put_many(store, [(f"id{i}", data) for i in range(PUT_CHUNK + 1)])
    assert store.puts == [PUT_CHUNK, 1]
    kept = Request("http://a.test/kept")
    payloads.keep("mem", kept)
    loaded = await payloads.load_many(store, ["mem"])
    assert loaded == [(kept, False)] and store.gets == []
