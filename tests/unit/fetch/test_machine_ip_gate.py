"""The per-IP cap shared by the processes of one machine: never more than per_ip holders
(in one process and across processes), turns in the order asked within a process, a
waiter that gives up takes nothing with it, and a process that dies holding slots gives
them back."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
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


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(per_ip=st.integers(1, 3), waiters=st.integers(1, 8))
def test_never_more_than_per_ip_holders_and_turns_in_order(
    tmp_path: Path, per_ip: int, waiters: int
) -> None:
    gate = MachineIpGate(per_ip, tmp_path / f"slots-{per_ip}-{waiters}.lock", buckets=64)

    async def scenario() -> None:
        holders = Holders(gate, waiters)
        async with asyncio.timeout(GUARD_S):
            for k in range(waiters):
                await holders.inside[k].wait()
                assert holders.holding() <= per_ip
                assert holders.holding() <= gate.in_use(IP) <= per_ip  # released: leaving
                released = sum(r.is_set() for r in holders.release)
                later = range(released + per_ip, waiters)
                assert not any(holders.inside[j].is_set() for j in later)
                if holders.holding() == per_ip:
                    holders.release[holders.entered[released]].set()
            for event in holders.release:
                event.set()
            await asyncio.gather(*holders.tasks)
        assert holders.entered == list(range(waiters))  # first asked, first served
        assert gate.in_use(IP) == 0

    try:
        asyncio.run(scenario())
    finally:
        gate.close()


@pytest.mark.parametrize("gives_up", [1, 2])
def test_a_waiter_that_gives_up_takes_no_slot_and_passes_its_turn_on(
    tmp_path: Path, gives_up: int
) -> None:
    """Waiter 1 (the next in turn) or 2 (the last) gives up while 0 holds the only slot:
    nobody enters beside 0, and the other waiter enters once 0 gives its slot back."""
    gate = MachineIpGate(1, tmp_path / "slots.lock", buckets=64)
    other = 3 - gives_up

    async def scenario() -> None:
        holders = Holders(gate, 3)
        async with asyncio.timeout(GUARD_S):
            await holders.inside[0].wait()
            await asyncio.sleep(0.01)  # the other two are waiting (and polling)
            holders.tasks[gives_up].cancel()
            await asyncio.sleep(0.01)  # several polls later
            assert holders.entered == [0]
            assert gate.in_use(IP) == 1
            holders.release[0].set()
            await holders.inside[other].wait()
            assert holders.entered == [0, other]
            holders.release[other].set()
            await asyncio.gather(holders.tasks[0], holders.tasks[other])
        assert gate.in_use(IP) == 0

    try:
        asyncio.run(scenario())
    finally:
        gate.close()


def test_addresses_in_other_buckets_do_not_wait_for_each_other(tmp_path: Path) -> None:
    gate = MachineIpGate(1, tmp_path / "slots.lock")

    async def scenario() -> None:
        a, b = Holders(gate, 1, "127.0.0.2"), Holders(gate, 1, "127.0.0.3")
        async with asyncio.timeout(GUARD_S):
            await a.inside[0].wait()
            await b.inside[0].wait()  # while a still holds its address's only slot
            assert a.holding() == b.holding() == 1
            a.release[0].set()
            b.release[0].set()
            await asyncio.gather(*a.tasks, *b.tasks)

    try:
        asyncio.run(scenario())
    finally:
        gate.close()


# -- across processes -------------------------------------------------------------------------


@contextmanager
def _cleaned_up(gate: MachineIpGate, child: BaseProcess) -> Iterator[None]:
    """Kill ``child`` if a failed check left it running; close ``gate``."""
    try:
        yield
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        gate.close()


def _hold_and_hang(gate: MachineIpGate, slots: int, ready: Connection) -> None:
    """Child: take ``slots`` slots of IP, say so, then wait to be killed."""
    taken = [gate.try_take(IP) for _ in range(slots)]
    ready.send(taken)
    signal.pause()


def test_a_process_killed_holding_slots_gives_them_back(tmp_path: Path) -> None:
    gate = MachineIpGate(2, tmp_path / "slots.lock", processes=2, buckets=64)
    ready, child_end = CONTEXT.Pipe()
    child = CONTEXT.Process(target=_hold_and_hang, args=(gate, 2, child_end))
    child.start()
    with _cleaned_up(gate, child):
        assert ready.poll(GUARD_S)
        assert sorted(ready.recv()) == [0, 1]  # the child holds both slots
        assert gate.try_take(IP) is None  # so this process gets none
        assert gate.in_use(IP) == 2
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(GUARD_S)
        assert child.exitcode == -signal.SIGKILL
        assert gate.in_use(IP) == 0  # the kernel gave its slots back

        async def take_both() -> None:
            async with asyncio.timeout(GUARD_S), gate.hold(IP), gate.hold(IP):
                assert gate.held_here(IP) == 2

        asyncio.run(take_both())
        assert gate.in_use(IP) == 0


def _hold_often(
    gate: MachineIpGate, rounds: int, inside: Synchronized[int], most: Synchronized[int]
) -> None:
    """Child: 4 tasks taking a slot of IP ``rounds`` times each, counting the holders."""

    async def one() -> None:
        for _ in range(rounds):
            async with gate.hold(IP):
                with inside.get_lock():
                    inside.value += 1
                    most.value = max(most.value, inside.value)
                await asyncio.sleep(0.0005)
                with inside.get_lock():
                    inside.value -= 1

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(4)))

    asyncio.run(main())


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(per_ip=st.integers(1, 3), processes=st.integers(2, 3))
def test_the_cap_holds_across_processes(tmp_path: Path, per_ip: int, processes: int) -> None:
    path = tmp_path / f"slots-{per_ip}-{processes}.lock"
    gate = MachineIpGate(per_ip, path, processes=processes + 1, buckets=64)  # + this one
    inside, most = CONTEXT.Value("i", 0), CONTEXT.Value("i", 0)
    children = [
        CONTEXT.Process(target=_hold_often, args=(gate, 30, inside, most)) for _ in range(processes)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(GUARD_S * 4)
    assert [child.exitcode for child in children] == [0] * processes
    assert inside.value == 0
    assert 1 <= most.value <= per_ip
    assert gate.in_use(IP) == 0


def _wait_and_hold(gate: MachineIpGate, talk: Connection) -> None:
    """Child: wait for a slot of IP, say "held", hold it until told to let go."""

    async def once() -> None:
        async with gate.hold(IP):
            talk.send("held")
            talk.recv()

    asyncio.run(once())


def test_a_new_request_queues_while_another_process_waits(tmp_path: Path) -> None:
    """A slot freed while another process waits is not retaken at once by a new request
    of the process that freed it: that request queues and polls like the waiter."""
    gate = MachineIpGate(1, tmp_path / "slots.lock", processes=2, buckets=64)
    talk, child_end = CONTEXT.Pipe()
    child = CONTEXT.Process(target=_wait_and_hold, args=(gate, child_end))

    def until(condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + GUARD_S
        while not condition():
            assert time.monotonic() < deadline, "hung"
            time.sleep(0.001)

    async def scenario() -> None:
        slot = gate.try_take(IP)
        assert slot is not None  # this process holds the only slot
        child.start()
        until(lambda: gate.waiting_elsewhere(IP))  # the child queued for it
        gate.give_back(IP, slot)
        entered = asyncio.Event()

        async def again() -> None:
            async with gate.hold(IP):
                entered.set()

        task = asyncio.ensure_future(again())
        await asyncio.sleep(0)  # the new request ran up to its first wait
        assert not entered.is_set()  # it did not take the free slot past the waiter
        async with asyncio.timeout(GUARD_S):  # then both get the slot, in either order
            while not talk.poll():
                await asyncio.wait([task], timeout=0.001)
            assert talk.recv() == "held"
            talk.send("let go")
            await task

    with _cleaned_up(gate, child):
        asyncio.run(scenario())
        child.join(GUARD_S)
        assert child.exitcode == 0
        assert not gate.waiting_elsewhere(IP)
        assert gate.in_use(IP) == 0


def test_more_processes_than_the_gate_was_made_for_are_refused(tmp_path: Path) -> None:
    first = MachineIpGate(1, tmp_path / "slots.lock", processes=1)
    second = pickle.loads(pickle.dumps(first))  # as a child process gets it
    try:
        assert first.try_take(IP) is not None
        with pytest.raises(RuntimeError, match="more than 1 processes"):
            second.try_take(IP)
    finally:
        first.close()
        second.close()


def test_every_lock_file_holds_its_buckets_cap_and_waits(tmp_path: Path) -> None:
    """The buckets spread over several lock files (so the kernel's per-file lock list
    stays short): an address's cap holds whichever file its bucket is in, another gate
    sees its slots and its waiting flag there, and the process identities stay in the
    first file."""
    first = MachineIpGate(1, tmp_path / "slots.lock", processes=2, buckets=64, lock_files=4)
    second = pickle.loads(pickle.dumps(first))  # as a child process gets it
    by_bucket = {first._bucket(f"127.0.{k}.1"): f"127.0.{k}.1" for k in range(40)}
    ips = list(by_bucket.values())  # one address a bucket: each has a cap of its own
    files = {bucket % 4 for bucket in by_bucket}
    try:
        assert files == {0, 1, 2, 3}
        assert [path.exists() for path in first.files()] == [True] * 4
        slots = {ip: first.try_take(ip) for ip in ips}
        assert None not in slots.values()
        assert [second.try_take(ip) for ip in ips] == [None] * len(ips)
        assert all(second.in_use(ip) == 1 for ip in ips)
        for ip, slot in slots.items():
            assert slot is not None
            first.give_back(ip, slot)
        assert all(second.in_use(ip) == 0 for ip in ips)
        assert {first._me, second._me} == {0, 1}

        async def waits_then_holds(ip: str) -> None:
            taken = first.try_take(ip)
            assert taken is not None
            waiter = asyncio.ensure_future(second._wait_for_slot(ip))
            for _ in range(100):
                await asyncio.sleep(0.001)
                if first.waiting_elsewhere(ip):
                    break
            assert first.waiting_elsewhere(ip)  # announced in the bucket's own file
            first.give_back(ip, taken)
            second.give_back(ip, await asyncio.wait_for(waiter, GUARD_S))
            assert not first.waiting_elsewhere(ip)

        for ip in ips[:8]:
            asyncio.run(waits_then_holds(ip))
    finally:
        first.close()
        second.close()
