"""`gpuverify mcp` driven as a coding agent drives it: a subprocess spoken to over stdio with the `mcp` SDK's
own client, on the simulated host with a real container (the demo's lab repo)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession  # the test extra has the SDK: a missing one is an error, never a skip
from mcp.client.stdio import StdioServerParameters, stdio_client
from sandboxes import make_sandbox

from pytest_gpuverify.cli import demo
from pytest_gpuverify.records.artifact import read_artifact

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 0.3  # the simulated GPUs are idle: a short sampling window, as the other e2e tests use


def server_env(box) -> dict[str, str]:
    env = demo.sandbox_environ(box.sim_bin)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in [n for n in env if n.startswith("PYTEST_XDIST") or n == "GPUVERIFY_ENV"]:
        env.pop(name)
    return env


@asynccontextmanager
async def agent(box):
    """A client session with `gpuverify mcp --gpu-env ENV`, as an agent's configuration starts it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pytest_gpuverify.cli.main", "mcp", "--gpu-env", str(box.env_path), "--store", str(store(box))],
        env=server_env(box),
        cwd=str(box.root),
    )
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def store(box) -> Path:
    return box.root / "history" / "runs.db"


def cli(box, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *argv], env=server_env(box), capture_output=True, text=True
    )


def files_under(root: Path, skip: tuple[Path, ...]) -> dict[str, int]:
    # a target's own Python writes its bytecode next to the modules it imports (git ignores it): the
    # kernel's doing under any session, not the server's
    return {
        str(p): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not any(p == s or s in p.parents for s in skip)
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory, docker_client):
    with make_sandbox(tmp_path_factory.mktemp("mcp") / "host", docker_client) as box:
        yield box


@pytest.fixture(scope="module")
def demo_run(lab):
    """The demo's three targets verified through the tool once (PASS, PASS, FAIL), and a second run of the
    first target under another ticket, for compare; the files outside the tickets folder before and after."""
    # the simulated GPUs' state; the lock files are the lock's; the history store is the one the server was given
    skip = (lab.tickets, lab.sim_bin, lab.spec.locks, store(lab).parent)
    store(lab).parent.mkdir()
    before = files_under(lab.root, skip)

    async def go():
        async with agent(lab) as session:
            first = await session.call_tool(
                "verify", {"ticket": "T-1", "targets": list(demo.DEMO_TARGETS), "window_s": WINDOW, "history": True}
            )
            second = await session.call_tool(
                "verify", {"ticket": "T-2", "targets": [demo.DEMO_TARGETS[0]], "window_s": WINDOW}
            )
            return first, second

    first, second = anyio.run(go)
    return first, second, before, files_under(lab.root, skip)


def test_tools_have_valid_schemas_and_doctor_says_what_the_cli_says(lab):
    from jsonschema import Draft202012Validator

    async def go():
        async with agent(lab) as session:
            return (await session.list_tools()).tools, await session.call_tool("doctor", {})

    listed, res = anyio.run(go)
    tools = {t.name: t for t in listed}
    assert set(tools) >= {"doctor", "verify", "show", "check", "compare", "history_show", "handoff", "report"}
    for tool in tools.values():
        Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
    assert {"ticket", "targets"} <= set(tools["verify"].input_schema["required"])
    assert "verdict" in json.dumps(tools["verify"].output_schema)
    offered = json.dumps({name: t.input_schema for name, t in tools.items()})
    for never in ("allow_dirty", "container", "command", "skip", "no_lock", "args"):  # nothing skips a proof
        assert f'"{never}"' not in offered, never

    assert not res.is_error, res.content
    doc = res.structured_content
    proc = cli(lab, "doctor", "--gpu-env", str(lab.env_path))
    assert doc["judgement"] == proc.stdout.strip().splitlines()[-1]
    assert doc["ready"] is (proc.returncode == 0)
    assert sum(line.startswith("gpu ") for line in doc["lines"]) == 4


