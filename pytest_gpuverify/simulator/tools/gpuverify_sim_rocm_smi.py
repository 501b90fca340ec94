"""Simulated ``rocm-smi``: the banner-framed text report, or its one-line ``--json``, for the state.

Stdlib-only and imported flat beside :mod:`gpuverify_sim_common` (see there). A call made of on/off
flags only is read without argparse (:func:`gpuverify_sim_common.plain_call`); argparse reads the rest.
"""

import json
import sys

from gpuverify_sim_common import MIB, VENDOR, arch_info, banner_width, fault, guid, plain_call, spacer


def pid_table(st):
    """pid -> [name, SMI indices, VRAM bytes]; kfd-only processes have no index."""
    procs = {}
    for i, g in enumerate(st["gpus"]):
        for p in g["processes"]:
            entry = procs.setdefault(int(p["pid"]), [p.get("name", "python3"), [], 0])
            entry[1].append(i)
            entry[2] += int(p.get("vram_bytes", 0))
    for p in st.get("kfd_only_processes") or []:
        procs.setdefault(int(p["pid"]), [p.get("name", "python3"), [], 0])
    return procs


# the identity flags (gpu/identity.py), each an on/off flag of the real tool
IDENTITY_FLAGS = (
    "showdriverversion",
    "showvbios",
    "showmaxpower",
    "showserial",
    "showcomputepartition",
    "showmemorypartition",
)
ROCM_SMI_FLAGS = {
    "-u": "showuse",
    "--showuse": "showuse",
    "--showmemuse": "showmemuse",
    "--showbus": "showbus",
    "--showproductname": "showproductname",
    "--json": "json",
    "-v": "showvbios",
    **{"--" + flag: flag for flag in IDENTITY_FLAGS},
}
ROCM_SMI_DEFAULTS = {
    "showuse": False,
    "showmemuse": False,
    "showmeminfo": None,
    "showpids": None,
    "showpidgpus": None,
    "showbus": False,
    "showproductname": False,
    "json": False,
    "loglevel": "error",
    **{flag: False for flag in IDENTITY_FLAGS},
}


