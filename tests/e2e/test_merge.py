"""``gpuverify merge``: two CI shards' ticket folders become one; every artifact still passes check."""

from __future__ import annotations

import pytest

from pytest_gpuverify.cli.check import run_check
from pytest_gpuverify.cli.main import main

pytestmark = pytest.mark.docker


def test_merge_two_shards_refuses_a_topic_twice_unless_keep_all(sandbox, tmp_path, capsys):
    """Two shards of ticket S, each folder downloaded under a name of the CI's (shard-1, shard-2)."""
    sandbox.pytest("op_tests/test_gemm_a8w8.py", "op_tests/test_moe_2stage.py", ticket="S")
    s1 = (sandbox.tickets / "S").rename(tmp_path / "shard-1")
    sandbox.pytest("op_tests/test_rmsnorm2d.py", "op_tests/test_gemm_a8w8.py", ticket="S")
    s2 = (sandbox.tickets / "S").rename(tmp_path / "shard-2")
    out = tmp_path / "merged" / "S"
    assert main(["merge", str(s1), str(s2), "-o", str(out)]) == 1
    said = capsys.readouterr().out
    assert "REFUSED" in said and "bench_gemm_a8w8.json" in said and "--keep-all" in said
    assert not list(out.glob("bench_*.json")), "a refused merge copies nothing: no half-filled folder"

    kept = tmp_path / "kept" / "S"
    assert main(["merge", str(s1), str(s2), "-o", str(kept), "--keep-all"]) == 0
    names = sorted(p.name for p in kept.glob("bench_*.json"))
    assert names == [
        "bench_gemm_a8w8.from-shard-2.json",
        "bench_gemm_a8w8.json",
        "bench_moe_2stage.json",
        "bench_rmsnorm2d.json",
    ]
    assert (kept / "bench_gemm_a8w8.json").read_bytes() == (s1 / "bench_gemm_a8w8.json").read_bytes()
    assert list(kept.glob("bench_*.log")), "the raw logs come along"
    capsys.readouterr()
    for name in names:
        assert run_check(str(kept / name)) == 0, capsys.readouterr().out
    # the same folder merged again: identical files are taken once, nothing is overwritten
    assert main(["merge", str(s1), "-o", str(kept)]) == 0
    # the output is the ticket's folder: a folder of another name is refused before anything is copied
    elsewhere = tmp_path / "elsewhere"
    capsys.readouterr()
    assert main(["merge", str(s1), "-o", str(elsewhere)]) == 1
    said = capsys.readouterr().out
    assert "its ticket is S: it lands only in a folder named S (-o .../S)" in said, said
    assert not elsewhere.exists(), "nothing copied"
