"""The recrawl simulator (benchmarks/recrawl_sim.py) against the closed form, and the
crawl's schedule against uniform revisits on it (a small web; the benchmark's figures
are in docs/recrawl.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def sim() -> ModuleType:
    path = Path(__file__).parents[3] / "benchmarks" / "recrawl_sim.py"
    spec = importlib.util.spec_from_file_location("recrawl_sim", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["recrawl_sim"] = module
    spec.loader.exec_module(module)
    return module


def test_uniform_freshness_matches_the_closed_form(sim: ModuleType) -> None:
    rates, times = sim.web(300, 90.0, seed=3)
    row = sim.run("uniform", rates, times, 90.0, 300.0)
    assert row["fetches_per_day"] == 300
    assert abs(row["freshness"] - sim.expected_uniform(rates, 1.0)) < 0.005


def test_the_harmonic_schedule_beats_uniform_on_the_same_budget(sim: ModuleType) -> None:
    rates, times = sim.web(300, 90.0, seed=3)
    uniform = sim.run("uniform", rates, times, 90.0, 300.0)
    harmonic = sim.run("harmonic", rates, times, 90.0, 300.0)
    assert abs(harmonic["fetches_per_day"] - 300) <= 6
    assert harmonic["freshness"] > uniform["freshness"]
    assert harmonic["age_days"] < uniform["age_days"]
    assert harmonic["no_change_share"] < uniform["no_change_share"] - 0.1
