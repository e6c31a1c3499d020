"""Recrawl policy (pure): how fast a page changes, and when to visit it next.

Everything here is a pure function of its arguments; "now" is passed in (callers read it
from their injected :class:`~courtly.clock.Clock`) and jitter is a number the caller
draws. Rates are changes per second, intervals and times seconds (times epoch seconds).

Change-rate estimators (Cho & Garcia-Molina, "Estimating frequency of change", 2003),
for a page modelled as a Poisson process of rate λ that a visit sees only as
"changed since the last visit" or not:

* :func:`bias_corrected_rate` — regular visits: λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I.
  Never the naive X/(n·I), which underestimates (0.63 λ at λI = 1) and cannot exceed 1/I.
* :func:`irregular_rate` — irregular visits: the maximum-likelihood root of
  Σ_changed t/(e^{λt} − 1) = Σ_unchanged t, with pseudo-data so that it always exists,
  bisected in log space; :func:`corrected_irregular_rate` puts that pseudo-data on the
  page's own time scale (half an unchanged and half a changed mean interval), the
  irregular form of the bias-corrected estimator.
* :func:`last_modified_rate` — when the server's Last-Modified has proved honest:
  λ̂ = (X − 1 − X/(n·ln(1 − X/n))) / T, T = time from each change seen (its
  Last-Modified) to the visit that saw it, plus the unchanged intervals. Unbiased far
  past where the binary estimators saturate.

Schedule (Kolobov et al., NeurIPS 2019): minimise the importance-weighted harmonic
staleness, which gives the revisit rate ρ = (√(λ² + 4wλ/μ) − λ)/2 per page
(:func:`harmonic_rate`). ρ ≈ √(wλ/μ) for slow pages and saturates at w/μ for fast ones,
so the interval is *never* proportional to 1/λ (provably worse than uniform revisits,
docs/recrawl.md). One μ per lane is fitted so that the clamped rates sum to the lane's
revisit budget (:func:`fit_mu`); :func:`recrawl_interval` clamps 1/ρ to the lane's
[min, max] and to at most twice the previous interval; :func:`next_due_at` spaces the
visit and never schedules it in the past (the Nutch NUTCH-1564 trap).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DAY_S",
    "LaneSchedule",
    "bias_corrected_rate",
    "complete_rate",
    "corrected_irregular_rate",
    "first_interval",
    "fit_mu",
    "harmonic_rate",
    "irregular_rate",
    "lane_rates",
    "last_modified_rate",
    "next_due_at",
    "recrawl_interval",
    "window_unchanged",
]

DAY_S = 86_400.0
_BISECT_STEPS = 100


@dataclass(frozen=True, slots=True)
class LaneSchedule:
    """One lane's revisit bounds: ``min_s``/``max_s`` clamp every interval (seconds),
    ``default_s`` is the interval before the history says anything (the first visits),
    ``weight`` the importance w of its pages in the harmonic-staleness cost.
    ``visits_per_url_s`` is the lane's revisit budget per URL (visits per second) that its
    μ is fitted to; ``None``: one visit per ``default_s`` (the uniform policy's budget)."""

    min_s: float
    max_s: float
    default_s: float
    weight: float = 1.0
    visits_per_url_s: float | None = None

    @property
    def budget_per_url_s(self) -> float:
        """``visits_per_url_s``, or one visit per ``default_s``."""
        if self.visits_per_url_s is not None:
            return self.visits_per_url_s
        return 1.0 / self.default_s

    def __post_init__(self) -> None:
        if not 0 < self.min_s <= self.default_s <= self.max_s:
            raise ValueError("a lane needs 0 < min_s <= default_s <= max_s")
        if self.weight <= 0:
            raise ValueError("a lane's weight must be positive")


# -- estimators --------------------------------------------------------------------------------


def bias_corrected_rate(visits: int, changes: int, interval_s: float) -> float:
    """λ̂ from ``visits`` regular comparisons ``interval_s`` apart, ``changes`` of which changed.

    −ln((n − X + 0.5)/(n + 0.5)) / I: within ±1% for λI ≤ 2 at n = 10. At X = n it is
    ln(2n + 1)/I, a lower bound. 0 when nothing changed or nothing was seen.
    """
    if visits <= 0 or changes <= 0:
        return 0.0
    if not 0 <= changes <= visits or interval_s <= 0:
        raise ValueError("need 0 <= changes <= visits and a positive interval")
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / interval_s


def irregular_rate(
    changed_s: Iterable[float],
    unchanged_s: Iterable[float] | float,
    *,
    pseudo_s: float = DAY_S / 2,
    pseudo_weight: float = 1.0,
    pseudo_unchanged_s: float | None = None,
    low: float = 0.0005 / DAY_S,
    high: float = 7.0 / DAY_S,
) -> float:
    """The maximum-likelihood λ̂ for irregular visits (per second).

    ``changed_s`` are the lengths of the intervals after which a change was seen,
    ``unchanged_s`` those (or their sum) after which none was. Pseudo-data is added so
    that a root always exists (none if every interval changed, 0 if none did): a changed
    ``pseudo_s`` interval counted ``pseudo_weight`` times and ``pseudo_unchanged_s`` of
    unchanged time (by default ``pseudo_s``: Kolobov et al.'s one changed and one
    unchanged interval). The root is bisected in log space on [``low``, ``high``] and
    clamped there.
    """
    changed = [t for t in changed_s if t > 0]
    unchanged_total = (
        unchanged_s if isinstance(unchanged_s, float | int) else sum(unchanged_s)
    ) + (pseudo_s if pseudo_unchanged_s is None else pseudo_unchanged_s)

    def excess(rate: float) -> float:
        # Σ t/(e^{λt} − 1) falls in λ; the root is where it meets the unchanged time.
        seen = sum(t / math.expm1(min(rate * t, 700.0)) for t in changed)
        prior = pseudo_weight * pseudo_s / math.expm1(min(rate * pseudo_s, 700.0))
        return seen + prior - unchanged_total

    if excess(high) >= 0:
        return high
    if excess(low) <= 0:
        return low
    lo, hi = math.log(low), math.log(high)
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2
        if excess(math.exp(mid)) > 0:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def corrected_irregular_rate(
    changed_s: Sequence[float],
    unchanged_s: float,
    unchanged_visits: float,
    *,
    default_s: float = DAY_S,
    low: float = 0.0005 / DAY_S,
    high: float = 7.0 / DAY_S,
) -> float:
    """The bias-corrected λ̂ for irregular visits (per second): the maximum-likelihood root
    of :func:`irregular_rate` with pseudo-data on the page's own time scale.

    ``changed_s`` are the intervals after which a change was seen, ``unchanged_s`` the sum
    of the ``unchanged_visits`` intervals after which none was. With m their mean length
    (``default_s`` before there is any), the pseudo-data is half an unchanged interval of
    m (Cho & Garcia-Molina's bias correction, the n + 0.5 and n − X + 0.5) and half a
    changed one (the Jeffreys prior λ^(−1/2) of a Poisson rate: (X + ½)/T for a slow
    page, so a page never yet seen to change keeps a small positive rate). For regular
    visits it is ln((n + 1)/(n − X + 0.5))/I in closed form.

    Kolobov et al.'s fixed pseudo-intervals (one whole changed and one unchanged
    interval of half a day, whatever the page's spacing) bias both tails: a whole
    pseudo-change is one change more than a slow page showed ((X + 1)/T), and half a day
    of unchanged time set against a page visited every few hours holds its estimate
    down. Both move visits from the fastest pages to the slowest, the ones whose visits
    find nothing (docs/recrawl.md, the simulation).
    """
    changed = [t for t in changed_s if t > 0]
    count = len(changed) + max(0.0, unchanged_visits)
    mean = (sum(changed) + max(0.0, unchanged_s)) / count if count > 0 else default_s
    if mean <= 0:
        mean = default_s
    return irregular_rate(
        changed,
        max(0.0, unchanged_s),
        pseudo_s=mean,
        pseudo_weight=0.5,
        pseudo_unchanged_s=mean / 2,
        low=low,
        high=high,
    )


def window_unchanged(unchanged_s: float, changes: int, kept: int) -> float:
    """The unchanged time that goes with the ``kept`` most recent of ``changes`` changed
    intervals (seconds): ``unchanged_s`` (all of it) times kept/changes.

    :func:`irregular_rate` needs both sides of its equation over the same stretch of
    history. A state keeps only the last changed intervals (a ring) but sums every
    unchanged interval; setting all that unchanged time against only the kept changes
    biases λ̂ low for every page with more changes than the ring holds (after 240 daily
    visits of a page seen changed at every other one, a ring of 32 gives about a third
    of its rate). The share assumes unchanged time spread evenly over the history.
    """
    if changes <= kept or changes <= 0:
        return unchanged_s
    return unchanged_s * kept / changes


def last_modified_rate(visits: int, changes: int, observed_s: float) -> float:
    """λ̂ with Last-Modified dates: (X − 1 − X/(n·ln(1 − X/n))) / T.

    ``visits`` comparisons n, ``changes`` X of them changed; ``observed_s`` T is the sum,
    over changed visits, of (visit time − Last-Modified) plus the unchanged intervals.
    The log term is 0 at X = n. Within ±1% up to λI = 10 at n = 10.
    """
    if visits <= 0 or changes <= 0 or observed_s <= 0:
        return 0.0
    if changes > visits:
        raise ValueError("need changes <= visits")
    log_term = 0.0 if changes == visits else changes / (visits * math.log(1 - changes / visits))
    return max(0.0, (changes - 1 - log_term) / observed_s)


def complete_rate(changes: int, observed_s: float, *, pseudo_s: float = DAY_S / 2) -> float:
    """λ̂ when every change is announced (a trusted feed): (changes + 0.5)/(time + pseudo)."""
    return (changes + 0.5) / (max(0.0, observed_s) + pseudo_s)


# -- schedule ----------------------------------------------------------------------------------


def harmonic_rate(change_rate: float, weight: float, mu: float) -> float:
    """The harmonic-staleness optimal revisit rate ρ = (√(λ² + 4wλ/μ) − λ)/2 (per second).

    Rises with λ and saturates at w/μ; 0 for a page that never changes.
    """
    if change_rate <= 0:
        return 0.0
    lam = change_rate
    # The stable form of (√(λ² + 4wλ/μ) − λ)/2: no cancellation when 4wλ/μ ≪ λ².
    return (2 * weight * lam / mu) / (math.sqrt(lam * lam + 4 * weight * lam / mu) + lam)


def _clamped_rate(change_rate: float, weight: float, mu: float, lane: LaneSchedule) -> float:
    rho = harmonic_rate(change_rate, weight, mu)
    return min(1 / lane.min_s, max(1 / lane.max_s, rho))


def lane_rates(pages: Sequence[tuple[float, float]], mu: float, lane: LaneSchedule) -> list[float]:
    """The clamped revisit rates of ``pages`` ((λ̂, w) pairs) at ``mu``."""
    return [_clamped_rate(lam, w, mu, lane) for lam, w in pages]


def fit_mu(pages: Sequence[tuple[float, float]], budget_per_s: float, lane: LaneSchedule) -> float:
    """The μ at which the clamped rates of ``pages`` sum to ``budget_per_s`` visits/second.

    The sum falls in μ, so μ is bisected in log space. A budget above what the floor
    allows (every page at ``min_s``) or below what the cap needs (every page at
    ``max_s``) gives the extreme μ: the clamps then bind, nobody starves.
    """
    if budget_per_s <= 0:
        raise ValueError("a revisit budget must be positive")
    if not pages:
        return 1.0

    def total(mu: float) -> float:
        return sum(lane_rates(pages, mu, lane))

    lo, hi = math.log(1e-30), math.log(1e30)
    for _ in range(_BISECT_STEPS * 2):
        mid = (lo + hi) / 2
        if total(math.exp(mid)) > budget_per_s:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def first_interval(
    lane: LaneSchedule, *, date_s: float | None = None, last_modified_s: float | None = None
) -> float:
    """The interval before there is a history: 10% of (Date − Last-Modified) (RFC 9111's
    heuristic) when both are known and sane, else the lane's default; clamped."""
    if date_s is not None and last_modified_s is not None and date_s > last_modified_s:
        return min(lane.max_s, max(lane.min_s, 0.1 * (date_s - last_modified_s)))
    return lane.default_s


def recrawl_interval(
    change_rate: float,
    weight: float,
    mu: float,
    lane: LaneSchedule,
    *,
    previous_s: float | None = None,
) -> float:
    """The next revisit interval: 1/ρ clamped to [min_s, max_s], and at most twice
    ``previous_s`` (one quiet spell does not throw a page to the far end)."""
    rho = harmonic_rate(change_rate, weight, mu)
    interval = lane.max_s if rho <= 0 else 1 / rho
    if previous_s is not None and previous_s > 0:
        interval = min(interval, 2 * previous_s)
    return min(lane.max_s, max(lane.min_s, interval))


def next_due_at(
    now: float, last_fetch_at: float, interval_s: float, lane: LaneSchedule, *, jitter: float = 1.0
) -> float:
    """When to visit next: ``last_fetch_at + interval_s·jitter``, never before ``now + min_s``.

    ``jitter`` is drawn by the caller in [0.95, 1.05] (even spacing beats random
    spacing, so keep it small); a value outside is clamped there.
    """
    jitter = min(1.05, max(0.95, jitter))
    return max(now + lane.min_s, last_fetch_at + interval_s * jitter)
