"""The small sandbox world these tests read (no server): its truth, a port, a start time."""

from __future__ import annotations

import pytest

from courtly.sandbox import SandboxSpec, SandboxTruth, SandboxWorld

PORT = 8123
T0 = 1_700_000_000.0
"""When the requests of a made-up log start (epoch seconds)."""


def small_truth() -> SandboxTruth:
    """What is true of ``SandboxSpec.small()`` served on :data:`PORT`."""
    return SandboxTruth(SandboxWorld(SandboxSpec.small(), PORT))


@pytest.fixture(scope="module")
def truth() -> SandboxTruth:
    return small_truth()


def host_with_robots(truth: SandboxTruth, variant: str) -> str:
    """The first host whose robots.txt is of ``variant`` (``rules``, ``crawl_delay``, ...)."""
    return next(h.name for h in truth.world.hosts if h.robots_variant == variant)
