"""Which machine, exactly: the identity every artifact records (records/machine.py), read on the simulated
ROCm host through its tools and its amdsmi library, shown by doctor and the summary, sealed in the raw
log, and held equal by compare (partition mode, driver, power cap) unless --may-differ names it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ab_harness import BASE, HARNESS, PASSED
from check_edits import check, edit
from doctor_cmd import doctor

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.records.artifact import read_artifact
from pytest_gpuverify.simulator import load_state, save_state

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory, docker_client) -> dict:
    """One harness run on the simulated host in SPX/NPS1 (T-1), then in CPX/NPS4 (T-2), then at a 600 W
    cap with another driver (T-3), and once with the amdsmi library in-process (T-4)."""
    from kernel_repos import commit
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path_factory.mktemp("machine") / "host", docker_client) as box:
        (box.repo / "bench" / "ab_same.py").write_text(HARNESS.format(base=BASE, head=BASE, check=PASSED, rounds=False))
        (box.repo / "gpuverify.toml").write_text(
            '[[targets]]\nname = "ab-same"\nkind = "bench"\ncommand = "python3 bench/ab_same.py"\n'
        )
        commit(box.repo, "a harness")
        runs = ("--gpu-repeats", "5")  # five processes a side: compare calls rows only from runs
        first = box.pytest("gpuverify.toml", *runs, ticket="T-1")
        state = load_state(box.state_path)
        for gpu in state.gpus:
            gpu.compute_partition, gpu.memory_partition = "CPX", "NPS4"
        save_state(state, box.state_path)
        box.pytest("gpuverify.toml", *runs, ticket="T-2")
        for gpu in state.gpus:
            gpu.compute_partition, gpu.memory_partition, gpu.power_cap_w = "SPX", "NPS1", 600.0
        state.amdgpu_version = "6.10.5"
        save_state(state, box.state_path)
        box.pytest("gpuverify.toml", *runs, ticket="T-3")
        box.pytest("gpuverify.toml", ticket="T-4", env={"ROCM_PATH": str(box.sim_bin)})
        paths = {t: box.tickets / t / "bench_ab-same.json" for t in ("T-1", "T-2", "T-3", "T-4")}
        for path in paths.values():
            assert path.exists(), box.last.stdout.decode()[-3000:]
        yield {"paths": paths, "summary": first.stdout.decode(), "box": box}


def test_every_artifact_names_the_machine(two_hosts, capsys):
    art = read_artifact(two_hosts["paths"]["T-1"])
    m = art.machine
    assert m is not None and m.vendor == "rocm" and m.read_with.startswith("rocm-smi")
    assert m.gpus_visible == 4 and [g.index for g in m.gpus] == [0, 1, 2, 3]
    assert m.driver == "amdgpu 6.12.12" and m.runtime == "ROCm 6.4.1"
    assert m.hostname == art.host and m.boot_id and m.kernel
    assert {(g.compute_partition, g.memory_partition, g.power_cap_w) for g in m.gpus} == {("SPX", "NPS1", 750.0)}
    assert all(
        g.name == "AMD Instinct MI300X" and g.arch == "gfx942" and g.serial and g.vbios and g.uuid for g in m.gpus
    )
    # the tools do not print ECC or clock limits: each is unknown, and says why
    assert m.gpus[0].ecc_mode is None and any(
        u.startswith("ecc_mode of gpu 0, 1, 2, 3: read through the amdsmi") for u in m.unknowns
    ), m.unknowns
    assert main(["check", str(two_hosts["paths"]["T-1"])]) == 0
    assert (
        "machine: AMD Instinct MI300X gfx942, 4 visible, amdgpu 6.12.12, ROCm 6.4.1, SPX/NPS1, 750 W"
        in two_hosts["summary"]
    ), two_hosts["summary"][-2000:]


def test_the_library_reads_what_the_tools_do_and_more(two_hosts):
    tools, library = (read_artifact(two_hosts["paths"][t]).machine for t in ("T-3", "T-4"))
    assert library is not None and tools is not None and library.read_with.startswith("amdsmi library")
    assert library.driver == tools.driver == "amdgpu 6.10.5"
    for a, b in zip(library.gpus, tools.gpus):
        same = (
            "name",
            "arch",
            "uuid",
            "serial",
            "vbios",
            "bdf",
            "compute_partition",
            "memory_partition",
            "power_cap_w",
        )
        assert {k: getattr(a, k) for k in same} == {k: getattr(b, k) for k in same}
    assert {(g.ecc_mode, g.ecc_corrected, g.sm_mhz_max) for g in library.gpus} == {("enabled", 0, 2100.0)}


def test_an_unsigned_edit_of_the_machine_fails_check(two_hosts, capsys, tmp_path):
    folder = tmp_path / "T-1"
    shutil.copytree(two_hosts["paths"]["T-1"].parent, folder)
    path = folder / "bench_ab-same.json"
    edit(path, lambda d: d["machine"]["gpus"][0].update(power_cap_w=600.0))
    rc, mismatches, out = check(path, capsys)
    assert rc != 0 and any("machine differs from the record the raw output's trailer seals" in m for m in mismatches), (
        out
    )
    edit(path, lambda d: d.pop("machine"))
    rc, mismatches, out = check(path, capsys)
    assert rc != 0 and any("machine is missing" in m for m in mismatches), out


@pytest.mark.parametrize(
    "other, fact, base, head",
    [
        ("T-2", "partition", "SPX/NPS1", "CPX/NPS4"),
        ("T-3", "power_cap", "750 W", "600 W"),
    ],
)
def test_compare_refuses_unlike_machines_unless_allowed(two_hosts, capsys, other, fact, base, head):
    paths = two_hosts["paths"]
    capsys.readouterr()
    assert main(["compare", str(paths["T-1"]), str(paths[other])]) == 2
    err = capsys.readouterr().err
    assert f"{fact} (" in err and f"base {base}, head {head}" in err, err
    names = "driver,power-cap" if fact == "power_cap" else fact  # T-3 changed the driver too
    assert main(["compare", "--json", "--may-differ", names, str(paths["T-1"]), str(paths[other])]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {d["field"] for d in out["allowed_differences"]} == set(names.replace("-", "_").split(","))
    assert out["pairs"] and {p["call"] for p in out["pairs"]} == {"SAME"}
    assert main(["compare", "--may-differ", names, str(paths["T-1"]), str(paths[other])]) == 0
    assert f"allowed to differ: {fact}" in capsys.readouterr().out


def test_an_artifact_without_a_machine_is_noted_not_refused(two_hosts, capsys, tmp_path):
    """An artifact written before the machine was recorded: compared, with a note per unrecorded fact."""
    from pytest_gpuverify.compare.command import decide
    from pytest_gpuverify.records.artifact import read_artifact as read

    base = read(two_hosts["paths"]["T-1"]).model_copy(update={"machine": None})
    result = decide(base, read(two_hosts["paths"]["T-2"]))
    assert (
        "partition (compute/memory partition mode (MIG mode on NVIDIA) of the GPUs held) not recorded by the base: "
        "not held equal" in result.notes
    )


def test_doctor_shows_the_machine(sandbox):
    state = load_state(sandbox.state_path)
    state.gpus[2].compute_partition = "DPX"
    save_state(state, sandbox.state_path)
    code, out = doctor(sandbox)
    assert code == 0, out
    line = next(x for x in out.splitlines() if x.startswith("machine "))
    assert "4 visible" in line and "amdgpu 6.12.12" in line and "SPX/NPS1, DPX/NPS1" in line and "750 W" in line, line
    assert "  gpu 2   AMD Instinct MI300X gfx942" in out and "DPX/NPS1  cap 750 W" in out, out


def test_a_path_kept_shows_here(two_hosts):
    """The fixed facts of later sessions on one boot come from the cache (place/machine.py), the rest afresh."""
    arts = [read_artifact(Path(two_hosts["paths"][t])).machine for t in ("T-1", "T-2")]
    assert arts[1] is not None and arts[1].kept_from and arts[1].kept_from.startswith("an earlier session of this boot")
    assert {g.compute_partition for g in arts[1].gpus} == {"CPX"}
