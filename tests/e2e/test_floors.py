"""Floors and ceilings: throughput lines read exactly, held to declared limits, re-derived by check."""

from __future__ import annotations

import pytest

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.config.declarations import DeclarationError
from pytest_gpuverify.engine.floors import limit_findings
from pytest_gpuverify.parsers.recognizers.perf_lines import read_throughput as read_line
from pytest_gpuverify.records.artifact import PerfRow

VLLM = "Throughput: 12.34 requests/s, 4567.89 total tokens/s, 2345.67 output tokens/s"


@pytest.mark.parametrize(
    "line, name, metrics",
    [
        (VLLM, "Throughput", {"req/s": 12.34, "total tok/s": 4567.89, "output tok/s": 2345.67}),
        ("Throughput: 1.50 requests/s, 300.25 tokens/s", "Throughput", {"req/s": 1.5, "tok/s": 300.25}),
        ("Output token throughput (tok/s):         1234.56   ", "output tok/s", {"output tok/s": 1234.56}),
        ("Total Token throughput (tok/s):          99.50", "total tok/s", {"total tok/s": 99.5}),
        ("Request throughput (req/s):              3.21", "req/s", {"req/s": 3.21}),
        ("Peak output token throughput (tok/s):    77.00", "peak output tok/s", {"peak output tok/s": 77.0}),
        (
            "Decode.  median latency: 0.01102 s, median throughput:     90.74 token/s",
            "median tok/s",
            {"median tok/s": 90.74},
        ),
        ("batch 1: 53.20 tok/s", "batch 1 tok/s", {"batch 1 tok/s": 53.2}),
    ],
)
def test_throughput_lines_parse_exactly(line, name, metrics):
    row = read_line(7, line)
    assert (row.shape, row.name, row.metrics, row.source_line) == ("throughput", name, metrics, 7)


def test_not_throughput():
    assert read_line(1, "ck: 3.2 GB/s") is None and read_line(1, "took 3 s") is None


def rows():
    return [
        read_line(1, VLLM),
        PerfRow(shape="M=1", name="us_median", us_median=100.0, stat="median"),
        PerfRow(shape="M=2", name="us_median", us_median=130.0, stat="median"),
    ]


def test_floor_met_and_missed():
    assert limit_findings(rows(), {"output tok/s": 2000.0}, {}) == ([], [])
    assert limit_findings(rows(), {"Output tok/s": 2400.0}, {}) == (
        ["Output tok/s 2345.67 is below the floor 2400"],
        [],
    )


def test_ceiling_met_and_missed():
    assert limit_findings(rows(), {}, {"us_median": 140.0}) == ([], [])
    assert limit_findings(rows(), {}, {"us_median": 120.0}) == (["us_median 130 is above the ceiling 120"], [])


def test_floor_never_printed_is_a_doubt():
    assert limit_findings(rows(), {"TFLOPS": 1.0}, {}) == (
        [],
        ["floor TFLOPS 1 declared, but the output printed no TFLOPS"],
    )


def test_declaration_errors_name_file_target_and_key(tmp_path):
    from pytest_gpuverify.config.declarations import load_declarations

    (tmp_path / "gpuverify.toml").write_text(
        '[[targets]]\nname = "serve"\nkind = "bench"\ncommand = "python3 x.py"\nfloors = { "output tok/s" = "53" }\n'
    )
    with pytest.raises(DeclarationError) as info:
        load_declarations(tmp_path / "gpuverify.toml")
    text = str(info.value)
    assert "gpuverify.toml" in text and "serve" in text and "floors.output tok/s" in text


HARNESS = """print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("Throughput: 12.34 requests/s, 4567.89 total tokens/s, 2345.67 output tokens/s")
print("M      N      K   us_median    TFLOPS")
print("1   1280   8192     100.000     2.000")
print("2   1280   8192     130.000     1.500")
"""
TARGETS = {  # name -> (floors/ceilings toml, verdict, a reason's words)
    "floor-met": ('floors = { "output tok/s" = 2000.0 }', "PASS", None),
    "floor-missed": ('floors = { "output tok/s" = 2400.0 }', "FAIL", "output tok/s 2345.67 is below the floor 2400"),
    "ceiling-met": ("ceilings = { us_median = 140.0 }", "PASS", None),
    "ceiling-missed": ("ceilings = { us_median = 120.0 }", "FAIL", "us_median 130 is above the ceiling 120"),
    "floor-unprinted": (
        'floors = { "GB/s" = 1.0 }',
        "INCONCLUSIVE",
        "floor GB/s 1 declared, but the output printed no GB/s",
    ),
}


@pytest.mark.docker
def test_floors_and_ceilings_in_real_runs_and_check(tmp_path, docker_client):
    from kernel_repos import commit
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path / "host", docker_client) as box:
        (box.repo / "bench" / "serve.py").write_text(HARNESS)
        (box.repo / "gpuverify.toml").write_text(
            "\n".join(
                f'[[targets]]\nname = "{name}"\nkind = "bench"\ncommand = "python3 bench/serve.py"\n{limit}\n'
                for name, (limit, _, _) in TARGETS.items()
            )
        )
        commit(box.repo, "floors")
        proc = box.pytest("gpuverify.toml")
        for name, (_, verdict, reason) in TARGETS.items():
            path = box.tickets / "T-1" / f"bench_{name}.json"
            assert path.exists(), proc.stdout.decode()[-3000:]
            art = box.artifact(name)
            assert art.verdict == verdict, (name, art.reasons)
            if reason:
                assert reason in art.reasons
            assert main(["check", str(path)]) == 0, name
        art = box.artifact("floor-met")
        assert art.target.floors == {"output tok/s": 2000.0}
        assert [r.metrics for r in art.perf if r.shape == "throughput"] == [
            {"req/s": 12.34, "total tok/s": 4567.89, "output tok/s": 2345.67}
        ]
        # the handoff's observation carries the same throughput and the floor's FAIL reason
        from pytest_gpuverify.cli.handoff import build_handoff

        runs = build_handoff(box.tickets / "T-1").verification.commandsRun
        assert all("throughput: req/s 12.34, total tok/s 4567.89, output tok/s 2345.67" in r.observation for r in runs)
        assert sum("FAIL (output tok/s 2345.67 is below the floor 2400)" in r.observation for r in runs) == 1


def test_throughput_rows_of_a_file_keep_their_line_numbers(tmp_path):
    from pytest_gpuverify.parsers.reader import parse_output
    from pytest_gpuverify.parsers.recognizers.perf_lines import SHAPE

    path = tmp_path / "out.log"
    path.write_bytes(b"gen: 1.5 tok/s\r\n" + b"noise 1.0 GB/s\n" * 3 + b"x\n" + VLLM.encode())  # no final newline
    rows = [r for r in parse_output("bench", path).perf if r.shape == SHAPE]
    assert [(r.source_line, r.metrics) for r in rows] == [
        (1, {"gen tok/s": 1.5}),
        (6, {"req/s": 12.34, "total tok/s": 4567.89, "output tok/s": 2345.67}),
    ]
    (tmp_path / "empty.log").write_bytes(b"")
    assert parse_output("bench", tmp_path / "empty.log").perf == []
