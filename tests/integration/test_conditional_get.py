"""Conditional GET over a real loopback server: validators out, a 304 back."""

from __future__ import annotations

import pytest
from aiohttp import web
from tests.integration.test_fetch import fetcher, serve

from courtly.fetch.validators import Validators, conditional_headers

pytestmark = pytest.mark.integration

ETAG = 'W/"v1"'
LM = "Tue, 01 Dec 2026 04:00:00 GMT"


async def test_validators_go_out_and_a_matching_tag_gets_a_304() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-None-Match") == ETAG:
            return web.Response(status=304, headers={"ETag": ETAG})
        return web.Response(body=b"<p>hi</p>", headers={"ETag": ETAG, "Last-Modified": LM})

    async with serve(handler) as server, fetcher() as http:
        url = f"http://one.test:{server.port}/p"
        first = await http.fetch(url)
        validators = Validators(
            etag=first.header("ETag"), last_modified=first.header("Last-Modified")
        )
        second = await http.fetch(url, headers=conditional_headers(validators, 2))
    assert first.status == 200 and second.status == 304 and second.body == b""
    sent = server.requests[1].headers
    assert sent["If-None-Match"] == ETAG and sent["If-Modified-Since"] == LM
    assert "If-None-Match" not in server.requests[0].headers
    assert ("If-None-Match", ETAG) in second.request_headers
