"""``gpuverify``: the work outside a test run (schema, show, check, doctor, sim)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_gpuverify.cli.perf_commands import REPO_HELP, STORE_HELP, add_perf_commands, output_problem
from pytest_gpuverify.cli.pr_loop import add_loop_commands
from pytest_gpuverify.records.artifact import artifact_schema, read_artifact


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
    attest = _attest_check(args, paths)
    if attest == 2:
        return 2
    if not paths:
        _unclaimed_logs(args.artifacts)  # what a folder without artifacts holds: runs going, runs stopped
        print(f"gpuverify: no artifact (bench_*.json) in {', '.join(args.artifacts)}", file=sys.stderr)
        return 2
    worst = 0
    checked = []
    for path in paths:
        code, art = check_file(str(path), args.allowed_signers, attest or None)
        worst = max(worst, code)
        if art is not None:
            checked.append((art, path))
    if len(args.artifacts) > 1 or len(paths) > 1 or Path(args.artifacts[0]).is_dir():
        worst = max(worst, _check_exclusive(checked))
    _unclaimed_logs(args.artifacts)
    return worst


def _attest_check(args: argparse.Namespace, paths: list):
    """``--policy`` read (2: a line said why it cannot be used), else None without one."""
    if args.policy is None:
        for flag, value in (("--vsa-out", args.vsa_out), ("--vsa-key", args.vsa_key)):
            if value is not None:
                print(f"gpuverify: {flag} needs --policy FILE: the summary says which policy was held", file=sys.stderr)
                return 2
        return None
    from pytest_gpuverify.attest.policy import PolicyError, load_policy
    from pytest_gpuverify.cli.check import AttestCheck

    try:
        policy = load_policy(Path(args.policy))
    except PolicyError as exc:
        print(f"gpuverify: {exc}", file=sys.stderr)
        return 2
    if args.vsa_out is not None and len(paths) > 1:
        print(
            f"gpuverify: --vsa-out summarises one artifact; {len(paths)} were given: check them one at a time",
            file=sys.stderr,
        )
        return 2
    return AttestCheck(
        policy, Path(args.vsa_out) if args.vsa_out else None, Path(args.vsa_key) if args.vsa_key else None
    )


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


def _cmd_handoff(args: argparse.Namespace) -> int:
    from pytest_gpuverify.cli.handoff import run_handoff

    problem = output_problem("handoff", Path(args.output)) if args.output else None
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return run_handoff(args.ticket_dir, args.base, args.output)


def _cmd_sim_install(args: argparse.Namespace) -> int:
    from pytest_gpuverify.simulator import SimState, install
    from pytest_gpuverify.simulator.state import ARCH_DEFAULTS
    from pytest_gpuverify.simulator.sysfs import sysfs_root

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
        f"set ROCM_PATH={args.bin_dir} for its amdsmi library and GPUVERIFY_SYSFS_ROOT={sysfs_root(path)} "
        "for its driver files"
    )
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    import os

    from pytest_gpuverify.cli.doctor import add_health, run_doctor
    from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file

    try:
        env = load_env_file(default_env_path(args.gpu_env, os.environ))
    except EnvFileError as exc:
        print(f"gpuverify doctor: {exc}", file=sys.stderr)
        return 2
    report = run_doctor(env, host_name=args.gpu_host)
    add_health(report, args.store, args.gpu_health)
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

    problem = output_problem("durations", Path(args.out))
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return write_durations([Path(d) for d in args.dirs], Path(args.out))


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_gpuverify.reporting.html_report import write_report

    problem = output_problem("report", Path(args.out))
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


def build_parser() -> argparse.ArgumentParser:
    from pytest_gpuverify import __version__

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
    check.add_argument(
        "--policy",
        default=None,
        metavar="FILE",
        help="hold each artifact's .intoto.jsonl attestation to this TOML policy (signers, predicate types, "
        "subjects) first",
    )
    check.add_argument(
        "--vsa-out", default=None, metavar="FILE", help="with --policy: write the SLSA verification summary here"
    )
    check.add_argument(
        "--vsa-key", default=None, metavar="FILE", help="sign the summary with this ed25519/ECDSA private key file"
    )
    check.set_defaults(func=_cmd_check)
    add_perf_commands(sub)
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
    doctor.add_argument(
        "--store",
        default=None,
        metavar="FILE|URL",
        help="the history store whose GPU health to list (default $GPUVERIFY_HEALTH_STORE, else $GPUVERIFY_HISTORY)",
    )
    doctor.add_argument(
        "--gpu-health",
        default=None,
        metavar="SPEC|off",
        help="the health thresholds (default $GPUVERIFY_HEALTH, else timeouts=3/20,ecc=1,no-gpu=50%%/20)",
    )
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
    add_loop_commands(sub)
    from pytest_gpuverify.cli.agents.commands import add_agent_commands

    add_agent_commands(sub)
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
