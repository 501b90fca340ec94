"""``gpuverify mcp``: the MCP server (the official ``mcp`` SDK). Its tools are the product's verbs with
typed inputs and outputs; a refusal is an error result carrying ``{"refused", "fix"}``, never a PASS.
Resources: ``gpuverify://tickets`` and, per ticket, its artifacts and raw logs."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from pytest_gpuverify.cli.agents import verbs
from pytest_gpuverify.cli.agents.models import (
    CheckResult,
    CompareResult,
    DoctorResult,
    Refusal,
    ReportResult,
    ShowResult,
    TextResult,
    VerifyResult,
)
from pytest_gpuverify.cli.agents.places import Places, Refused
from pytest_gpuverify.cli.agents.session import VerifyRequest, run_verify
from pytest_gpuverify.config.errors import UsageError

INSTRUCTIONS = (
    "Verify GPU kernels with proofs: doctor first, then verify the ticket's targets, then check, compare and "
    "handoff. Report verdicts and numbers as the tools return them; never edit an artifact nor retype a number. "
    "The resource gpuverify://skill holds the whole procedure."
)

T = TypeVar("T")
Ticket = Annotated[str, Field(description="the ticket key; its folder is <tickets>/KEY of the env file")]
Topic = Annotated[str, Field(description="an artifact's topic: the file is bench_<topic>.json in the ticket folder")]


def load_places(env_option: str | None) -> Places:
    from pytest_gpuverify.config.envfile import default_env_path, load_env_file

    return Places(load_env_file(default_env_path(env_option, os.environ)))


def refusal(exc: Refused) -> Any:
    doc = Refusal(refused=exc.refused, fix=exc.fix).model_dump()
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(doc))], structured_content=doc, is_error=True
    )


def refusing(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """A tool whose refusal is an error result: the tool keeps its own signature (its schemas), and an
    error result is passed through unvalidated."""

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except Refused as exc:
            return refusal(exc)
        except UsageError as exc:  # the env file's, a declaration's: the product's own message and fix
            where = "" if exc.named else f"{exc.source}: " + (f"{exc.where}: " if exc.where else "")
            return refusal(Refused(" ".join(f"{where}{exc.message.rstrip('.')}".split()), exc.fix))

    return tool


def build_server(env_option: str | None = None, store: str | None = None):
    """The server; ``env_option``: its env file (else $GPUVERIFY_ENV, else the default); ``store``: the
    history store compare --history and history_show read (else $GPUVERIFY_HISTORY, else the default)."""
    from pytest_gpuverify import __version__

    server = MCPServer("gpuverify", version=__version__, instructions=INSTRUCTIONS)

    def places() -> Places:
        return load_places(env_option)

    async def in_thread(call: Callable[[], T]) -> T:
        import anyio

        return await anyio.to_thread.run_sync(call)

    @server.tool(description="Read-only health check of this GPU host: GPUs, locks, containers, repos, tickets.")
    @refusing
    async def doctor(
        host: Annotated[str | None, Field(description="a Hosts row by name (default: the local one)")] = None,
    ) -> DoctorResult:
        p = places()
        return await in_thread(lambda: verbs.doctor(p, host))

    @server.tool(
        description="Run targets of a Repos row's checkout for a ticket as one `pytest --gpu-verify` session "
        "(lock, import check and verdict rules always on). Targets: declared names or test files of the checkout. "
        "Reports progress; cancel stops the run, frees the lock and leaves an INCONCLUSIVE artifact."
    )
    @refusing
    async def verify(
        ticket: Ticket,
        targets: Annotated[list[str], Field(description="declared target names, or test files / node ids")],
        ctx: Context,
        repo: Annotated[str | None, Field(description="the Repos row (default: the only one)")] = None,
        repeats: Annotated[int | None, Field(ge=1, le=100, description="runs of each target under one lock")] = None,
        ab_base: Annotated[str | None, Field(description="A/B: the base commit or ref, run against HEAD")] = None,
        history: Annotated[
            bool, Field(description="add each artifact to the history store (the server's --store)")
        ] = False,
        wait_s: Annotated[float | None, Field(ge=0, le=86400, description="longest wait for an idle GPU")] = None,
        window_s: Annotated[float | None, Field(gt=0, le=600, description="idle sampling window")] = None,
        timeout_s: Annotated[float | None, Field(gt=0, le=86400, description="one command's time limit")] = None,
    ) -> VerifyResult:
        if ab_base is not None and ab_base.startswith("-"):
            raise Refused(f"ab_base {ab_base!r} is not a commit", "name a commit or ref of the checkout")
        if history:
            from pytest_gpuverify.history.command import store_path

        kept = str(store_path(store)) if history else None
        req = VerifyRequest(ticket, targets, repo, repeats, ab_base, kept, wait_s, window_s, timeout_s)

        async def progress(done: float, total: float, message: str) -> None:
            await ctx.report_progress(done, total, message)

        return await run_verify(places(), req, progress)

    @server.tool(description="An artifact as a readable page, with its verdict, reasons and key numbers.")
    @refusing
    async def show(ticket: Ticket, topic: Topic) -> ShowResult:
        p = places()
        return await in_thread(lambda: verbs.show(p, ticket, topic))

    @server.tool(
        description="Re-check artifacts against their raw output (numbers, verdict, reasons, signatures); "
        "a whole ticket also for two runs sharing a GPU."
    )
    @refusing
    async def check(
        ticket: Ticket, topic: Annotated[str | None, Field(description="one artifact (default: all)")] = None
    ) -> CheckResult:
        p = places()
        return await in_thread(lambda: verbs.check(p, ticket, topic))

    @server.tool(
        description="Compare perf rows: the base's artifact against the head's, or an A/B artifact's two "
        "sides (no head), or with history=true the head against the history store's runs."
    )
    @refusing
    async def compare(
        ticket: Ticket,
        topic: Topic,
        head_ticket: Annotated[str | None, Field(description="the head artifact's ticket (with head_topic)")] = None,
        head_topic: Annotated[str | None, Field(description="the head artifact's topic")] = None,
        history: Annotated[
            bool, Field(description="against the history store (the named artifact is the head)")
        ] = False,
        factor: Annotated[float | None, Field(gt=1, description="the slowdown called a regression")] = None,
        ref: Annotated[str | None, Field(description="with history: the branch whose history is the base")] = None,
        last: Annotated[int | None, Field(ge=1, description="with history: how many earlier commits")] = None,
        repo: Annotated[str | None, Field(description="with history: the Repos row whose commits order it")] = None,
    ) -> CompareResult:
        p = places()
        if (head_ticket is None) != (head_topic is None):
            raise Refused("a head needs both head_ticket and head_topic", "name both, or neither")
        if ref is not None and ref.startswith("-"):
            raise Refused(f"ref {ref!r} is not a ref", "name a branch or commit")
        head = (head_ticket, head_topic) if head_ticket and head_topic else None
        options = (["--factor", f"{factor:g}"] if factor else []) + (["--ref", ref] if ref else [])
        options += ["--last", str(last)] if last else []
        return await in_thread(lambda: verbs.compare(p, (ticket, topic), head, history, store, options, repo))

    @server.tool(description="A target's history: each commit's median per perf row and the steps found.")
    @refusing
    async def history_show(
        target: Annotated[str, Field(description="a target's name or topic")],
        ref: Annotated[str | None, Field(description="only this branch's first-parent history")] = None,
        newest: Annotated[int | None, Field(ge=0, description="commits shown per row; 0: all")] = None,
        repo: Annotated[
            str | None, Field(description="the Repos row whose commits order it (default: the only one)")
        ] = None,
    ) -> TextResult:
        p = places()
        return await in_thread(lambda: verbs.history_show(p, target, ref, store, newest, repo))

    @server.tool(description="The reviewer's handoff JSON of a ticket, every number from its checked artifacts.")
    @refusing
    async def handoff(
        ticket: Ticket,
        base_ticket: Annotated[str | None, Field(description="the base's ticket: A/B per matching topic")] = None,
    ) -> dict[str, Any]:
        p = places()
        return await in_thread(lambda: verbs.handoff(p, ticket, base_ticket))

    @server.tool(description="One HTML page of the tickets' verdicts, perf rows and plots, in the first ticket.")
    @refusing
    async def report(
        tickets: Annotated[list[str], Field(description="ticket keys")],
        history: Annotated[bool, Field(description="add the targets' trends from the history store")] = False,
    ) -> ReportResult:
        p = places()
        return await in_thread(lambda: verbs.report(p, tickets, history, store))

    @server.resource(
        "gpuverify://skill", description="the skill page: which tool when, verdicts, never", mime_type="text/markdown"
    )
    def skill() -> str:
        from pytest_gpuverify.cli.agents.skill import skill_text

        return skill_text()

    @server.resource("gpuverify://tickets", description="the ticket keys", mime_type="application/json")
    def tickets() -> str:
        folder = places().tickets
        return json.dumps(sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else [])

    @server.resource(
        "gpuverify://tickets/{ticket}", description="a ticket's artifacts and raw logs", mime_type="application/json"
    )
    def ticket_files(ticket: str) -> str:
        folder = places().ticket(ticket)
        return json.dumps([f"gpuverify://tickets/{ticket}/{p.name}" for p in sorted(folder.iterdir()) if _readable(p)])

    @server.resource("gpuverify://tickets/{ticket}/{name}", description="an artifact (JSON) or raw log of a ticket")
    def ticket_file(ticket: str, name: str) -> str:
        path = places().ticket(ticket) / name
        if "/" in name or not _readable(path):
            raise Refused(f"{name} is not an artifact or raw log of ticket {ticket}", "read gpuverify://tickets/KEY")
        return path.read_text(encoding="utf-8", errors="replace")

    return server


def _readable(path: Path) -> bool:
    return path.is_file() and path.name.startswith("bench_") and path.suffix in (".json", ".log")


def serve(env_option: str | None, store: str | None, transport: str, host: str, port: int) -> int:
    server = build_server(env_option, store)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
    return 0