def test_verify_runs_the_demo_targets_with_the_demo_verdicts(lab, demo_run):
    first, _, _, _ = demo_run
    assert not first.is_error, first.content
    result = first.structured_content
    verdicts = {Path(t["artifact"]["path"]).name: t["artifact"]["verdict"] for t in result["targets"]}
    assert verdicts == {"bench_gemm_a8w8.json": "PASS", "bench_rmsnorm2d.json": "PASS", "bench_moe_2stage.json": "FAIL"}
    assert result["pytest_exit"] == 1 and result["cancelled"] is False
    for target in result["targets"]:  # the tool's numbers are the artifact's
        art = read_artifact(Path(target["artifact"]["path"]))
        assert target["artifact"]["reasons"] == art.reasons
        assert [r["us_median"] for r in target["artifact"]["perf"]] == [r.us_median for r in art.perf[:50]]
    gemm = next(t["artifact"] for t in result["targets"] if t["artifact"]["topic"] == "gemm_a8w8")
    assert gemm["perf"] and all(r["us_median"] > 0 for r in gemm["perf"])


def test_show_check_compare_history_handoff_equal_the_cli(lab, demo_run):
    first, second, _, _ = demo_run
    assert not second.is_error, second.content
    gemm1 = lab.tickets / "T-1" / "bench_gemm_a8w8.json"
    gemm2 = lab.tickets / "T-2" / "bench_gemm_a8w8.json"

    async def go():
        async with agent(lab) as session:
            pair = {"ticket": "T-1", "topic": "gemm_a8w8", "head_ticket": "T-2", "head_topic": "gemm_a8w8"}
            results = [
                await session.call_tool("show", {"ticket": "T-1", "topic": "moe_2stage"}),
                await session.call_tool("check", {"ticket": "T-1"}),
                await session.call_tool("compare", pair),
                await session.call_tool("compare", {"ticket": "T-2", "topic": "gemm_a8w8", "history": True}),
                await session.call_tool("history_show", {"target": "op_tests/test_gemm_a8w8.py"}),
                await session.call_tool("handoff", {"ticket": "T-1"}),
            ]
            listing = await session.read_resource("gpuverify://tickets/T-1")
            artifact = await session.read_resource("gpuverify://tickets/T-1/bench_rmsnorm2d.json")
            return results, json.loads(listing.contents[0].text), json.loads(artifact.contents[0].text)

    results, names, artifact = anyio.run(go)
    for res in results:
        assert not res.is_error, res.content
    show, check, compare, history, trend, handoff = (r.structured_content for r in results)
    cli_show = cli(lab, "show", str(lab.tickets / "T-1" / "bench_moe_2stage.json"))
    assert show["text"] == cli_show.stdout.rstrip("\n")
    assert show["artifact"]["verdict"] == "FAIL" and show["artifact"]["reasons"]
    cli_check = cli(lab, "check", str(lab.tickets / "T-1"))
    assert check["exit_code"] == cli_check.returncode == 0 and check["ok"] is True
    assert check["lines"] == [x for x in (cli_check.stdout + cli_check.stderr).splitlines() if x.strip()]
    cli_compare = cli(lab, "compare", str(gemm1), str(gemm2), "--json")
    assert compare["exit_code"] == cli_compare.returncode
    assert compare["comparison"] == json.loads(cli_compare.stdout) and compare["comparison"]["pairs"]
    graph = ["--repo", str(lab.repo), "--store", str(store(lab))]
    cli_history = cli(lab, "compare", str(gemm2), "--history", *graph, "--json")
    assert history["exit_code"] == cli_history.returncode, cli_history.stderr
    assert history["comparison"] == (json.loads(cli_history.stdout) if cli_history.stdout.strip() else None)
    assert history["comparison"] or history["message"]  # a comparison, or compare's reason for none
    cli_trend = cli(lab, "history", "show", "op_tests/test_gemm_a8w8.py", *graph)
    assert trend["exit_code"] == cli_trend.returncode == 0, trend["text"]
    assert trend["text"] == (cli_trend.stdout + cli_trend.stderr).strip()
    cli_handoff = cli(lab, "handoff", str(lab.tickets / "T-1"))
    assert handoff == json.loads(cli_handoff.stdout)
    assert "gpuverify://tickets/T-1/bench_rmsnorm2d.json" in names
    assert any(n.endswith(".log") for n in names), names
    assert artifact == json.loads((lab.tickets / "T-1" / "bench_rmsnorm2d.json").read_text())


