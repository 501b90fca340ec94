"""The kernels' identity from a real trace and a real JIT cache: the demo's traced lab harness under the
simulated rocprofv3 leaves its Triton-style cache entry; the lookup script runs as the engine runs it (a
subprocess) and names each kernel's code object by sha256; compare notes rows by their binaries."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from traced_lab import traced

from pytest_gpuverify.compare.kernels import kernel_notes
from pytest_gpuverify.engine.runs_log import parse_log
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import Artifact, KernelRecord
from pytest_gpuverify.trace.corroborate import corroborate
from pytest_gpuverify.trace.identity import kernel_records, lookup_argv, parse_lookup
from pytest_gpuverify.trace.launches import Launch
from pytest_gpuverify.trace.readers import read_trace


def kernels_of(root, variant):
    db, log, cache = traced(root, variant=variant)
    launches = read_trace(db, "rocpd")
    found = corroborate(parse_log("bench", log, ParseContext()).perf, launches, None)
    out = subprocess.run(lookup_argv(sys.executable, [str(cache)], launches), capture_output=True, check=True).stdout
    return kernel_records(launches, found, *parse_lookup(out)), cache


def test_each_kernel_is_named_with_its_grid_rows_and_code_object(tmp_path):
    kernels, cache = kernels_of(tmp_path, "v1")
    [hsaco] = list(cache.rglob("gemm_kernel.hsaco"))
    gemm = [k for k in kernels if k.name == "gemm_kernel"]
    assert [(k.grid, k.launches, k.rows) for k in gemm] == [
        ([512, 64, 1], 51, ["m=128, n=4096, k=4096 us"]),
        ([1024, 64, 1], 51, ["m=256, n=4096, k=4096 us"]),
        ([2048, 128, 1], 51, ["m=512, n=8192, k=4096 us"]),
    ]
    assert all(k.code_objects == [hashlib.sha256(hsaco.read_bytes()).hexdigest()] for k in gemm)
    fill = [k for k in kernels if k.name == "fill_buffer"]
    assert [(k.launches, k.rows, k.code_objects) for k in fill] == [(3, [], [])]  # no cache entry of that name


def test_a_file_backed_code_object_is_hashed_over_its_byte_range(tmp_path):
    so = tmp_path / "module.so"
    so.write_bytes(b"HEADER__" + b"the kernel's bytes" + b"__TRAILER")
    uri = f"file://{so}#offset=8&size=18"
    launch = Launch("ck_gemm", (64, 1, 1), 0, 1000, uri)
    out = subprocess.run(lookup_argv(sys.executable, [], [launch]), capture_output=True, check=True).stdout
    [record] = kernel_records([launch], None, *parse_lookup(out))
    assert record.code_objects == [hashlib.sha256(b"the kernel's bytes").hexdigest()]
    assert record.code_object_paths == [str(so)]
    assert parse_lookup(b"Traceback: no json") == ({}, {})  # a lookup that failed finds nothing


def test_compare_notes_same_binaries_and_differing_kernels(tmp_path):
    v1, _ = kernels_of(tmp_path / "a", "v1")
    v1_again, _ = kernels_of(tmp_path / "b", "v1")
    v2, _ = kernels_of(tmp_path / "c", "v2")

    def art(kernels):
        return Artifact(topic="traced", ts="2026-01-01T00:00:00Z", kernels=kernels)

    [same] = kernel_notes(art(v1), art(v1_again))
    assert same.startswith("same binaries: SAME by construction: m=128, n=4096, k=4096 us; m=256, n=4096, k=4096 us")
    differ = kernel_notes(art(v1), art(v2))
    assert len(differ) == 3 and differ[0].startswith(
        "dispatched kernels differ: m=128, n=4096, k=4096 us: the base ran gemm_kernel grid 512x64x1 ("
    )
    fallback = [k.model_copy(update={"name": "gemm_fallback"}) if k.name == "gemm_kernel" else k for k in v1_again]
    assert any("the head gemm_fallback grid 512x64x1" in n for n in kernel_notes(art(v1), art(fallback)))
    # kernels without a known code object prove nothing alike; one A/B artifact has no other side
    bare = [KernelRecord(name="k", grid=[1], rows=["x us"])]
    assert kernel_notes(art(bare), art(bare)) == [] and kernel_notes(art(v1), None) == []
