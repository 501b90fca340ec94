"""Prints what trace_h200.sh measured, from the artifacts: per row the printed time against the traced
kernels' median, the verdict and its trace reasons, the stored trace, and the timed runs' figures of a
session without the trace against one with it (the trace run is after them: the ratio should be ~1).

    python3 trace_report.py ARTIFACT [--without ARTIFACT]
"""

import json
import sys


def load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def label(row):
    return " ".join(p for p in (row.get("table"), row["shape"], row["name"]) if p)


def main(argv):
    art = load(argv[0])
    print(f"{argv[0]}: verdict {art['verdict']}")
    for reason in art["reasons"]:
        print(f"  reason: {reason}")
    for note in art["notes"]:
        if "--gpu-trace" in note:
            print(f"  note: {note}")
    for p in art.get("profiles", []):
        print(
            f"  {p['purpose']}: {p['tool']} {p['version']} {p['format']} {p['path']} {p['bytes']} bytes "
            f"sha256 {str(p['sha256'])[:16]} exit {p['exit_code']} problem {p['problem']}"
        )
    by_row = {r: k for k in art.get("kernels", []) for r in k["rows"]}
    print(f"  {'row':<28} {'printed us':>11} {'trace us':>10} {'printed/trace':>14}  kernel grid code object")
    for row in art["perf"]:
        if row.get("us_median") is None:
            continue
        k = by_row.get(label(row))
        took = k["median_ns"] / 1000 if k else None
        ratio = f"{row['us_median'] / took:14.3f}" if took else f"{'-':>14}"
        kernel = f"{k['name']} {k['grid']} {(k['code_objects'] or ['?'])[0][:12]}" if k else "not paired"
        print(f"  {label(row):<28} {row['us_median']:11.3f} {took or float('nan'):10.3f} {ratio}  {kernel}")
    if "--without" in argv:
        other = load(argv[argv.index("--without") + 1])
        theirs = {label(r): r["us_median"] for r in other["perf"] if r.get("us_median") is not None}
        print("  timed runs, with the trace run after them / a session without it:")
        for row in art["perf"]:
            if row.get("us_median") is not None and theirs.get(label(row)):
                print(
                    f"    {label(row):<28} {row['us_median']:10.3f} / {theirs[label(row)]:10.3f} = "
                    f"{row['us_median'] / theirs[label(row)]:.3f}"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
