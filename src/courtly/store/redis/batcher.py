"""Commands of concurrent callers sent together: one pipeline per round trip.

A Redis fetcher makes several calls per page (a place at the page's address and its
release, the completion, a share of a lease, robots.txt blobs), each from its own
task. Sent alone, every call pays the client's whole path: a pooled connection
taken and given back, the command packed and written, a wake-up of the event loop
for its reply. That path, not the server, is most of what a Redis fetcher spends
beyond a local one. A :class:`CallBatcher` queues the commands its callers give it
and sends them in rounds: one non-transactional pipeline per round (one write, one
read of every reply), at most ``rounds`` rounds under way at once, so what arrives
while they are out goes in the next round. The first command starts a round at the
next turn of the event loop: nothing waits for a timer.

Commands given to :meth:`CallBatcher.call_first` (the dispatcher's lease step: its
LEASE and INDEX calls, which every idle fetcher of the process waits for) have a lane
of their own: one round of them may be under way beside the ``rounds`` of the others,
and they never queue behind those. Without it a lease waited for the rounds of the
process's other calls (completions, the per-IP gate, robots.txt blobs) to come back
first.

Each command is still its own step on the server (a pipeline is not a transaction):
a script's atomicity and every rule it keeps are unchanged, and the order of two
commands of one caller is kept (a caller awaits each reply before its next call).
A command's error is its caller's alone (``raise_on_error=False``); a round that
fails whole (the connection dropped) fails every command in it, and each caller
retries as it would a lost single call (the store's writing scripts answer a call
sent again with their first reply). A command whose caller was cancelled before its
round left is not sent.

Standalone Redis only: the store keeps the cluster client's own routing, redirection
and slot refreshes (a cluster pipeline splits by node and retries differently).
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["CallBatcher"]

_Item = tuple[tuple[Any, ...], "asyncio.Future[Any]"]
"""A queued command and the future its caller awaits."""


class CallBatcher:
    """``await call(*command)``: the command's reply, sent in a pipeline with the
    commands of the other callers of this round (at most ``max_batch`` a round)."""

    def __init__(self, client: Any, *, rounds: int = 2, max_batch: int = 64) -> None:
        if rounds < 1 or max_batch < 1:
            raise ValueError("rounds and max_batch must be >= 1")
        self._client = client
        self._rounds = rounds
        self._max_batch = max_batch
        self._queue: list[_Item] = []
        self._first: list[_Item] = []
        self._out = 0
        self._first_out = False
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent_rounds = 0
        """Rounds sent so far."""
        self.sent_commands = 0
        """Commands sent so far."""

    async def call(self, *command: Any) -> Any:
        """The reply to ``command``, sent in the next of the rounds (module doc)."""
        return await self._enqueue(self._queue, command)

    async def call_first(self, *command: Any) -> Any:
        """The reply to ``command``, sent in the lane of its own (module doc)."""
        return await self._enqueue(self._first, command)

    def _enqueue(self, lane: list[_Item], command: tuple[Any, ...]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        lane.append((command, future))
        if not self._scheduled and self._can_start():
            self._scheduled = True
            loop.call_soon(self._start)
        return future

    def _can_start(self) -> bool:
        return bool(self._first and not self._first_out) or bool(
            self._queue and self._out < self._rounds
        )

    def _start(self) -> None:
        self._scheduled = False
        while self._first and not self._first_out:
            batch = self._take(self._first)
            if batch:
                self._first_out = True
                self._launch(batch, first=True)
        while self._queue and self._out < self._rounds:
            batch = self._take(self._queue)
            if batch:
                self._out += 1
                self._launch(batch, first=False)

    def _take(self, queue: list[_Item]) -> list[_Item]:
        batch = [item for item in queue[: self._max_batch] if not item[1].done()]
        del queue[: self._max_batch]
        return batch

    def _launch(self, batch: list[_Item], *, first: bool) -> None:
        task = asyncio.get_running_loop().create_task(self._send(batch, first=first))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[_Item], *, first: bool) -> None:
        try:
            pipe = self._client.pipeline(transaction=False)
            for command, _ in batch:
                pipe.execute_command(*command)
            self.sent_rounds += 1
            self.sent_commands += len(batch)
            replies = await pipe.execute(raise_on_error=False)
        except Exception as error:  # the round failed whole: each caller decides
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
        except BaseException:  # cancelled (the loop closing): so are its callers
            for _, future in batch:
                future.cancel()
            raise
        else:
            for (_, future), reply in zip(batch, replies, strict=True):
                if future.done():
                    continue
                if isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
        finally:
            if first:
                self._first_out = False
            else:
                self._out -= 1
            if not self._scheduled and self._can_start():
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._start)

    async def aclose(self) -> None:
        """Wait for the rounds under way (their callers get their replies)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
