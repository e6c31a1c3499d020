"""WARC 1.1 ``revisit`` records: a 304, or a 200 whose payload was archived before.

Contract (WARC 1.1 §6.7, iipc/warc-specifications):

* :data:`SERVER_NOT_MODIFIED` is used for every 304 answering a conditional GET. The
  block is the 304's status line and headers (``application/http; msgtype=response``);
  the stored payload's ``WARC-Payload-Digest`` is repeated when known.
* :data:`IDENTICAL_PAYLOAD_DIGEST` is used for a full 200 whose strong (sha1) payload
  digest equals the last archived one. ``WARC-Payload-Digest`` is required; the block
  is the 200's status line and headers with ``WARC-Truncated: length`` (the payload is
  left out on purpose).
* Both carry ``WARC-Refers-To`` (the record id of the full response they stand for),
  ``WARC-Refers-To-Target-URI`` and ``WARC-Refers-To-Date`` when the caller knows them
  (:class:`RevisitRef`); a record only refers to one courtly wrote and keeps. A
  ``request`` record follows, ``WARC-Concurrent-To`` the revisit, as for a response.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from courtly.archive.warc import (
    WarcPosition,
    WarcWriter,
    _header_block,
    _record,
    _request_record,
    _response_headers,
    _sha1_label,
    _status_line,
    warc_date,
)
from courtly.fetch.records import FetchResult

__all__ = [
    "IDENTICAL_PAYLOAD_DIGEST",
    "SERVER_NOT_MODIFIED",
    "RevisitRef",
    "payload_digest",
    "write_revisit",
]

SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PAYLOAD_DIGEST = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_PROFILES = frozenset({SERVER_NOT_MODIFIED, IDENTICAL_PAYLOAD_DIGEST})


@dataclass(frozen=True, slots=True)
class RevisitRef:
    """The archived full response a revisit stands for: its record id (a UUID string,
    without ``urn:uuid:``), target URI, WARC-Date and ``sha1:`` payload digest."""

    record_id: str | None = None
    target_uri: str | None = None
    date: str | None = None
    payload_digest: str | None = None


def payload_digest(payload: bytes) -> str:
    """The ``sha1:<base32>`` label of ``payload``, as in ``WARC-Payload-Digest``."""
    return _sha1_label(hashlib.sha1(payload).digest()).decode("ascii")


def write_revisit(
    writer: WarcWriter, result: FetchResult, profile: str, ref: RevisitRef
) -> WarcPosition:
    """Archive ``result`` as a revisit record of ``profile`` (plus its request record);
    returns the revisit record's position. See the module docstring."""
    if profile not in _PROFILES:
        raise ValueError(f"not a WARC 1.1 revisit profile: {profile!r}")
    revisit_id, request_id = str(uuid.uuid4()), str(uuid.uuid4())
    common = [("WARC-Date", warc_date(result.started_at)), ("WARC-Target-URI", result.url)]
    if result.ip:
        common.append(("WARC-IP-Address", result.ip))
    fields = [*common, ("WARC-Profile", profile)]
    if ref.record_id:
        fields.append(("WARC-Refers-To", f"<urn:uuid:{ref.record_id}>"))
    if ref.target_uri:
        fields.append(("WARC-Refers-To-Target-URI", ref.target_uri))
    if ref.date:
        fields.append(("WARC-Refers-To-Date", ref.date))
    fields.append(("WARC-Concurrent-To", f"<urn:uuid:{request_id}>"))
    if profile == IDENTICAL_PAYLOAD_DIGEST:
        fields.append(("WARC-Truncated", "length"))
        payload = result.raw_body if result.raw_body is not None else result.body
        digest: str | None = payload_digest(payload)
    else:
        digest = ref.payload_digest
    block = _header_block(_status_line(result), _response_headers(result))
    digests = [("WARC-Block-Digest", _sha1_label(hashlib.sha1(block).digest()))]
    if digest is not None:
        digests.insert(0, ("WARC-Payload-Digest", digest.encode("ascii")))
    revisit = _record(
        "revisit", revisit_id, fields, "application/http; msgtype=response", block, digests
    )
    request = _request_record(result, request_id, common, revisit_id)
    return writer.write_records([revisit, request])
