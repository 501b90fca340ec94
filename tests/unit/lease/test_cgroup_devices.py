"""A Slurm grant cross-checked with the job's cgroup (v1 ``devices.list``): a granted GPU whose device the
cgroup does not allow is refused in one line naming both; cgroup v2 says "not readable" and goes on.
The cgroup is written files under a scratch root; the GPU's device is a real character device of this
host (/dev/null, 1:3, and /dev/zero, 1:5), since the GPU nodes themselves need not exist here."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.lease.cgroup_devices import allows, check_grant, devices_list

JOB = "/slurm/uid_0/job_41/step_batch"
GRANTER = "slurm job 41 (SLURM_JOB_GPUS)"


def cgroup_v1(root: Path, rules: str, line: str = f"5:devices:{JOB}") -> Path:
    """A /proc/self/cgroup naming a devices cgroup, and that cgroup's devices.list; returns the former."""
    proc = root / "proc-self-cgroup"
    proc.write_text(f"9:name=systemd:/\n{line}\n4:memory:{JOB}\n0::/\n")
    folder = root / "cgroup" / "devices" / JOB.lstrip("/")
    folder.mkdir(parents=True)
    (folder / "devices.list").write_text(rules)
    return proc


def test_a_granted_gpu_whose_device_the_cgroup_allows_goes_on(tmp_path):
    proc = cgroup_v1(tmp_path, "c 1:3 rwm\nc 195:255 rw\n")
    check = check_grant([1], {1: "/dev/null"}, GRANTER, proc, tmp_path / "cgroup")
    assert check.refused is None
    assert check.said == f"the cgroup's {tmp_path}/cgroup/devices{JOB}/devices.list allows GPU 1's /dev/null"


def test_a_granted_gpu_whose_device_the_cgroup_does_not_allow_is_refused_naming_both(tmp_path):
    # the job's cgroup allows 1:3 (its GPU); the grant variable names another GPU, whose device is 1:5
    proc = cgroup_v1(tmp_path, "c 1:3 rwm\n")
    check = check_grant([0, 2], {0: "/dev/null", 2: "/dev/zero"}, GRANTER, proc, tmp_path / "cgroup")
    listing = f"{tmp_path}/cgroup/devices{JOB}/devices.list"
    assert check.refused is not None and "\n" not in check.refused
    assert check.refused.startswith(
        f"slurm job 41 (SLURM_JOB_GPUS) granted GPU 2, but this job's cgroup ({listing}) does not allow its "
        "device /dev/zero (c 1:5)"
    ), check.refused
    assert "Fix:" in check.refused


def test_read_only_access_is_not_enough_to_use_a_gpu(tmp_path):
    proc = cgroup_v1(tmp_path, "c 1:* r\n")
    assert check_grant([0], {0: "/dev/null"}, GRANTER, proc, tmp_path / "cgroup").refused is not None


def test_everything_allowed_and_wildcards_match():
    assert allows("a *:* rwm\n", "c", 226, 128)
    assert allows("c 226:* rw\n", "c", 226, 129)
    assert not allows("b 226:* rwm\n", "c", 226, 129)
    assert not allows("c 226:128 rwm\n", "c", 226, 129)
    assert not allows("garbage\n\nc 226\n", "c", 226, 128)


def test_cgroup_v2_is_not_readable_and_the_grant_stands(tmp_path):
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"0::{JOB}\n")
    check = check_grant([0], {0: "/dev/null"}, GRANTER, proc, tmp_path / "cgroup")
    assert check.refused is None
    assert check.said.startswith("the cgroup's devices are not readable: cgroup v2") and "eBPF" in check.said


@pytest.mark.parametrize("case", ["no proc file", "no devices.list"])
def test_an_unreadable_v1_cgroup_says_so_and_goes_on(tmp_path, case):
    if case == "no proc file":
        proc = tmp_path / "absent"
    else:
        proc = tmp_path / "proc-self-cgroup"
        proc.write_text(f"5:devices:{JOB}\n")
    check = check_grant([0], {0: "/dev/null"}, GRANTER, proc, tmp_path / "cgroup")
    assert check.refused is None and "not readable" in check.said, check.said


def test_a_gpu_without_a_known_device_file_is_not_checked(tmp_path):
    proc = cgroup_v1(tmp_path, "c 1:3 rwm\n")
    check = check_grant([0], {}, GRANTER, proc, tmp_path / "cgroup")
    assert check.refused is None and "not checked" in check.said
    check = check_grant([0], {0: str(tmp_path / "no-such-device")}, GRANTER, proc, tmp_path / "cgroup")
    assert check.refused is None and "not checked" in check.said


def test_a_combined_mount_is_found_by_its_controller_list(tmp_path):
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"5:devices,freezer:{JOB}\n")
    folder = tmp_path / "cgroup" / "devices,freezer" / JOB.lstrip("/")
    folder.mkdir(parents=True)
    (folder / "devices.list").write_text("a *:* rwm\n")
    found, _ = devices_list(proc, tmp_path / "cgroup")
    assert found == folder / "devices.list"
