"""``gpuverify pr-comment`` and ``gpuverify issue-body``: the markdown a CI step posts on a pull request
(every regression and improvement of its compares) and files as an issue on main (the confirmed
regressions); both read ``gpuverify compare --json`` output (reporting/pr_comment.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_gpuverify.cli.perf_commands import output_problem

URL_HELP = (
    "link each artifact under this URL (its path as compare read it, or its file name when absolute), "
    "e.g. the run's uploaded artifacts; default: the path, as code"
)


def _docs(command: str, files: list[str]) -> list | None:
    from pytest_gpuverify.reporting.pr_comment import InputProblem, load

    try:
        return [load(Path(f)) for f in files]
    except InputProblem as exc:
        print(f"gpuverify {command}: {exc}", file=sys.stderr)
        return None


def _write(command: str, text: str, output: str | None) -> int:
    from pytest_gpuverify.reporting.pr_comment import GITHUB_BODY_LIMIT

    if len(text) > GITHUB_BODY_LIMIT:
        print(
            f"gpuverify {command}: {len(text)} characters, past GitHub's {GITHUB_BODY_LIMIT} for one body. "
            "Fix: one call per target (each compare's JSON on its own)",
            file=sys.stderr,
        )
    if output is None:
        sys.stdout.write(text)
        return 0
    Path(output).write_text(text)
    return 0


def _cmd_pr_comment(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.pr_comment import pr_comment

    problem = output_problem("pr-comment", Path(args.output)) if args.output else None
    if problem:
        print(problem, file=sys.stderr)
        return 2
    docs = _docs("pr-comment", args.files)
    if docs is None:
        return 2
    return _write("pr-comment", pr_comment(docs, args.artifact_url_base), args.output)


def _cmd_issue_body(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.pr_comment import issue_body

    problem = output_problem("issue-body", Path(args.output)) if args.output else None
    if problem:
        print(problem, file=sys.stderr)
        return 2
    docs = _docs("issue-body", args.files)
    if docs is None:
        return 2
    body = issue_body(docs, args.artifact_url_base, args.run_url)
    if body is None:
        print("gpuverify issue-body: no confirmed regression: no issue written", file=sys.stderr)
        if args.output and Path(args.output).exists():
            Path(args.output).unlink()  # a stale body from an earlier step must not be filed
        return 0
    return _write("issue-body", body, args.output)


def add_loop_commands(sub) -> None:
    """``pr-comment`` and ``issue-body`` on the parser's subcommands."""
    pr = sub.add_parser(
        "pr-comment",
        help="one markdown comment for a pull request: every regression and improvement of the compares",
        description="Reads `gpuverify compare --json` output (one file per target) and writes one "
        "GitHub-flavoured markdown comment listing every REGRESSED and IMPROVED row (none cut; past "
        "a screenful in collapsed sections) with its ratio, interval, confirmation and artifact. Its "
        "first line is a hidden marker a CI step finds to update the comment in place.",
    )
    issue = sub.add_parser(
        "issue-body",
        help="an issue's title line and body for the confirmed regressions of the compares (on main)",
        description="Reads `gpuverify compare --confirm --json` output and, when a row's regression "
        "is confirmed, writes a title line, a blank line and the body (commit range, rows, artifacts). "
        "Writes nothing (exit 0) when none is confirmed.",
    )
    for each in (pr, issue):
        each.add_argument("files", nargs="+", metavar="COMPARE_JSON")
        each.add_argument("-o", "--output", default=None, metavar="FILE", help="write here (default: stdout)")
        each.add_argument("--artifact-url-base", default=None, metavar="URL", help=URL_HELP)
    issue.add_argument("--run-url", default=None, metavar="URL", help="the CI run that found it, shown in the body")
    pr.set_defaults(func=_cmd_pr_comment)
    issue.set_defaults(func=_cmd_issue_body)