def test_verify_writes_nothing_outside_the_tickets_folder(lab, demo_run):
    _, _, before, after = demo_run
    assert after == before
    status = subprocess.run(["git", "-C", str(lab.repo), "status", "--porcelain"], capture_output=True)
    assert status.stdout == b""


REFUSED_TARGETS = [
    (["rm -rf /tmp/x"], "neither a declared target nor a test path"),
    (["--gpu-allow-dirty"], "neither a declared target nor a test path"),
    (["../../env.md"], "outside the repo checkout"),
    (["op_tests/no_such_test.py"], "no "),
]


def test_what_is_not_a_target_or_outside_the_tickets_and_repos_is_refused(lab):
    async def go():
        async with agent(lab) as session:
            targets = [
                await session.call_tool("verify", {"ticket": "R-1", "targets": targets})
                for targets, _ in REFUSED_TARGETS
            ]
            paths = [
                await session.call_tool("show", {"ticket": "..", "topic": "x"}),
                await session.call_tool("check", {"ticket": "../../etc"}),
                await session.call_tool("verify", {"ticket": "R-1", "targets": ["x"], "repo": "/etc"}),
                await session.call_tool("report", {"tickets": ["/tmp"]}),
            ]
            return targets, paths

    targets, paths = anyio.run(go)
    for res, (_, said) in zip(targets, REFUSED_TARGETS, strict=True):
        assert res.is_error and said in res.structured_content["refused"], res.content
        assert res.structured_content["fix"]
    for res in paths:
        assert res.is_error and set(res.structured_content) == {"refused", "fix"}, res.content
    assert not (lab.tickets / "R-1").exists(), "a refused verify starts no session"


def test_a_verify_waiting_for_a_gpu_reports_progress_and_a_cancel_frees_the_lock(lab):
    """Every GPU's lock held here: the run reports it waits; let go, it runs; cancelled, it stops, frees
    the lock and leaves an INCONCLUSIVE artifact that says it was interrupted."""
    locks = [open(lab.spec.locks / f"gpu-{i}.lock", "a") for i in range(4)]
    for f in locks:
        fcntl.flock(f, fcntl.LOCK_EX)
    messages: list[str] = []
    folder = lab.tickets / "C-1"

    async def go():
        async with agent(lab) as session:
            waited, running = anyio.Event(), anyio.Event()

            async def progress(done: float, total: float | None, message: str | None) -> None:
                messages.append(message or "")
                if "waiting for an idle GPU" in (message or ""):
                    waited.set()
                if "running" in (message or ""):
                    running.set()

            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await session.call_tool(
                        "verify",
                        {"ticket": "C-1", "targets": ["op_tests/test_sleep.py"], "window_s": WINDOW, "wait_s": 120},
                        progress_callback=progress,
                    )

                tg.start_soon(call)
                with anyio.fail_after(60):
                    await waited.wait()
                for f in locks:
                    f.close()  # the GPUs free: the run takes one
                with anyio.fail_after(60):
                    await running.wait()
                    while not any(b"sleeping" in p.read_bytes() for p in folder.glob("bench_sleep.*.log")):
                        await anyio.sleep(0.1)
                tg.cancel_scope.cancel()  # the agent gives up: the client sends notifications/cancelled
            with anyio.fail_after(90):  # the session's interrupt path writes the artifact
                while not (folder / "bench_sleep.json").exists():
                    await anyio.sleep(0.2)
            with anyio.fail_after(30):  # the server goes on serving
                return await session.call_tool("check", {"ticket": "C-1"})

    try:
        check = anyio.run(go)
    finally:
        for f in locks:
            f.close()
    assert any("waiting for an idle GPU (4 of 4 GPU locks held)" in m for m in messages), messages
    art = read_artifact(folder / "bench_sleep.json")
    assert art.verdict == "INCONCLUSIVE" and "interrupted" in art.reasons[0], art.reasons
    assert lab.lock_files_free()
    assert check.structured_content["ok"] is True, check.content
