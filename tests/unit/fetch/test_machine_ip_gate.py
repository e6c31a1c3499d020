"""The per-IP cap shared by the processes of one machine: never more than per_ip holders,
turns in the order asked, a waiter that gives up passes its turn on."""

from __future__ import annotations

import asyncio
import multiprocessing

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.fetch.machine_ip_gate import MachineIpGate

CONTEXT = multiprocessing.get_context("spawn")
IP = "127.0.0.9"
GUARD_S = 30.0  # turns a hang (a turn never given) into a failure; nothing is timed


class Holders:
    """Tasks that each hold a slot of an address until released."""

    def __init__(self, gate: MachineIpGate, n: int, ip: str = IP) -> None:
        self.gate = gate
        self.entered: list[int] = []
        self.inside = [asyncio.Event() for _ in range(n)]
        self.release = [asyncio.Event() for _ in range(n)]
        self.tasks = [asyncio.ensure_future(self._hold(i, ip)) for i in range(n)]

    async def _hold(self, i: int, ip: str) -> None:
        async with self.gate.hold(ip):
            self.entered.append(i)
            self.inside[i].set()
            await self.release[i].wait()

    def holding(self) -> int:
        return sum(1 for i in self.entered if not self.release[i].is_set())


@settings(max_examples=25, deadline=None)
@given(per_ip=st.integers(1, 3), waiters=st.integers(1, 8))
def test_never_more_than_per_ip_holders_and_turns_in_order(per_ip: int, waiters: int) -> None:
    async def scenario() -> None:
        holders = Holders(MachineIpGate(per_ip, CONTEXT, buckets=64), waiters)
        async with asyncio.timeout(GUARD_S):
            for k in range(waiters):
                await holders.inside[k].wait()
                assert holders.holding() <= per_ip
                released = sum(r.is_set() for r in holders.release)
                later = range(released + per_ip, waiters)
                assert not any(holders.inside[j].is_set() for j in later)
                if holders.holding() == per_ip:
                    holders.release[holders.entered[released]].set()
            for event in holders.release:
                event.set()
            await asyncio.gather(*holders.tasks)
        assert holders.entered == list(range(waiters))  # first asked, first served
        assert holders.gate.in_use(IP) == 0

    asyncio.run(scenario())


def test_a_waiter_that_gives_up_passes_its_turn_on() -> None:
    async def scenario() -> None:
        holders = Holders(MachineIpGate(1, CONTEXT, buckets=64), 3)
        async with asyncio.timeout(GUARD_S):
            await holders.inside[0].wait()
            await asyncio.sleep(0)  # the other two have asked for their turns
            assert holders.gate.in_use(IP) == 3
            holders.tasks[1].cancel()
            holders.release[0].set()
            await holders.inside[2].wait()
            assert holders.entered == [0, 2]
            holders.release[2].set()
            await asyncio.gather(holders.tasks[0], holders.tasks[2])
        assert holders.gate.in_use(IP) == 0

    asyncio.run(scenario())


def test_addresses_in_other_buckets_do_not_wait_for_each_other() -> None:
    async def scenario() -> None:
        gate = MachineIpGate(1, CONTEXT)
        a, b = Holders(gate, 1, "127.0.0.2"), Holders(gate, 1, "127.0.0.3")
        async with asyncio.timeout(GUARD_S):
            await a.inside[0].wait()
            await b.inside[0].wait()  # while a still holds its address's only slot
            assert a.holding() == b.holding() == 1
            a.release[0].set()
            b.release[0].set()
            await asyncio.gather(*a.tasks, *b.tasks)

    asyncio.run(scenario())
