"""The cores a crawl may use (``courtly.parallel.cores``): the affinity mask, cut to the
whole cores of the cgroup's CPU quota, read from a cgroup tree laid out in a temporary
directory as Linux lays it out (version 2, version 1, a container's view)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from courtly.parallel.cores import available_cores, cgroup_cpu_quota


def _tree(root: Path, files: dict[str, str], proc_cgroup: str) -> Path:
    for name, text in files.items():
        path = root / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "cgroup").mkdir(exist_ok=True)
    proc = root / "proc-self-cgroup"
    proc.write_text(proc_cgroup)
    return proc


def _quota(root: Path, files: dict[str, str], proc_cgroup: str) -> float | None:
    proc = _tree(root, files, proc_cgroup)
    return cgroup_cpu_quota(proc_cgroup=proc, cgroup_root=root / "cgroup")


def test_version_2_quota_is_quota_over_period(tmp_path: Path) -> None:
    files = {"cpu.max": "max 100000\n", "kubepods/pod1/cpu.max": "250000 100000\n"}
    assert _quota(tmp_path, files, "0::/kubepods/pod1\n") == 2.5


def test_version_2_without_a_quota_is_none(tmp_path: Path) -> None:
    files = {"cpu.max": "max 100000\n", "user.slice/cpu.max": "max 100000\n"}
    assert _quota(tmp_path, files, "0::/user.slice\n") is None


def test_a_parents_tighter_quota_binds_its_child(tmp_path: Path) -> None:
    files = {"a/cpu.max": "100000 100000\n", "a/b/cpu.max": "400000 100000\n"}
    assert _quota(tmp_path, files, "0::/a/b\n") == 1.0


def test_a_container_sees_its_own_cgroup_at_the_mount(tmp_path: Path) -> None:
    """Docker without a cgroup namespace: ``/proc/self/cgroup`` names the container
    from the host's root, the file system is the container's own cgroup."""
    files = {"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}
    assert _quota(tmp_path, files, "4:cpu,cpuacct:/docker/0123abcd\n1:memory:/x\n") == 2.0


def test_version_1_without_a_quota_is_none(tmp_path: Path) -> None:
    files = {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}
    assert _quota(tmp_path, files, "3:cpu,cpuacct:/\n") is None


def test_unreadable_or_garbled_files_mean_no_quota(tmp_path: Path) -> None:
    assert cgroup_cpu_quota(proc_cgroup=tmp_path / "absent", cgroup_root=tmp_path) is None
    files = {"cpu.max": "lots 0\n"}
    assert _quota(tmp_path, files, "0::/\n") is None


@pytest.mark.parametrize(("quota", "expected"), [("150000 100000", 1), ("50000 100000", 1)])
def test_available_cores_are_the_quotas_whole_cores_at_least_one(
    tmp_path: Path, quota: str, expected: int
) -> None:
    proc = _tree(tmp_path, {"cpu.max": quota + "\n"}, "0::/\n")
    assert available_cores(proc_cgroup=proc, cgroup_root=tmp_path / "cgroup") == min(
        expected, len(os.sched_getaffinity(0))
    )


def test_without_a_quota_the_affinity_mask_counts(tmp_path: Path) -> None:
    proc = _tree(tmp_path, {"cpu.max": "max 100000\n"}, "0::/\n")
    cores = available_cores(proc_cgroup=proc, cgroup_root=tmp_path / "cgroup")
    assert cores == len(os.sched_getaffinity(0))
