"""The benchmark's medians over rounds (``compare_scrapy.combine_rounds``) hide no violation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from compare_scrapy import combine_rounds  # noqa: E402


def _run(pages_per_s: float, violations: dict[str, int]) -> dict[str, Any]:
    return {
        "pages_per_s": pages_per_s,
        "cpu_ms_per_page": 1000.0 / pages_per_s,
        "efficiency": 0.5,
        "coverage": 0.1,
        "violations": sum(violations.values()),
        "violations_by_kind": violations,
    }


def test_the_median_run_carries_every_rounds_violations() -> None:
    made = [
        _run(900.0, {"gap": 0, "host_overlap": 0}),
        _run(1000.0, {"gap": 0, "host_overlap": 0}),
        _run(1100.0, {"gap": 2, "host_overlap": 1}),  # the fastest run was rude
    ]
    combined = combine_rounds(made)
    assert combined["pages_per_s"] == 1000.0  # the run of median pages/s
    assert combined["violations"] == 3
    assert combined["violations_by_kind"] == {"gap": 2, "host_overlap": 1}
    assert [r["pages_per_s"] for r in combined["rounds"]] == [900.0, 1000.0, 1100.0]


def test_one_round_is_that_run_unchanged() -> None:
    run = _run(1000.0, {"gap": 1})
    assert combine_rounds([run]) == run
