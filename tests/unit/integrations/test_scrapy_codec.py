"""Requests survive as bytes (Scrapy's to_dict, pickled); the unserialisable are reported."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

from scrapy import FormRequest, Request, Spider
from scrapy.http import JsonRequest, Response

from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.scheduler import KEY_META, PARENT_META


class _Spider(Spider):
    name = "codec"

    def parse_page(self, response: Response) -> Iterator[Any]:
        yield from ()

    def failed(self, failure: Any) -> None:
        return None


_ANONYMOUS: Callable[[Response], None] = lambda response: None  # noqa: E731


def _numbers() -> Iterator[int]:
    yield 1


def test_a_request_round_trips_with_its_callbacks() -> None:
    spider = _Spider()
    codec = RequestCodec(spider)
    request = Request(
        "http://example.org/form",
        method="POST",
        body=b"\x00binary\xff",
        headers={"X-A": "1"},
        meta={"depth": 3, "custom": [1, 2]},
        cb_kwargs={"page": 7},
        priority=-2,
        dont_filter=True,
        callback=spider.parse_page,
        errback=spider.failed,
    )
    payload = codec.encode(request)
    assert payload is not None
    back = codec.decode(payload)
    assert (back.url, back.method, back.body) == (request.url, "POST", b"\x00binary\xff")
    assert back.headers.get("X-A") == b"1"
    assert back.meta == {"depth": 3, "custom": [1, 2]}
    assert back.cb_kwargs == {"page": 7}
    assert (back.priority, back.dont_filter) == (-2, True)
    assert back.callback == spider.parse_page and back.errback == spider.failed


def test_the_schedulers_own_meta_is_not_stored() -> None:
    codec = RequestCodec(_Spider())
    request = Request("http://example.org/", meta={KEY_META: "k", PARENT_META: "p", "x": 1})
    payload = codec.encode(request)
    assert payload is not None
    assert codec.decode(payload).meta == {"x": 1}


def test_a_lambda_callback_cannot_be_stored() -> None:
    codec = RequestCodec(_Spider())

    def callback(response: Response) -> None:
        return None

    assert codec.encode(Request("http://example.org/", callback=_ANONYMOUS)) is None
    assert codec.encode(Request("http://example.org/", callback=callback)) is None


def test_unpicklable_meta_cannot_be_stored() -> None:
    codec = RequestCodec(_Spider())
    assert codec.encode(Request("http://example.org/", meta={"gen": _numbers()})) is None


class _CountingSpider(_Spider):
    """A spider with a property: ``Request.to_dict(spider=...)`` evaluates it each time
    it looks a callback's name up among the spider's members."""

    looked_up = 0

    @property
    def costly(self) -> int:
        type(self).looked_up += 1
        return 0


def test_a_known_callback_is_not_looked_up_on_the_spider_again() -> None:
    spider = _CountingSpider()
    codec = RequestCodec(spider)
    for n in range(5):
        request = Request(f"http://example.org/{n}", callback=spider.parse_page)
        assert codec.encode(request) is not None
    assert _CountingSpider.looked_up == 1


def test_known_callbacks_give_scrapys_own_dict() -> None:
    spider = _Spider()
    codec = RequestCodec(spider)
    warm = Request("http://example.org/", callback=spider.parse_page, errback=spider.failed)
    assert codec.encode(warm) is not None
    requests = [
        Request(
            "http://example.org/form",
            method="POST",
            body=b"\x00binary\xff",
            headers={"X-A": "1"},
            cookies={"c": "1"},
            meta={"depth": 3, KEY_META: "k"},
            cb_kwargs={"page": 7},
            flags=["f"],
            priority=-2,
            dont_filter=True,
            callback=spider.parse_page,
            errback=spider.failed,
        ),
        Request("http://example.org/none"),
        Request("http://example.org/errback-only", errback=spider.failed),
        FormRequest("http://example.org/f", formdata={"q": "1"}, callback=spider.parse_page),
        JsonRequest("http://example.org/j", data={"q": 1}, callback=spider.parse_page),
        # Another spider object's method: Scrapy's own lookup, each time.
        Request("http://example.org/other", callback=_Spider().parse_page),
    ]
    for request in requests:
        payload = codec.encode(request)
        assert payload is not None
        expected = request.to_dict(spider=spider)
        expected["meta"] = {k: v for k, v in expected["meta"].items() if k != KEY_META}
        assert pickle.loads(payload) == expected
        back = codec.decode(payload)
        assert (type(back), back.url, back.body) == (type(request), request.url, request.body)


class _OwnDictRequest(Request):
    """A request class that adds to Scrapy's dict."""

    def to_dict(self, *, spider: Spider | None = None) -> dict[str, Any]:
        data = super().to_dict(spider=spider)
        data["meta"] = {**data["meta"], "own": True}
        return data


def test_a_request_class_with_its_own_to_dict_keeps_it() -> None:
    spider = _Spider()
    codec = RequestCodec(spider)
    assert codec.encode(Request("http://example.org/", callback=spider.parse_page)) is not None
    payload = codec.encode(_OwnDictRequest("http://example.org/o", callback=spider.parse_page))
    assert payload is not None
    assert pickle.loads(payload)["meta"] == {"own": True}
