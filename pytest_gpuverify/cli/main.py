"""``gpuverify``: the work outside a test run (schema, show, check, doctor, sim)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gpuverify.records.artifact import artifact_schema, read_artifact

if TYPE_CHECKING:
    from pytest_gpuverify.compare.core import Rule


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.handoff:
        from pytest_gpuverify.cli.handoff import handoff_schema

        print(json.dumps(handoff_schema(), indent=2))
        return 0
    print(json.dumps(artifact_schema(), indent=2))
    return 0


def _load(path: str):
    try:
        return read_artifact(Path(path))
    except FileNotFoundError:
        print(f"gpuverify: {path}: no such file", file=sys.stderr)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        print(f"gpuverify: {path}: not a gpuverify artifact ({first})", file=sys.stderr)
    return None


def _cmd_show(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.show import render

    art = _load(args.artifact)
    if art is None:
        return 2
    print(render(art, Path(args.artifact)))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.check import check_file
    from pytest_gpuverify.verify.exclusivity import artifact_paths

    paths = artifact_paths(args.artifacts)
    if not paths:
        _unclaimed_logs(args.artifacts)  # what a folder without artifacts holds: runs going, runs stopped
        print(f"gpuverify: no artifact (bench_*.json) in {', '.join(args.artifacts)}", file=sys.stderr)
        return 2
    worst = 0
    checked = []
    for path in paths:
        code, art = check_file(str(path), args.allowed_signers)
        worst = max(worst, code)
        if art is not None:
            checked.append((art, path))
    if len(args.artifacts) > 1 or len(paths) > 1 or Path(args.artifacts[0]).is_dir():
        worst = max(worst, _check_exclusive(checked))
    _unclaimed_logs(args.artifacts)
    return worst


def _unclaimed_logs(names: list[str]) -> None:
    """Each folder's raw logs no artifact names: ``RUNNING`` (a session, maybe a concurrent one, still
    writes it) or ``STOPPED`` (its session ended before the artifact), with its last line or cause."""
    from pytest_gpuverify.engine.orphans import unclaimed_logs

    for folder in [Path(a) for a in names if Path(a).is_dir()]:
        for log in unclaimed_logs(folder):
            print(f"{log.word} {log.log}: {log.says()}")


def _check_exclusive(checked: list) -> int:
    """Across the artifacts: no two runs of one host held one GPU at the same time."""
    from pytest_gpuverify.verify.exclusivity import find_overlaps, holds_of

    holds, without = [], []
    for art, path in checked:
        mine, why = holds_of(art, path)
        holds.extend(mine)
        if why:
            without.append(f"{path}: {why}")
    overlaps = find_overlaps(holds)
    for overlap in overlaps:
        print(f"OVERLAP {overlap.describe()}")
    for line in without:
        print(f"not in the overlap check: {line}")
    runs = len({h.path for h in holds})
    print(
        f"exclusivity: {runs} runs on {len({(h.host, h.gpu) for h in holds})} GPU(s) of "
        f"{len({h.host for h in holds})} host(s), {len(overlaps)} overlap(s)"
    )
    return 1 if overlaps else 0


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


def _output_problem(command: str, path: Path) -> str | None:
    """One line when ``-o FILE`` cannot be written (a folder, a missing or unwritable folder)."""
    from pytest_gpuverify.common.files import output_file_problem

    problem = output_file_problem(path)
    return f"gpuverify {command}: -o {path}: {problem[0]}. Fix: {problem[1]}" if problem else None


def _cmd_handoff(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.handoff import run_handoff

    problem = _output_problem("handoff", Path(args.output)) if args.output else None
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return run_handoff(args.ticket_dir, args.base, args.output)


def _cmd_sim_install(args: argparse.Namespace) -> int:
    from pytest_gpuverify.simulator import SimState, install
    from pytest_gpuverify.simulator.state import ARCH_DEFAULTS

    if args.gpus < 1:
        print(
            f"gpuverify sim install: --gpus {args.gpus}: a host has at least one GPU. Fix: e.g. --gpus 8",
            file=sys.stderr,
        )
        return 2
    if args.arch not in ARCH_DEFAULTS:  # the parts the fake tools can print
        print(
            f"gpuverify sim install: --arch {args.arch}: not an arch the simulator knows. "
            f"Fix: one of {', '.join(sorted(ARCH_DEFAULTS))}",
            file=sys.stderr,
        )
        return 2
    state = SimState.idle(gpus=args.gpus, arch=args.arch)
    path = install(Path(args.bin_dir), state)
    print(
        f"simulated ROCm host installed in {args.bin_dir} (state: {path}); put it first on PATH, "
        f"and set ROCM_PATH={args.bin_dir} for its amdsmi library"
    )
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    import os

    from pytest_gpuverify.cli.doctor import run_doctor
    from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file

    try:
        env = load_env_file(default_env_path(args.gpu_env, os.environ))
    except EnvFileError as exc:
        print(f"gpuverify doctor: {exc}", file=sys.stderr)
        return 2
    report = run_doctor(env, host_name=args.gpu_host)
    print(report.text())
    return report.exit_code


def _cmd_demo(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.demo import run_demo

    return run_demo(Path(args.dir), ticket=args.ticket)


def _cmd_merge(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.merge import merge

    return merge([Path(d) for d in args.dirs], Path(args.out), keep_all=args.keep_all)


def _cmd_durations(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.durations import write_durations

    problem = _output_problem("durations", Path(args.out))
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return write_durations([Path(d) for d in args.dirs], Path(args.out))


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.html_report import write_report

    problem = _output_problem("report", Path(args.out))
    if problem:
        print(problem, file=sys.stderr)
        return 2
    store = None
    if args.history:
        from pytest_gpuverify.history.command import store_path

        store = store_path(args.store)
    return write_report(
        [Path(d) for d in args.dirs], Path(args.out), store, args.ref, Path(args.repo) if args.repo else None
    )


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
        return command.run_add(args.store, args.artifacts, args.ref)
    if args.history_command == "show":
        return command.run_show(args.store, args.target, args.ref, args.repo, 0 if args.all else args.newest)
    if args.history_command == "export":
        problem = _output_problem("history export", Path(args.output)) if args.output else None
        if problem:
            print(problem, file=sys.stderr)
            return 2
        return command.run_export(args.store, args.output, args.target)
    return command.run_import(args.store, args.files)


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
    imp = hsub.add_parser("import", help="add the runs of JSON lines an export wrote")
    imp.add_argument("files", nargs="+", metavar="FILE")
    for each in (add, show, export, imp):
        each.add_argument("--store", default=None, metavar="FILE|URL", help=STORE_HELP)
    hist.set_defaults(func=_cmd_history)


def build_parser() -> argparse.ArgumentParser:
    from pytest_gpuverify import __version__
    from pytest_gpuverify.compare.identity import FIELDS

    parser = argparse.ArgumentParser(prog="gpuverify", description="pytest-gpuverify tools")
    parser.add_argument("--version", action="version", version=f"pytest-gpuverify {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    schema = sub.add_parser("schema", help="print the artifact's JSON Schema")
    schema.add_argument("--handoff", action="store_true", help="the handoff's JSON Schema instead")
    schema.set_defaults(func=_cmd_schema)
    show = sub.add_parser("show", help="print an artifact as a readable table")
    show.add_argument("artifact")
    show.set_defaults(func=_cmd_show)
    check = sub.add_parser(
        "check",
        help="re-check artifacts against their raw output (and their signatures); "
        "with several (or a ticket folder), also that no two runs shared a GPU",
    )
    check.add_argument("artifacts", nargs="+", metavar="ARTIFACT_OR_FOLDER")
    check.add_argument(
        "--allowed-signers",
        default=None,
        metavar="FILE",
        help="verify the .sig files with ssh-keygen -Y verify against this allowed-signers file",
    )
    check.set_defaults(func=_cmd_check)
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
    hand = sub.add_parser(
        "handoff", help="the reviewer's handoff JSON of a ticket folder, every number from its checked artifacts"
    )
    hand.add_argument("ticket_dir")
    hand.add_argument(
        "--base", default=None, metavar="BASE_DIR", help="the base's ticket folder: A/B per matching topic"
    )
    hand.add_argument("-o", "--output", default=None, metavar="FILE")
    hand.set_defaults(func=_cmd_handoff)
    doctor = sub.add_parser("doctor", help="read-only health check of this GPU host, its containers and repos")
    doctor.add_argument(
        "--gpu-env", default=None, help="env file (default $GPUVERIFY_ENV, else ~/.cursor/mstack/env.md)"
    )
    doctor.add_argument("--gpu-host", default=None, help="a Hosts row by name (default: the local one)")
    doctor.set_defaults(func=_cmd_doctor)
    sim = sub.add_parser("sim", help="the simulated ROCm host (fake rocm-smi, amd-smi, rocminfo)")
    simsub = sim.add_subparsers(dest="sim_command", required=True)
    inst = simsub.add_parser("install", help="write the fake tools and a state file into BIN_DIR")
    inst.add_argument("bin_dir")
    inst.add_argument("--gpus", type=int, default=8)
    inst.add_argument("--arch", default="gfx942")
    inst.set_defaults(func=_cmd_sim_install)
    demo = sub.add_parser("demo", help="set up a simulated ROCm host with a real container and run the demo targets")
    demo.add_argument("--dir", default=".demo", help="where the sandbox lives (default .demo)")
    demo.add_argument("--ticket", default="DEMO-1")
    demo.set_defaults(func=_cmd_demo)
    merge = sub.add_parser("merge", help="gather the ticket folders of several CI shards or hosts into one")
    merge.add_argument("dirs", nargs="+", metavar="DIR")
    merge.add_argument("-o", "--out", required=True, metavar="DIR")
    merge.add_argument(
        "--keep-all",
        action="store_true",
        help="keep one topic from several runs (renamed bench_<topic>.from-<DIR>.json)",
    )
    merge.set_defaults(func=_cmd_merge)
    durations = sub.add_parser(
        "durations",
        help="each target's duration from its artifacts (topic -> seconds), "
        "to balance pytest --gpu-shard with --gpu-durations FILE",
    )
    durations.add_argument("dirs", nargs="+", metavar="TICKET_DIR")
    durations.add_argument("-o", "--out", required=True, metavar="FILE")
    durations.set_defaults(func=_cmd_durations)
    report = sub.add_parser("report", help="one self-contained HTML page with verdicts, perf rows and plots")
    report.add_argument("dirs", nargs="+", metavar="TICKET_DIR")
    report.add_argument("-o", "--out", required=True, metavar="FILE")
    report.add_argument(
        "--history",
        action="store_true",
        help="add a history section: the targets' trends across commits from the store (--store)",
    )
    report.add_argument("--store", default=None, metavar="FILE|URL", help=STORE_HELP)
    report.add_argument(
        "--ref", default=None, help="with --history: the commits of this branch's first-parent history (e.g. main)"
    )
    report.add_argument("--repo", default=None, metavar="PATH", help="with --history: " + REPO_HELP)
    report.set_defaults(func=_cmd_report)
    return parser


PASSES_OPTIONS = ("bisect", "compare")  # commands whose options after `--` go to the pytest session they start


def _split_pytest_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own arguments, and what follows its first `--` (a command in PASSES_OPTIONS only)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in PASSES_OPTIONS and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    own, pytest_args = _split_pytest_args(list(sys.argv[1:] if argv is None else argv))
    try:
        args = build_parser().parse_args(own)
    except SystemExit as exc:
        # under `git bisect run` argparse's exit 2 would mark the commit bad: a usage error stops the bisect
        if exc.code and next((a for a in own if not a.startswith("-")), None) == "bisect":
            return 128
        raise
    args.pytest_args = pytest_args
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gpuverify schema | head`: the reader left; say nothing, as a tool SIGPIPE ends
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would fail again
        return 128 + 13
    except OSError as exc:  # a file that cannot be written or read (a full disk): one line, never a traceback
        print(f"gpuverify {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
