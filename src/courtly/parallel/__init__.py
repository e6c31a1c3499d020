"""Host-partitioned crawling: N processes, each owning a fixed share of the hosts.

Partition ``i`` of ``N`` owns the host keys with ``stable_hash(host_key) % N == i``
(xxh3-64 of the UTF-8 host key: the same in every process and every run), so all
state of a host (its back queue, politeness state, robots.txt, leases) lives in
one process and politeness needs no coordination: one request in flight per
host holds across processes by construction. The per-IP cap is shared: each
process may have up to ``per_ip`` requests in flight to one address, and a table
in shared memory (:class:`~courtly.fetch.machine_ip_gate.MachineIpGate`) keeps the
sum over the processes at ``per_ip`` or below. A partition's config still says
``per_ip // N`` (``per_ip < N`` is refused), the share it is sure of.

Layout of a partitioned state directory ``STATE``::

    STATE/partitions.json                 {"processes": N, ...}: a resume must use the same N
    STATE/part-<i>-of-<N>/frontier.sqlite3   partition i's own store (its own lock)
    STATE/part-<i>-of-<N>/warc/              partition i's WARC files
    STATE/part-<j>-of-<N>/inbox/from-<i>.jsonl   URLs partition i found on hosts j owns

Forwarding is durable: a partition appends the URLs it found on other
partitions' hosts to their inboxes (one JSON line per page and destination,
written to the OS, and fsynced with ``durability = "power"``) *before* the
completion that found them may commit. A crash after that loses nothing: the
receiver reads them on resume; a crash before it repeats the fetch, which finds
them again. The receiver tails its inbox files, queues the URLs (its seen-set
drops repeats) and stores, after them and in the same store, the byte offset
it has consumed of each inbox: a commit holds a prefix of the steps, so a
stored offset never runs ahead of the URLs it covers, and a crash re-reads a
little rather than skipping anything.

Termination: an empty frontier does not end a partition, since another one may
still forward work to it. The parent probes every partition in rounds; each
answers with a :class:`PartitionStatus` (idle or not, bytes written to each
inbox, bytes consumed from each). The crawl is done after two consecutive
rounds in which every partition is idle, every inbox has been read to the end
and no counter moved (:class:`TerminationDetector`).
Modules: :mod:`~courtly.parallel.layout` (who owns what), :mod:`~courtly.parallel.inbox`
(the forwarded URLs on disk), :mod:`~courtly.parallel.partition` (one crawler's share),
:mod:`~courtly.parallel.messages`, :mod:`~courtly.parallel.termination`,
:mod:`~courtly.parallel.aggregate` (sums), :mod:`~courtly.parallel.child` (a partition's
process) and :mod:`~courtly.parallel.supervisor` (the parent).
"""

from __future__ import annotations

from courtly.parallel.aggregate import merge_counts, merge_last_runs, merge_snapshots
from courtly.parallel.inbox import Inbox, InboxChunk, Outbox
from courtly.parallel.layout import (
    LAYOUT_FILE,
    available_cores,
    claim_layout,
    default_processes,
    partition_config,
    partition_dir,
    partition_of,
    stable_hash,
    state_dirs,
)
from courtly.parallel.messages import Abort, PartitionStatus, Probe, Stop
from courtly.parallel.partition import HostPartition
from courtly.parallel.supervisor import PartitionedCrawl
from courtly.parallel.termination import TerminationDetector, quiescent

__all__ = [
    "LAYOUT_FILE",
    "Abort",
    "HostPartition",
    "Inbox",
    "InboxChunk",
    "Outbox",
    "PartitionStatus",
    "PartitionedCrawl",
    "Probe",
    "Stop",
    "TerminationDetector",
    "available_cores",
    "claim_layout",
    "default_processes",
    "merge_counts",
    "merge_last_runs",
    "merge_snapshots",
    "partition_config",
    "partition_dir",
    "partition_of",
    "quiescent",
    "stable_hash",
    "state_dirs",
]
