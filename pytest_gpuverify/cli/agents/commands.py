"""The ``gpuverify mcp`` and ``gpuverify skill`` commands' parsers; the server (and the ``mcp`` SDK) is
imported only when ``mcp`` runs."""

from __future__ import annotations

import argparse
import sys

from pytest_gpuverify.cli.agents.skill import skill_text


def _cmd_skill(args: argparse.Namespace) -> int:
    sys.stdout.write(skill_text())
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from pytest_gpuverify.cli.agents.server import serve
    except ImportError as exc:
        print(
            f"gpuverify mcp: the MCP SDK is not installed ({exc}). Fix: pip install 'pytest-gpuverify[agents]'",
            file=sys.stderr,
        )
        return 2
    return serve(args.gpu_env, args.store, args.transport, args.host, args.port)


def add_agent_commands(sub) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve the gpuverify tools to coding agents over the Model Context Protocol (stdio by default)",
    )
    mcp.add_argument("--gpu-env", default=None, help="env file (default $GPUVERIFY_ENV, else ~/.cursor/mstack/env.md)")
    mcp.add_argument("--store", default=None, metavar="FILE|URL", help="the history store (default $GPUVERIFY_HISTORY)")
    mcp.add_argument(
        "--transport",
        choices=("stdio", "streamable-http"),
        default="stdio",
        help="stdio (an agent starts the server) or streamable-http (one server on a shared host)",
    )
    mcp.add_argument("--host", default="127.0.0.1", help="with streamable-http: the address (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="with streamable-http: the port (default 8765)")
    mcp.set_defaults(func=_cmd_mcp)
    skill = sub.add_parser("skill", help="print the agent skill page (SKILL.md) for the gpuverify tools")
    skill.set_defaults(func=_cmd_skill)
