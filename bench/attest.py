"""What the in-toto attestation (``bench_<topic>.intoto.jsonl``) adds to storing an artifact: one
process, interleaved rounds of ``store_artifact`` alone and ``store_artifact`` then ``store_attestation``
(as a session's write does), unsigned, signed with an ed25519 key file (``--gpu-attest-key``) and with an
SSH key (the Signing table: an unencrypted ed25519 key signs in process, as a run signs its files).
The artifact holds 64 perf rows and names a raw log of --log-mib MiB and a JUnit report, all hashed for
the subjects. Goal: under 10 ms per artifact.

    python bench/attest.py [--rounds 40] [--log-mib 1] [--out bench/results/attest.txt]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: E402

from pytest_gpuverify.engine.store import store_artifact, store_attestation  # noqa: E402
from pytest_gpuverify.records.artifact import Artifact, PerfRow, RepoRecord  # noqa: E402

GOAL_MS = 10.0


def artifact(folder: Path, log_mib: int) -> Artifact:
    (folder / "bench_gemm.log").write_bytes(b"shape 4096x4096 gemm 12.5 us PASS\n" * (log_mib * 31_000))
    (folder / "bench_gemm.junit.xml").write_text("<testsuite tests='64'/>\n")
    return Artifact(
        topic="gemm",
        key="T-1",
        ts="2026-12-03T10:00:00Z",
        raw_output="bench_gemm.log",
        junit_xml="bench_gemm.junit.xml",
        repos=[RepoRecord(path="/work/aiter", sha="0123456789abcdef0123456789abcdef01234567")],
        perf=[PerfRow(shape=f"{m}x4096", name="gemm", us_median=12.5 + m / 1000, runs=100) for m in range(64)],
        verdict="PASS",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--log-mib", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "attest.txt"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuverify-bench-attest-") as tmp:
        folder = Path(tmp)
        art = artifact(folder, args.log_mib)
        pem = folder / "attest.pem"
        pem.write_bytes(
            ed25519.Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        ssh = folder / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh)], check=True)
        kinds: dict[str, tuple[Path | None, Path | None] | None] = {
            "store only": None,
            "+ attestation, unsigned": (None, None),
            "+ attestation, ed25519 key file": (None, pem),
            "+ attestation, SSH key (Signing table)": (ssh, None),
        }
        times: dict[str, list[float]] = {k: [] for k in kinds}
        path = folder / "bench_gemm.json"
        for _ in range(args.rounds + 1):  # the first round warms imports and caches: not counted
            for kind, keys in kinds.items():
                start = time.perf_counter()
                stored = store_artifact(art, path, None)
                if keys is not None:
                    problems = store_attestation(art, stored, *keys)
                    assert not problems, problems
                times[kind].append((time.perf_counter() - start) * 1000)
                for old in folder.glob("bench_gemm.2*"):  # the earlier artifacts moved aside
                    old.unlink()
        base = statistics.median(times["store only"][1:])
        lines = [
            f"bench/attest.py: {args.rounds} interleaved rounds, one process; artifact of 64 perf rows, "
            f"raw log {args.log_mib} MiB, JUnit report; goal: the attestation adds < {GOAL_MS:g} ms per artifact",
            f"{'':40} {'median ms':>10} {'added ms':>9} {'ratio':>6}",
        ]
        for kind in kinds:
            med = statistics.median(times[kind][1:])
            verdict = (
                "" if kind == "store only" else ("  within the goal" if med - base < GOAL_MS else "  OVER the goal")
            )
            lines.append(f"{kind:40} {med:10.2f} {med - base:9.2f} {med / base:6.2f}{verdict}")
        worst = max(statistics.median(times[k][1:]) - base for k in kinds if k != "store only")
        lines.append(f"worst added: {worst:.2f} ms per artifact")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(args.out).write_text(text)
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
