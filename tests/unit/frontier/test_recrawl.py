"""The recrawl policy: estimators (bias checked by seeded simulation) and the schedule."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.recrawl import (
    DAY_S,
    LaneSchedule,
    bias_corrected_rate,
    complete_rate,
    corrected_irregular_rate,
    first_interval,
    fit_mu,
    harmonic_rate,
    irregular_rate,
    lane_rates,
    last_modified_rate,
    next_due_at,
    recrawl_interval,
    window_unchanged,
)

LANE = LaneSchedule(min_s=3600.0, max_s=30 * DAY_S, default_s=DAY_S)


def _simulate_binary(rate: float, interval: float, visits: int, rng: random.Random) -> int:
    """How many of ``visits`` regular intervals saw at least one Poisson change."""
    return sum(1 for _ in range(visits) if rng.expovariate(rate) < interval)


@pytest.mark.parametrize(("ratio", "visits"), [(0.5, 20), (1.0, 20), (2.0, 50)])
def test_bias_corrected_estimator_is_unbiased_where_notes_say(ratio: float, visits: int) -> None:
    rng = random.Random(7)
    interval = DAY_S
    rate = ratio / interval
    trials = 4000
    mean = (
        sum(
            bias_corrected_rate(visits, _simulate_binary(rate, interval, visits, rng), interval)
            for _ in range(trials)
        )
        / trials
    )
    assert abs(mean / rate - 1) < 0.02


def test_naive_estimate_would_be_low_and_bias_corrected_is_not() -> None:
    # At λI = 1 the naive X/(nI) averages 1 − e^{-1} = 0.63 λ.
    rng = random.Random(3)
    interval, rate, visits, trials = DAY_S, 1 / DAY_S, 20, 3000
    naive = corrected = 0.0
    for _ in range(trials):
        changes = _simulate_binary(rate, interval, visits, rng)
        naive += changes / (visits * interval)
        corrected += bias_corrected_rate(visits, changes, interval)
    assert naive / trials / rate == pytest.approx(1 - math.exp(-1), abs=0.02)
    assert corrected / trials / rate == pytest.approx(1.0, abs=0.02)


def test_bias_corrected_at_all_changed_is_the_documented_lower_bound() -> None:
    assert bias_corrected_rate(10, 10, 100.0) == pytest.approx(math.log(21) / 100.0)
    assert bias_corrected_rate(10, 0, 100.0) == 0.0


def test_last_modified_estimator_stays_unbiased_where_the_binary_one_saturates() -> None:
    # λI = 5: the binary estimator reads ~0.6λ at n = 10; the Last-Modified one is right.
    rng = random.Random(11)
    interval, rate, visits, trials = DAY_S, 5 / DAY_S, 10, 4000
    lm_total = binary_total = 0.0
    for _ in range(trials):
        changes, observed = 0, 0.0
        for _ in range(visits):
            # Time from the last change before the visit back to the visit, if any change.
            first = rng.expovariate(rate)
            if first < interval:
                changes += 1
                last = first
                while (step := rng.expovariate(rate)) + last < interval:
                    last += step
                observed += interval - last
            else:
                observed += interval
        lm_total += last_modified_rate(visits, changes, observed)
        binary_total += bias_corrected_rate(visits, changes, interval)
    assert lm_total / trials / rate == pytest.approx(1.0, abs=0.03)
    assert binary_total / trials / rate < 0.75


def test_irregular_mle_matches_the_regular_case_and_has_pseudo_data() -> None:
    rng = random.Random(5)
    rate = 1 / DAY_S
    intervals = [rng.uniform(0.3, 1.7) * DAY_S for _ in range(400)]
    changed = [t for t in intervals if rng.expovariate(rate) < t]
    unchanged = sum(intervals) - sum(changed)
    estimate = irregular_rate(changed, unchanged)
    assert estimate / rate == pytest.approx(1.0, abs=0.15)
    # Never infinite when all changed, never 0 when none did.
    assert 0 < irregular_rate([], 10 * DAY_S) < rate
    assert irregular_rate([DAY_S] * 5, 0.0) < math.inf


@given(
    st.lists(st.floats(60.0, 30 * DAY_S), max_size=20),
    st.floats(0.0, 300 * DAY_S),
    st.floats(60.0, 30 * DAY_S),
)
def test_irregular_mle_falls_as_quiet_time_grows(
    changed: list[float], unchanged: float, extra: float
) -> None:
    assert irregular_rate(changed, unchanged + extra) <= irregular_rate(changed, unchanged) * (
        1 + 1e-9
    )


@given(st.integers(1, 200), st.data(), st.floats(60.0, 30 * DAY_S))
def test_corrected_irregular_rate_at_regular_visits_is_its_closed_form(
    visits: int, data: st.DataObject, interval: float
) -> None:
    changes = data.draw(st.integers(0, visits))
    estimate = corrected_irregular_rate(
        [interval] * changes,
        (visits - changes) * interval,
        visits - changes,
        low=1e-15,
        high=1e3,
    )
    expected = math.log((visits + 1) / (visits - changes + 0.5)) / interval
    assert estimate == pytest.approx(expected, rel=1e-6)


def _irregular_trial(
    rate: float, interval: float, visits: int, rng: random.Random
) -> tuple[list[float], float, int]:
    changed: list[float] = []
    unchanged, quiet = 0.0, 0
    for _ in range(visits):
        length = rng.uniform(0.5, 1.5) * interval
        if rng.expovariate(rate) < length:
            changed.append(length)
        else:
            unchanged += length
            quiet += 1
    return changed, unchanged, quiet


@pytest.mark.parametrize(
    ("ratio", "interval", "visits"),
    [(0.1, 7 * DAY_S, 30), (0.5, 7 * DAY_S, 20), (2.0, DAY_S / 4, 20), (3.0, DAY_S / 4, 32)],
)
def test_corrected_irregular_rate_is_less_biased_than_fixed_half_day_pseudo_data(
    ratio: float, interval: float, visits: int
) -> None:
    """Slow pages visited weekly, fast ones every 6 hours, intervals ±50%: the fixed
    half-day pseudo-intervals run high on the slow pages and low on the fast ones (the
    visits they move go to pages that have not changed); on the page's own time scale
    the estimate stays within 20% at the slow end and 10% from λI = 0.5 up."""
    rng = random.Random(11)
    rate = ratio / interval
    corrected, fixed = [], []
    for _ in range(1500):
        changed, unchanged, quiet = _irregular_trial(rate, interval, visits, rng)
        corrected.append(
            corrected_irregular_rate(changed, unchanged, quiet, low=1e-12, high=1.0) / rate
        )
        fixed.append(irregular_rate(changed, unchanged, low=1e-12, high=1.0) / rate)
    bias = abs(sum(corrected) / len(corrected) - 1)
    assert bias < abs(sum(fixed) / len(fixed) - 1)
    assert bias < (0.2 if ratio < 0.5 else 0.1)


def test_corrected_irregular_rate_is_never_zero_nor_infinite() -> None:
    rate = 1 / DAY_S
    assert 0 < corrected_irregular_rate([], 10 * DAY_S, 10) < rate
    assert corrected_irregular_rate([DAY_S] * 5, 0.0, 0) < math.inf
    # Nothing seen yet: the pseudo-data alone, on the default scale.
    assert 0 < corrected_irregular_rate([], 0.0, 0, default_s=DAY_S) < 7 / DAY_S


@given(
    st.lists(st.floats(60.0, 30 * DAY_S), max_size=20),
    st.floats(0.0, 300 * DAY_S),
    st.integers(0, 50),
    st.floats(60.0, 30 * DAY_S),
)
def test_corrected_irregular_rate_falls_as_quiet_time_grows(
    changed: list[float], unchanged: float, quiet: int, extra: float
) -> None:
    # each of the ``quiet`` unchanged intervals is at least 60 s, like the changed ones: a
    # visit never follows another at once (``unchanged`` 0 s over one visit, a zero time
    # scale, is no page's history; the estimate falls back to the default scale there)
    unchanged += 60.0 * quiet
    before = corrected_irregular_rate(changed, unchanged, quiet)
    assert corrected_irregular_rate(changed, unchanged + extra, quiet) <= before * (1 + 1e-9)


def test_complete_observation_rate() -> None:
    assert complete_rate(9, 9.5 * DAY_S) == pytest.approx(9.5 / (10 * DAY_S))


# -- schedule ------------------------------------------------------------------------------------


@given(st.floats(1e-9, 1e-2), st.floats(1e-9, 1e-2), st.floats(0.1, 10.0), st.floats(1e-3, 1e6))
def test_harmonic_rate_rises_in_change_rate_and_saturates(
    a: float, b: float, weight: float, mu: float
) -> None:
    low, high = sorted((a, b))
    assert harmonic_rate(low, weight, mu) <= harmonic_rate(high, weight, mu) * (1 + 1e-12)
    assert harmonic_rate(high, weight, mu) <= weight / mu * (1 + 1e-12)


@given(st.floats(1e-8, 1e-5), st.floats(1.5, 100.0), st.floats(1e-2, 1e8))
def test_interval_is_never_proportional_to_one_over_the_change_rate(
    rate: float, factor: float, mu: float
) -> None:
    # A page changing `factor` times faster gets fewer than `factor` times the visits.
    slow, fast = harmonic_rate(rate, 1.0, mu), harmonic_rate(rate * factor, 1.0, mu)
    assert fast >= slow
    assert fast / slow < factor


@given(
    st.lists(st.floats(1e-8, 1e-3), min_size=1, max_size=40),
    st.floats(0.01, 0.99),
)
def test_fit_mu_spends_the_budget_within_the_clamps(rates: list[float], share: float) -> None:
    pages = [(rate, 1.0) for rate in rates]
    floor_total = len(pages) / LANE.min_s
    cap_total = len(pages) / LANE.max_s
    budget = cap_total + share * (floor_total - cap_total)
    mu = fit_mu(pages, budget, LANE)
    spent = sum(lane_rates(pages, mu, LANE))
    assert spent == pytest.approx(budget, rel=1e-6)
    for rho in lane_rates(pages, mu, LANE):
        assert 1 / LANE.max_s * (1 - 1e-12) <= rho <= 1 / LANE.min_s * (1 + 1e-12)


def test_fit_mu_with_an_unreachable_budget_pins_pages_to_a_clamp() -> None:
    pages = [(1 / DAY_S, 1.0)] * 10
    generous = fit_mu(pages, 1.0, LANE)
    assert all(rho == pytest.approx(1 / LANE.min_s) for rho in lane_rates(pages, generous, LANE))
    stingy = fit_mu(pages, 1e-12, LANE)
    assert all(rho == pytest.approx(1 / LANE.max_s) for rho in lane_rates(pages, stingy, LANE))


@given(
    st.floats(0.0, 1e-2),
    st.floats(1e-3, 1e8),
    st.one_of(st.none(), st.floats(1.0, 100 * DAY_S)),
)
def test_recrawl_interval_is_clamped_and_grows_at_most_twofold(
    rate: float, mu: float, previous: float | None
) -> None:
    interval = recrawl_interval(rate, 1.0, mu, LANE, previous_s=previous)
    assert LANE.min_s <= interval <= LANE.max_s
    if previous is not None:
        assert interval <= max(LANE.min_s, 2 * previous)


@given(
    st.floats(1e9, 2e9),
    st.floats(0, 1e8),
    st.floats(1.0, 100 * DAY_S),
    st.floats(0.0, 2.0),
)
def test_next_due_is_never_in_the_past_nor_before_the_floor(
    now: float, back: float, interval: float, jitter: float
) -> None:
    due = next_due_at(now, now - back, interval, LANE, jitter=jitter)
    assert due >= now + LANE.min_s
    assert due >= now - back + interval * 0.95


def test_first_interval_uses_the_cache_heuristic_when_dates_are_sane() -> None:
    assert first_interval(LANE, date_s=1e9, last_modified_s=1e9 - 20 * DAY_S) == 2 * DAY_S
    assert first_interval(LANE, date_s=1e9, last_modified_s=1e9 + 5) == LANE.default_s
    assert first_interval(LANE) == LANE.default_s


def test_lane_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        LaneSchedule(min_s=10.0, max_s=5.0, default_s=7.0)


def test_window_unchanged_keeps_the_kept_changes_share_of_the_unchanged_time() -> None:
    assert window_unchanged(1000.0, changes=20, kept=32) == 1000.0  # the ring holds them all
    assert window_unchanged(1000.0, changes=0, kept=0) == 1000.0
    assert window_unchanged(1000.0, changes=128, kept=32) == pytest.approx(250.0)
