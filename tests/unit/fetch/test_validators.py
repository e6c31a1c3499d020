"""Validators: conditional headers, 304 header merge, lying servers caught."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.fetch.validators import (
    ETAG_STRIKES,
    UNCONDITIONAL_EVERY,
    Validators,
    conditional_headers,
    judge,
    merge_not_modified,
)

DATE = "Wed, 02 Dec 2026 04:00:00 GMT"
LATER = "Wed, 02 Dec 2026 05:00:00 GMT"
EARLIER = "Tue, 01 Dec 2026 04:00:00 GMT"


def test_validators_go_back_verbatim_weak_tags_included() -> None:
    v = Validators(etag='W/"abc"', last_modified=EARLIER)
    assert conditional_headers(v, 2) == {"If-None-Match": 'W/"abc"', "If-Modified-Since": EARLIER}


@given(st.integers(1, 1000))
def test_first_and_every_kth_visit_are_unconditional(visit: int) -> None:
    v = Validators(etag='"x"', last_modified=EARLIER)
    headers = conditional_headers(v, visit)
    if visit == 1 or visit % UNCONDITIONAL_EVERY == 0:
        assert headers == {}
    else:
        assert set(headers) == {"If-None-Match", "If-Modified-Since"}


def test_unreliable_validators_are_not_sent() -> None:
    v = Validators(etag='"x"', last_modified=EARLIER, etag_unreliable=True, lm_unreliable=True)
    assert conditional_headers(v, 3) == {}


def test_a_new_etag_on_every_response_is_caught_after_the_strikes() -> None:
    v = Validators()
    for visit in range(ETAG_STRIKES + 1):
        assert not v.etag_unreliable
        v = judge(
            v, etag=f'"{visit}"', last_modified=None, date=DATE, bytes_same=True, changed=False
        )
    assert v.etag_unreliable
    assert conditional_headers(v, 3) == {}


def test_an_honest_etag_that_changes_with_the_content_stays_trusted() -> None:
    v = Validators()
    for visit in range(10):
        v = judge(
            v, etag=f'"{visit}"', last_modified=None, date=DATE, bytes_same=False, changed=True
        )
    assert not v.etag_unreliable


def test_last_modified_always_now_is_caught() -> None:
    v = Validators()
    for hour in range(4):
        now = f"Wed, 02 Dec 2026 0{hour}:00:00 GMT"
        v = judge(v, etag=None, last_modified=now, date=now, bytes_same=False, changed=False)
    assert v.lm_unreliable
    assert not v.lm_trusted


def test_last_modified_later_than_date_is_a_strike() -> None:
    v = judge(
        Validators(), etag=None, last_modified=LATER, date=DATE, bytes_same=True, changed=False
    )
    assert v.lm_strikes == 1


def test_same_validators_on_changed_content_mean_a_lying_304() -> None:
    v = Validators(etag='"same"', last_modified=EARLIER)
    v = judge(v, etag='"same"', last_modified=EARLIER, date=DATE, bytes_same=False, changed=True)
    assert v.etag_unreliable and v.lm_unreliable


def test_a_304_merges_the_headers_it_repeats() -> None:
    stored = (("Content-Type", "text/html"), ("ETag", '"1"'), ("Date", EARLIER), ("Vary", "a"))
    merged = merge_not_modified(stored, (("Date", DATE), ("ETag", '"2"'), ("Server", "x")))
    assert merged == (("Content-Type", "text/html"), ("ETag", '"2"'), ("Date", DATE), ("Vary", "a"))
