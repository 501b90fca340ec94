"""NVLink multicast off in every command on NVIDIA (targets.multicast_off, RunEnvironment), unless the
place or the target sets the variables itself; and `gpuverify check` expects what the engine gave."""

from __future__ import annotations

from pytest_gpuverify.config.targets import MULTICAST_OFF, RunEnvironment, multicast_off
from pytest_gpuverify.place.provenance import CONTAINER_ENV_RECORDED


def _env(vendor: str, place: dict[str, str], declared: dict[str, str] | None = None) -> dict[str, str]:
    return RunEnvironment(
        visible_var="CUDA_VISIBLE_DEVICES" if vendor == "nvidia" else "HIP_VISIBLE_DEVICES",
        visible_value="0,1,2,3",
        pythonpath="/wt",
        kind="pytest",
        declared=declared or {},
        multicast=multicast_off(vendor, place),
    ).as_env()


def test_nvidia_command_gets_all_three_switches_off() -> None:
    env = _env("nvidia", {})
    assert {k: env[k] for k in MULTICAST_OFF} == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }


def test_rocm_command_gets_none() -> None:
    assert not set(MULTICAST_OFF) & set(_env("rocm", {}))


def test_the_users_own_value_is_left_to_stand() -> None:
    # the host user's environment (or the container's) sets one: the engine leaves that one out, and
    # the place's value is what the command inherits and the artifact records
    env = _env("nvidia", {"NCCL_NVLS_ENABLE": "1"})
    assert "NCCL_NVLS_ENABLE" not in env
    assert env["NVSHMEM_DISABLE_NVLS"] == "1" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert set(MULTICAST_OFF) <= set(CONTAINER_ENV_RECORDED)


def test_a_declared_env_wins_over_the_default() -> None:
    env = _env("nvidia", {}, declared={"TORCH_SYMM_MEM_DISABLE_MULTICAST": "0"})
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "0" and env["NCCL_NVLS_ENABLE"] == "0"
