"""``gpuverify compare``, ``bisect`` and ``history``: the commands that set runs against each other
across commits, their options and their checks; and the helpers of the options the other commands
share with them (``-o FILE``, ``--store``, ``--repo``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_gpuverify.compare.core import Rule


def output_problem(command: str, path: Path) -> str | None:
    """One line when ``-o FILE`` cannot be written (a folder, a missing or unwritable folder)."""
    from pytest_gpuverify.common.files import output_file_problem

    problem = output_file_problem(path)
    return f"gpuverify {command}: -o {path}: {problem[0]}. Fix: {problem[1]}" if problem else None


REPO_HELP = (
    "the git checkout whose commit graph orders the commits (default: the current folder's, else the one "
    "the artifacts name)"
)


def _positive(text: str) -> int:
    """argparse's type for a count of at least 1 (its own message on anything else)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


STORE_HELP = (
    "the history store: a SQLite file, or a team's postgresql://user@host/db URL "
    "(default $GPUVERIFY_HISTORY, else ~/.local/share/gpuverify/history.db)"
)


def _cmd_history(args: argparse.Namespace) -> int:
    from pytest_gpuverify.history import command

    if args.history_command == "add":
        return command.run_add(args.store, args.artifacts, args.ref, args.allowed_signers)
    if args.history_command == "show":
        return command.run_show(args.store, args.target, args.ref, args.repo, 0 if args.all else args.newest)
    if args.history_command == "export":
        problem = output_problem("history export", Path(args.output)) if args.output else None
        if problem:
            print(problem, file=sys.stderr)
            return 2
        return command.run_export(args.store, args.output, args.target)
    if args.history_command == "serve":
        return command.run_serve(
            args.store, args.allowed_signers, args.tokens, args.host, args.port, args.allow_unsigned
        )
    if args.history_command == "clear-health":
        return command.run_clear_health(args.store, args.gpu, args.by)
    return command.run_import(args.store, args.files, args.artifacts, args.allowed_signers)