def rocm_smi_args(argv):
    import argparse

    p = argparse.ArgumentParser(prog="rocm-smi", description="AMD ROCm System Management Interface")
    p.add_argument("-u", "--showuse", action="store_true")
    p.add_argument("--showmemuse", action="store_true")
    p.add_argument("--showmeminfo", nargs="+", metavar="TYPE")
    p.add_argument("--showpids", nargs="?", const="summary", choices=["summary", "details"])
    p.add_argument("--showpidgpus", nargs="*", metavar="PID")
    p.add_argument("--showbus", action="store_true")
    p.add_argument("--showproductname", action="store_true")
    p.add_argument("-v", "--showvbios", action="store_true")
    for flag in IDENTITY_FLAGS:
        if flag != "showvbios":
            p.add_argument("--" + flag, action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--loglevel", default="error")
    return p.parse_args(argv)  # argparse, like the real tool: usage + exit 2 on an unknown flag


def rocm_smi(argv, st):
    a = plain_call(argv, ROCM_SMI_FLAGS, ROCM_SMI_DEFAULTS) or rocm_smi_args(argv)
    rc = fault("rocm-smi", st, a.json)
    if rc is not None:
        return rc
    v, gpus, width = st["v"], st["gpus"], banner_width(st)
    if st.get("lowpower_warning"):  # logging.warning -> stderr, before the banner
        sys.stderr.write(
            "WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n"
            if v >= (7, 0)
            else "WARNING: AMD GPUs visible, but data is inaccessible. Check power control/runtime_status\n"
        )
    out, js = [], {"card%d" % i: {} for i in range(len(gpus))}
    js["system"] = {}

    def log(i, metric, value):  # printLog: JSON keeps the stripped value as a string
        if a.json:
            js["card%d" % i][metric] = str(value).strip()
        else:
            out.append("GPU[%d]\t\t: %s: %s" % (i, metric, value))

    def text(line):  # printLog(None, ...): text mode only
        if not a.json:
            out.append(line)

    def section(title=""):
        text(spacer(width, title))

    if not a.json:
        out += ["", ""]  # print('\n')
    section(" ROCm System Management Interface ")
    if a.showdriverversion:  # printSysLog: a system value, no GPU prefix
        section(" Version of System Component ")
        if a.json:
            js["system"]["Driver version"] = st["amdgpu_version"]
        else:
            out.append("Driver version: %s" % st["amdgpu_version"])
        section()
    if a.showvbios:
        section(" VBIOS ")
        for i, g in enumerate(gpus):
            log(i, "VBIOS version", g["vbios"])
        section()
    if a.showmaxpower:
        section(" Power Cap ")
        for i, g in enumerate(gpus):
            log(i, "Max Graphics Package Power (W)", "%.1f" % float(g["power_cap_w"]))
        section()
    if a.showuse:
        section(" % time GPU is busy ")
        for i, g in enumerate(gpus):
            if g["use_pct"] is None:
                text("GPU[%d]\t\t: GPU use Unsupported" % i)
            else:
                log(i, "GPU use (%)", g["use_pct"])
            log(i, "GFX Activity", 50288 + 1000 * (g["use_pct"] or 0))  # accumulated counter, not a %
        section()
    if a.showmemuse:
        section(" Current Memory Use ")
        for i, g in enumerate(gpus):
            busy = (g["use_pct"] or 0) // 3
            if v < (6, 1, 2):  # before b86f922 this label meant memory *bandwidth* busy %
                log(i, "GPU memory use (%)", busy)
            else:
                log(i, "GPU Memory Allocated (VRAM%)", g["vram_used"] * 100 // max(g["vram_total"], 1))
                log(i, "GPU Memory Read/Write Activity (%)", busy)
            log(i, "Memory Activity", "N/A")
            log(i, "Avg. Memory Bandwidth", 0)
        section()
    if a.showmeminfo:
        kinds = ["vram", "vis_vram", "gtt"] if "all" in a.showmeminfo else a.showmeminfo
        section(" Memory Usage (Bytes) ")
        for i, g in enumerate(gpus):
            for kind in kinds:
                total, used = (g["vram_total"], g["vram_used"]) if "vram" in kind else (128 << 30, 12 * MIB)
                log(i, "%s Total Memory (B)" % kind.upper(), total)
                log(i, "%s Total Used Memory (B)" % kind.upper(), used)
        section()
    if a.showserial:
        section(" Serial Number ")
        for i, g in enumerate(gpus):
            log(i, "Serial Number", g["serial"])
        section()
    procs = pid_table(st)
    if a.showpids is not None:
        section(" KFD Processes ")
        if not procs:
            text("No KFD PIDs currently running")
        else:
            rows = [
                [
                    "PID",
                    "PROCESS NAME",
                    "GPU" if a.showpids == "details" else "GPU(s)",
                    "VRAM USED",
                    "SDMA USED",
                    "CU OCCUPANCY",
                ]
            ]
            for pid, (name, idxs, vram) in procs.items():
                if a.showpids == "details":  # one row per device, still the count (rocm-systems #4405)
                    rows += [
                        [str(pid), name[:15], str(len(idxs)), str(vram // max(len(idxs), 1)), "0", "0"] for _ in idxs
                    ]
                else:
                    rows.append([str(pid), name[:15], str(len(idxs)), str(vram), "0", "0"])
            text("KFD process information:")
            widths = [max(len(r[c]) for r in rows) for c in range(6)]
            for n, row in enumerate(rows):  # print2DArray
                line = "".join(cell.ljust(widths[c]) + "\t" for c, cell in enumerate(row))
                if not a.json:
                    out.append(line)
                elif n:  # JSON mode lower-cases and collapses the row into one system value
                    first, rest = " ".join(line.split()).lower().split(" ", 1)
                    js["system"]["PID" + first] = rest.replace(" ", ", ")
        section()
    if a.showpidgpus is not None:
        section(" GPUs Indexed by PID ")
        wanted = [int(x) for x in a.showpidgpus if x.isdigit()] or list(procs)
        if not procs and not a.showpidgpus:
            text("No KFD PIDs currently running")
        for pid in wanted:
            idxs = procs.get(pid, ["", []])[1]
            metric = "PID %d is using %d DRM device(s)" % (pid, len(idxs))
            if not idxs:
                text(metric)
                continue
            lines, line = "", metric + ":\n"  # printListLog wraps at appWidth
            for idx in idxs:
                item = "%d " % idx
                if len(line) + len(item) < width:
                    line += item
                else:
                    lines, line = lines + line + "\n", item
            text(lines + line)
        section()
    if a.showbus:
        section(" PCI Bus ID ")
        for i, g in enumerate(gpus):
            log(i, "PCI Bus", g["bdf"])
        section()
    if a.showproductname:
        section(" Product Info ")
        for i, g in enumerate(gpus):
            dev, _, _, _, sku = arch_info(g)
            if v >= (6, 1, 1):
                fields = [
                    ("Card Series", "\t\t" + g["name"]),
                    ("Card Model", "\t\t" + dev),
                    ("Card Vendor", "\t\t" + VENDOR),
                    ("Card SKU", "\t\t" + sku),
                    ("Subsystem ID", "\t" + dev),
                    ("Device Rev", "\t\t0x00"),
                    ("Node ID", "\t\t%d" % g["node_id"]),
                    ("GUID", "\t\t" + guid(g)),
                    ("GFX Version", "\t\t" + g["arch"]),
                ]
            else:  # before 6.1.1: lower-case labels, no Node ID / GUID / GFX Version
                fields = [
                    ("Card series", "\t\t" + g["name"]),
                    ("Card model", "\t\t" + dev),
                    ("Card vendor", "\t\t" + VENDOR),
                    ("Card SKU", "\t\t" + sku),
                ]
            for metric, value in fields:
                log(i, metric, value)
        section()
    for flag, title, metric, key in (
        ("showcomputepartition", " Current Compute Partition ", "Compute Partition", "compute_partition"),
        ("showmemorypartition", " Current Memory Partition ", "Memory Partition", "memory_partition"),
    ):
        if getattr(a, flag):
            section(title)
            for i, g in enumerate(gpus):
                if g.get(key):
                    log(i, metric, g[key])
                else:  # a part without partition modes: the library's error, logged
                    text("GPU[%d]\t\t: Not supported on the given system" % i)
            section()
    section(" End of ROCm SMI Log ")
    if a.json:
        data = {k: val for k, val in js.items() if val}
        if data:
            sys.stdout.write(json.dumps(data) + "\n")
        else:
            sys.stderr.write("WARNING: No JSON data to report\n")
    else:
        sys.stdout.write("\n".join(out) + "\n")
    return 0
