from __future__ import annotations

from collections.abc import Iterator

from courtly.sandbox import (
    AuditReport,
    RequestRecord,
    SandboxSpec,
    SandboxTruth,
    audit,
)
from tests.unit.sandbox.conftest import PORT, T0, host_with_robots


def _rec(
    truth: SandboxTruth,
    host: str,
    path: str,
    start: float,
    end: float,
    status: int = 200,
    retry_after_s: float | None = None,
) -> RequestRecord:
    profile = truth.world.profile(host)
    return RequestRecord(
        start_at=T0 + start,
        end_at=T0 + end,
        host=host,
        ip=profile.ip if profile is not None else "127.0.0.250",
        port=PORT,
        path=path,
        status=status,
        ua="courtly/0.1 (+mailto:ops@example.org)",
        bytes=1000,
        conn=1,
        retry_after_s=retry_after_s,
    )


def _polite_crawl(
    truth: SandboxTruth, host: str, start: float, step: float
) -> Iterator[RequestRecord]:
    """Sequential, distinct, allowed requests with ``step`` between starts (10 ms each)."""
    paths = ["/robots.txt", "/", *(f"/p/{i}.html" for i in range(5))]
    for k, path in enumerate(paths):
        begin = start + k * step
        yield _rec(truth, host, path, begin, begin + 0.01)


def _check(truth: SandboxTruth, records: list[RequestRecord], **kwargs: float) -> AuditReport:
    options: dict[str, float] = {"min_delay_s": 0.05, "per_ip_cap": 2, **kwargs}
    return audit(
        records,
        spec_or_truth=truth,
        min_delay_s=options["min_delay_s"],
        per_ip_cap=int(options["per_ip_cap"]),
        user_agent_token="courtly",
    )


def _clean_log(truth: SandboxTruth) -> list[RequestRecord]:
    a, b = host_with_robots(truth, "missing"), host_with_robots(truth, "rules")
    return [*_polite_crawl(truth, a, 0.0, 0.07), *_polite_crawl(truth, b, 0.005, 0.07)]


def test_a_clean_log_passes(truth: SandboxTruth) -> None:
    report = _check(truth, _clean_log(truth))
    assert report.clean, report.summary()
    assert report.violations == 0 and report.requests == 14 and report.hosts == 2
    assert report.max_in_flight_per_host == 1
    assert 0 < report.expected_fetched < report.expected_pages
    assert 0 < report.coverage < 1


def test_overlap_on_one_host_is_caught(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "missing")
    log = [*_clean_log(truth), _rec(truth, host, "/p/9.html", 0.072, 0.2)]
    report = _check(truth, log)
    assert report.host_overlaps >= 1 and report.max_in_flight_per_host == 2
    assert report.violations >= report.host_overlaps
    assert any(f.kind == "host_overlap" for f in report.examples)


def test_per_ip_cap_is_caught(truth: SandboxTruth) -> None:
    world = truth.world
    by_ip: dict[str, list[str]] = {}
    for h in world.hosts:
        if not h.dead:
            by_ip.setdefault(h.ip, []).append(h.name)
    names = next(v for v in by_ip.values() if len(v) >= 2)
    log = [_rec(truth, names[0], "/", 0.0, 1.0), _rec(truth, names[1], "/", 0.1, 0.5)]
    assert _check(truth, log, per_ip_cap=2).ip_over_cap == 0
    report = _check(truth, log, per_ip_cap=1)
    assert report.ip_over_cap == 1 and report.max_in_flight_per_ip == 2
    assert not report.clean


def test_short_gap_is_caught_and_tolerance_forgives_jitter(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "missing")
    tight = [_rec(truth, host, "/", 0.0, 0.01), _rec(truth, host, "/p/1.html", 0.03, 0.04)]
    report = _check(truth, tight)
    assert report.gap_violations == 1 and report.retry_after_violations == 0
    jitter = [_rec(truth, host, "/", 0.0, 0.01), _rec(truth, host, "/p/1.html", 0.058, 0.06)]
    assert _check(truth, jitter).clean


def test_crawl_delay_is_required(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "crawl_delay")
    log = list(_polite_crawl(truth, host, 0.0, 0.1))  # 0.09 s gaps < Crawl-delay 0.1
    report = _check(truth, log)
    assert report.gap_violations == len(log) - 1
    slow = list(_polite_crawl(truth, host, 0.0, 0.12))
    assert _check(truth, slow).clean


def test_retry_after_window_is_enforced(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "missing")
    log = [
        _rec(truth, host, "/", 0.0, 0.01),
        _rec(truth, host, "/p/1.html", 0.1, 0.11, status=429, retry_after_s=1.0),
        _rec(truth, host, "/p/1.html", 0.6, 0.61),
    ]
    report = _check(truth, log)
    assert report.gap_violations == 1 and report.retry_after_violations == 1
    assert report.duplicate_fetches == 0  # a retry after 429 is not a duplicate
    patient = [*log[:2], _rec(truth, host, "/p/1.html", 1.12, 1.13)]
    assert _check(truth, patient).clean


def test_robots_violations_are_caught(truth: SandboxTruth) -> None:
    rules, failing = host_with_robots(truth, "rules"), host_with_robots(truth, "server_error")
    log = [
        _rec(truth, rules, "/robots.txt", 0.0, 0.01),
        _rec(truth, rules, "/private/0.html", 0.1, 0.11),
        _rec(truth, rules, "/private/open/0.html", 0.2, 0.21),
        _rec(truth, failing, "/robots.txt", 0.0, 0.01, status=500),
        _rec(truth, failing, "/", 0.1, 0.11),
    ]
    report = _check(truth, log)
    assert report.disallowed_fetches == 1
    assert report.robots_unavailable_fetches == 1
    assert report.violations == 2
    kinds = {(f.kind, f.path) for f in report.examples}
    assert kinds == {("disallowed", "/private/0.html"), ("robots_unavailable", "/")}


def test_duplicates_count_spellings_but_not_robots_refetches(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "missing")
    log = [
        _rec(truth, host, "/robots.txt", 0.0, 0.01, status=404),
        _rec(truth, host, "/p/1.html", 0.1, 0.11),
        _rec(truth, host, "/p/%31.html", 0.2, 0.21),
        _rec(truth, host, "/p/./1.html", 0.3, 0.31),
        _rec(truth, host, "/robots.txt", 0.4, 0.41, status=404),
    ]
    report = _check(truth, log)
    assert report.duplicate_fetches == 2 and report.violations == 2


def test_informational_counts_do_not_fail_the_audit(truth: SandboxTruth) -> None:
    trap_host = next(h.name for h in truth.world.hosts if h.trap)
    host = host_with_robots(truth, "missing")
    log = [
        _rec(truth, trap_host, "/deep/more/more/", 0.0, 0.01),
        _rec(truth, host, "/nf/0.html", 0.0, 0.01),
        _rec(truth, "unknown.test", "/", 0.0, 0.01, status=404),
    ]
    report = _check(truth, log)
    assert report.trap_fetches == 1 and report.nofollow_fetches == 1
    assert report.unknown_host_requests == 1
    assert report.clean
    assert report.to_dict()["clean"] is True


def test_spec_is_accepted_in_place_of_truth(truth: SandboxTruth) -> None:
    log = _clean_log(truth)
    report = audit(log, spec_or_truth=SandboxSpec.small(), min_delay_s=0.05, per_ip_cap=2)
    assert report.clean and report.expected_pages == _check(truth, log).expected_pages