def _history_parser(sub) -> None:
    hist = sub.add_parser("history", help="the history store: every checked artifact remembered, per commit")
    hsub = hist.add_subparsers(dest="history_command", required=True)
    add = hsub.add_parser(
        "add", help="check artifacts and add them (a tampered one is refused; one already stored is kept once)"
    )
    add.add_argument("artifacts", nargs="+", metavar="ARTIFACT_OR_FOLDER")
    add.add_argument(
        "--ref",
        default=None,
        help="the branch or tag their commit is on (default: the branch checked "
        "out in the artifact's repo, when the commit is on it)",
    )
    add.add_argument(
        "--allowed-signers",
        default=None,
        metavar="FILE",
        help="verify each artifact's signatures too (ssh-keygen's allowed-signers file); its signer is recorded",
    )
    show = hsub.add_parser("show", help="per perf row of TARGET: each commit's median, runs and the steps found")
    show.add_argument("target", help="a target's name (or its topic)")
    show.add_argument(
        "--ref",
        default=None,
        help="the commits of this branch's first-parent history, in its order (default: HEAD's in the checkout)",
    )
    show.add_argument("--repo", default=None, metavar="PATH", help=REPO_HELP)
    shown = show.add_mutually_exclusive_group()
    shown.add_argument(
        "--newest",
        type=_positive,
        default=None,
        metavar="N",
        help="show each row's newest N commits (default 20); every step found is shown",
    )
    shown.add_argument("--all", action="store_true", help="show every commit of each row")
    export = hsub.add_parser("export", help="the store as JSON lines (one run a line)")
    export.add_argument("-o", "--output", default=None, metavar="FILE", help="write here (default: stdout)")
    export.add_argument("--target", default=None, help="only this target's runs")
    imp = hsub.add_parser(
        "import",
        help="add the runs of JSON lines an export wrote, each verified as add verifies it (its artifact checked)",
    )
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument(
        "--artifacts",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder holding the runs' ticket folders where their recorded paths are not on this machine "
        "(repeatable; beside the export is looked in too)",
    )
    imp.add_argument(
        "--allowed-signers",
        default=None,
        metavar="FILE",
        help="verify each run's signatures too (ssh-keygen's allowed-signers file); its signer is recorded",
    )
    serve = hsub.add_parser(
        "serve",
        help="the ingest service CI runners post their runs to (an upload token each): only runs that pass "
        "gpuverify check and whose signature verifies are stored",
    )
    serve.add_argument(
        "--allowed-signers", required=True, metavar="FILE", help="ssh-keygen's allowed-signers file: who may sign"
    )
    serve.add_argument(
        "--tokens", required=True, metavar="FILE", help="one `NAME TOKEN` line per runner (the name is recorded)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_positive, default=8040, help="the port to listen on (default 8040)")
    serve.add_argument(
        "--allow-unsigned", action="store_true", help="store runs of no signature too (a signed one is still verified)"
    )
    cleared = hsub.add_parser(
        "clear-health",
        help="clear a GPU's health record (the picker skips it no more; judged on its later runs; who and when kept)",
    )
    cleared.add_argument("--gpu", required=True, metavar="UUID", help="the GPU's UUID, as gpuverify doctor lists it")
    cleared.add_argument("--by", default=None, help="who clears it (default: user@host)")
    for each in (add, show, export, imp, serve, cleared):
        each.add_argument("--store", default=None, metavar="FILE|URL", help=STORE_HELP)
    hist.set_defaults(func=_cmd_history)


def _cmd_compare(args: argparse.Namespace) -> int:
    import math

    from pytest_gpuverify.compare.command import run_compare
    from pytest_gpuverify.compare.core import Rule
    from pytest_gpuverify.compare.identity import FIELDS, unknown_names

    if not (math.isfinite(args.factor) and args.factor > 1):
        print(
            f"gpuverify compare: --factor {args.factor:g}: a factor must be a finite number above 1 (e.g. 1.05)",
            file=sys.stderr,
        )
        return 2
    for option, value in (("--fdr", args.fdr), ("--confidence", args.confidence)):
        if not 0 < value < 1:
            print(
                f"gpuverify compare: {option} {value:g}: must be a number above 0 and below 1 (e.g. "
                f"{'0.05' if option == '--fdr' else '0.95'})",
                file=sys.stderr,
            )
            return 2
    rule = Rule(factor=args.factor, fdr=args.fdr, confidence=args.confidence)
    # power-cap or power_cap: a name is the same with either
    may_differ = frozenset(
        n.strip().replace("-", "_") for value in args.may_differ for n in value.split(",") if n.strip()
    )
    unknown = unknown_names(sorted(may_differ))
    if unknown:
        print(
            f"gpuverify compare: --may-differ {','.join(unknown)}: not a fact compare checks; "
            f"name some of: {', '.join(FIELDS)}",
            file=sys.stderr,
        )
        return 2
    fmt = "json" if args.json else "markdown" if args.markdown else "table"
    if args.pytest_args and not args.confirm:
        print(
            "gpuverify compare: options after -- are for --confirm's A/B session. Fix: add --confirm, or drop them",
            file=sys.stderr,
        )
        return 2
    if args.history:
        from pytest_gpuverify.history.compare import baseline_problem

        if args.head is not None or args.last < 1:
            print(
                "gpuverify compare: --history compares one artifact (the head) against the store's runs: "
                "name one file, and --last 1 or more",
                file=sys.stderr,
            )
            return 2
        problem = baseline_problem(args.baseline or "last-good")
        if problem:
            print(f"gpuverify compare: {problem}", file=sys.stderr)
            return 2
    elif args.baseline or args.repo:
        print(
            f"gpuverify compare: {'--baseline' if args.baseline else '--repo'} picks the base from the history "
            "store. Fix: add --history (and name only the head's artifact)",
            file=sys.stderr,
        )
        return 2
    if args.confirm:
        return _confirmed_compare(args, fmt, rule, may_differ)
    if args.history:
        from pytest_gpuverify.history.command import run_history_compare

        return run_history_compare(
            args.store,
            args.base,
            args.ref,
            args.last,
            rule,
            fmt,
            may_differ,
            args.fail_on_inconclusive,
            args.baseline or "last-good",
            args.repo,
        )
    return run_compare(args.base, args.head, rule, fmt, may_differ, args.fail_on_inconclusive)


def _cmd_bisect(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.bisect import run_bisect
    from pytest_gpuverify.compare.core import Rule

    return run_bisect(args.good, args.bad, args.target, args.repeats, args.pytest_args, Rule(factor=args.factor))


def _bisect_parser(sub) -> None:
    bis = sub.add_parser(
        "bisect",
        help="one step of `git bisect run`: HEAD as an A/B against GOOD; exit 0 good, 1 bad, 125 skip",
        usage="gpuverify bisect GOOD BAD --target T [--repeats N] [-- PYTEST_OPTIONS]",
        description="Made for `git bisect start BAD GOOD && git bisect run gpuverify bisect GOOD BAD --target T`. "
        "At the commit git bisect checked out, the target runs as an interleaved A/B against GOOD (one lock, one "
        "GPU, A B A B ...) and compare's rule calls its rows. Exit 0 (good): no row REGRESSED; 1 (bad): a row "
        "REGRESSED; 125 (skip): the A/B did not run or was not PASS, or a row worse by more than the factor is "
        "INCONCLUSIVE; 128 (stops the bisect): GOOD is not an ancestor of BAD, HEAD is not between them, or a bad "
        "option. Options after -- go to the pytest session (e.g. -- --gpu-env env.md --gpu-ab-cache cold).",
    )
    bis.add_argument("good", metavar="GOOD", help="a commit without the regression (the A/B's base side)")
    bis.add_argument("bad", metavar="BAD", help="a commit with it: checked once, GOOD must be its ancestor")
    bis.add_argument("--target", required=True, help="the declared target (or test file) to measure")
    bis.add_argument("--repeats", type=int, default=5, metavar="N", help="runs a side (default 5; 4 at least)")
    bis.add_argument(
        "--factor",
        type=float,
        default=1.05,
        help="the least ratio of the sides' means a call needs, as in compare (default 1.05)",
    )
    bis.set_defaults(func=_cmd_bisect, pytest_args=[])


def _confirmed_compare(args: argparse.Namespace, fmt: str, rule: Rule, may_differ: frozenset[str]) -> int:
    from pytest_gpuverify.cli.confirm import run_confirmed

    if args.confirm_repeats < 4:
        print(
            f"gpuverify compare: --confirm-repeats {args.confirm_repeats}: compare calls a row from 4 runs a side "
            "at least. Fix: --confirm-repeats 5",
            file=sys.stderr,
        )
        return 2
    history = (
        {
            "store": args.store,
            "ref": args.ref,
            "last": args.last,
            "baseline": args.baseline or "last-good",
            "repo": args.repo,
        }
        if args.history
        else None
    )
    return run_confirmed(
        args.base,
        args.head,
        rule,
        fmt,
        may_differ,
        args.fail_on_inconclusive,
        args.confirm_repeats,
        args.pytest_args,
        history,
    )


def add_perf_commands(sub) -> None:
    """``compare``, ``history`` and ``bisect`` on the parser's subcommands."""
    from pytest_gpuverify.compare.identity import FIELDS

    comp = sub.add_parser(
        "compare",
        help="base against head per perf row: IMPROVED, REGRESSED, SAME or INCONCLUSIVE; "
        "exit 0 nothing regressed, 1 a row REGRESSED, 2 refused or bad input",
        description="Only PASS against PASS, of like work, from enough runs. Exit 0: nothing "
        "REGRESSED; 1: a row REGRESSED (or INCONCLUSIVE, with --fail-on-inconclusive); 2: refused "
        "(a side not PASS, the sides not like work, an artifact failing gpuverify check) or bad input.",
    )
    comp.add_argument(
        "base", help="an A/B artifact (rows carry side), or the base's artifact (with --history: the head's)"
    )
    comp.add_argument("head", nargs="?", default=None, help="the head's artifact")
    comp.add_argument(
        "--factor",
        type=float,
        default=1.05,
        help="the least ratio a call needs, and the equivalence margin [1/F, F] a SAME's interval "
        "must lie in; finite and above 1 (default 1.05)",
    )
    comp.add_argument(
        "--fdr",
        type=float,
        default=0.05,
        metavar="Q",
        help="the false discovery rate kept over the rows of one compare (Benjamini-Hochberg): a "
        "row is called when its q < Q; above 0 and below 1 (default 0.05)",
    )
    comp.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        metavar="C",
        help="of the ratio's interval printed with each row; above 0 and below 1 (default 0.95)",
    )
    comp.add_argument(
        "--may-differ",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="facts of the two artifacts allowed to differ (each shown in the output), e.g. "
        "--may-differ driver,partition,power-cap: " + ", ".join(FIELDS),
    )
    comp.add_argument(
        "--fail-on-inconclusive",
        action="store_true",
        help="exit 1 when a row is INCONCLUSIVE too (default: only REGRESSED fails)",
    )
    comp.add_argument(
        "--history",
        action="store_true",
        help="compare the one artifact named (the head) against the PASS runs of like work in the "
        "history store (--store) at the newest commits that are its ancestors",
    )
    comp.add_argument(
        "--ref",
        default=None,
        help="with --history: base commits from this branch's first-parent "
        "history (e.g. main; default: the head's own)",
    )
    comp.add_argument(
        "--last", type=int, default=5, metavar="K", help="with --history: how many commits with runs (default 5)"
    )
    comp.add_argument(
        "--baseline",
        default=None,
        metavar="last-good|release[:GLOB]",
        help="with --history: the newest ancestors with PASS runs (last-good, the default), or the "
        "newest release tag below the head (release; release:'v*' names the tags)",
    )
    comp.add_argument("--repo", default=None, metavar="PATH", help="with --history: " + REPO_HELP)
    comp.add_argument("--store", default=None, metavar="FILE|URL", help=STORE_HELP)
    comp.add_argument(
        "--confirm",
        action="store_true",
        help="re-measure each REGRESSED row by an interleaved A/B of the base's and the head's commits "
        "on one GPU (a pytest session in this checkout, which must be at the head's commit; options "
        "after -- go to it) and count only the regressions it confirms",
    )
    comp.add_argument(
        "--confirm-repeats",
        type=int,
        default=5,
        metavar="N",
        help="with --confirm: runs a side of the A/B (default 5; 4 at least)",
    )
    form = comp.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true")
    form.add_argument("--markdown", action="store_true")
    comp.set_defaults(func=_cmd_compare)
    _history_parser(sub)
    _bisect_parser(sub)
