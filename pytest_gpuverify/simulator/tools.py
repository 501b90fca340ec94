#!/usr/bin/env python3
"""Simulated ``rocm-smi``, ``amd-smi`` and ``rocminfo`` for hosts without an AMD GPU.

One stdlib-only file: it runs inside bare containers that have neither pydantic nor this package.
``install()`` copies it once per tool name; it dispatches on the name it was called by, reads the state
JSON (``$GPUVERIFY_SIM_STATE``, else the baked ``STATE_PATH``) on every call, and prints what the real
tool prints for that state. Layouts follow the captures in shared/samples/gpu_tools (rocm-smi banner
width, tab-padded tables, one-line ``--json``; amd-smi list vs ``gpu_data`` envelopes; rocminfo padding).
"""

import json
import os
import sys
import time

STATE_PATH = "/nonexistent/sim-state.json"  # install() bakes the absolute path of the state file in here
TOOLS = ("rocm-smi", "amd-smi", "rocminfo")
MIB = 1 << 20
VENDOR = "Advanced Micro Devices, Inc. [AMD/ATI]"
# arch -> (device id, compute units, generic ISA or None, ISA feature suffix, card SKU)
ARCH = {
    "gfx942": ("0x74a1", 304, "gfx9-4-generic", ":sramecc+:xnack-", "M3000100"),
    "gfx950": ("0x75a3", 256, "gfx9-4-generic", ":sramecc+:xnack-", "M3500100"),
    "gfx90a": ("0x740c", 110, None, ":sramecc+:xnack-", "D65201"),
    "gfx1100": ("0x744c", 96, "gfx11-generic", "", "D70401"),
}
# ROCm release -> amd-smi tool version (amd-smi prints both in `amd-smi version`)
AMD_SMI_VERSIONS = [((7, 1), "26.1.0"), ((7, 0), "26.0.2"), ((6, 4), "25.3.0"), ((6, 3), "24.7.1"),
                    ((6, 2), "24.6.2"), ((6, 1), "24.5.1"), ((0,), "23.4.2")]


def ver(text):
    """"6.4.1" -> (6, 4, 1), on the numeric prefix of each part ("7.0.2-rc1" -> (7, 0, 2))."""
    out = []
    for piece in str(text).split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def load_state(tool):
    path = os.environ.get("GPUVERIFY_SIM_STATE") or STATE_PATH
    try:
        with open(path, encoding="utf-8") as fh:
            st = json.load(fh)
    except (OSError, ValueError) as exc:
        sys.stderr.write("%s: simulator state %s unreadable: %s\n" % (tool, path, exc))
        sys.exit(1)
    cpus = int(st.get("cpus", 2))
    for i, g in enumerate(st.setdefault("gpus", [])):  # the pydantic side fills these; stay usable without it
        g.setdefault("arch", "gfx942")
        g.setdefault("name", "AMD Instinct MI300X")
        g.setdefault("use_pct", 0)
        g.setdefault("vram_used", 283 * MIB)
        g.setdefault("vram_total", 192 << 30)
        g["node_id"] = cpus + i if g.get("node_id") is None else g["node_id"]
        g["bdf"] = g.get("bdf") or "0000:%02x:00.0" % (5 + 0x20 * i)
        g["uuid"] = g.get("uuid") or "GPU-%016x" % (0x8D1457E2C20F0000 + i)
        g.setdefault("processes", [])
    st["v"] = ver(st.get("rocm_version", "6.4.1"))
    return st


def hip_rank(st):
    """SMI index -> HIP index: HIP numbers GPUs by KFD node id."""
    order = sorted(range(len(st["gpus"])), key=lambda i: st["gpus"][i]["node_id"])
    return {smi: hip for hip, smi in enumerate(order)}


def hexid(g):
    return g["uuid"].split("-", 1)[-1].lower()


def guid(g):
    return str(int(hexid(g)[:4] or "0", 16) % 65000 + 1000)  # KFD gpu_id: stable per GPU, arbitrary value


def arch_info(g):
    return ARCH.get(g["arch"], ("0x7400", 64, None, "", "N/A"))


def fault(tool, st, json_mode=False):
    """None to go on, else the exit status after acting out the configured fault."""
    kind = (st.get("faults") or {}).get(tool)
    if not kind:
        return None
    if kind == "hang":
        time.sleep(3600)
        return 1
    if kind == "garbage":
        sys.stdout.write("\x1b[0m@@ %s: \x01\x02 ?? 0xDEADBEEF <garbage>\n{\"card0\": [1, 2,, }\n" % tool)
        return 0
    if kind == "fail":
        if tool == "rocm-smi":  # logs the error and still exits 0 (RETCODE stays 0 at the default log level)
            sys.stderr.write("ERROR: Driver not initialized (amdgpu not found in modules)\n")
            if json_mode:
                sys.stderr.write("WARNING: No JSON data to report\n")
            else:
                w = banner_width(st)
                sys.stdout.write("\n\n" + spacer(w, " ROCm System Management Interface ") + "\n"
                                 + spacer(w, " End of ROCm SMI Log ") + "\n")
            return 0
        if tool == "amd-smi":
            sys.stderr.write("AMDSMI_STATUS_DRM_ERROR - Error when calling libdrm\n"
                             "ERROR: Unable to initialize amdsmi library, is the amdgpu driver loaded?\n")
            return 1
        sys.stdout.write("ROCk module is loaded\n")
        sys.stderr.write("hsa api call failure at: /longer_pathname_so_that_rpms_can_support_packaging_the_debug_"
                         "info_for_all_os_releases/BUILD/rocminfo/rocminfo.cc:1306\nCall returned "
                         "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n")
        return 1
    return 0  # "empty": print nothing, exit 0


# ------------------------------------------------------------------------------------------ rocm-smi
def banner_width(st):
    return 80 if st["v"] < (5, 6) else 84 if st["v"] < (6, 0) else 90  # appWidth by release


def spacer(width, title=""):
    if len(title) % 2:
        title += "="
    half = (width - len(title)) // 2
    return "=" * half + title + "=" * half


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


class Args:
    """What argparse gives for a call made of on/off flags only (see :func:`plain_call`)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def plain_call(argv, flags, defaults):
    """``Args`` for a call whose every word is one of ``flags`` (word -> attribute, each an on/off
    flag), else None, and argparse reads the call (usage and exit 2 on a bad one, like the real
    tools). The samplers' calls take this path: importing argparse and building the parser would
    cost more than the rest of the call."""
    values = dict(defaults)
    for word in argv:
        if word not in flags:
            return None
        values[flags[word]] = True
    return Args(**values)


ROCM_SMI_FLAGS = {"-u": "showuse", "--showuse": "showuse", "--showmemuse": "showmemuse", "--showbus": "showbus",
                  "--showproductname": "showproductname", "--json": "json"}
ROCM_SMI_DEFAULTS = {"showuse": False, "showmemuse": False, "showmeminfo": None, "showpids": None,
                     "showpidgpus": None, "showbus": False, "showproductname": False, "json": False,
                     "loglevel": "error"}


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
        sys.stderr.write("WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n"
                         if v >= (7, 0) else
                         "WARNING: AMD GPUs visible, but data is inaccessible. Check power control/runtime_status\n")
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
    procs = pid_table(st)
    if a.showpids is not None:
        section(" KFD Processes ")
        if not procs:
            text("No KFD PIDs currently running")
        else:
            rows = [["PID", "PROCESS NAME", "GPU" if a.showpids == "details" else "GPU(s)", "VRAM USED",
                     "SDMA USED", "CU OCCUPANCY"]]
            for pid, (name, idxs, vram) in procs.items():
                if a.showpids == "details":  # one row per device, still the count (rocm-systems #4405)
                    rows += [[str(pid), name[:15], str(len(idxs)), str(vram // max(len(idxs), 1)), "0", "0"]
                             for _ in idxs]
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
                fields = [("Card Series", "\t\t" + g["name"]), ("Card Model", "\t\t" + dev),
                          ("Card Vendor", "\t\t" + VENDOR), ("Card SKU", "\t\t" + sku), ("Subsystem ID", "\t" + dev),
                          ("Device Rev", "\t\t0x00"), ("Node ID", "\t\t%d" % g["node_id"]),
                          ("GUID", "\t\t" + guid(g)), ("GFX Version", "\t\t" + g["arch"])]
            else:  # before 6.1.1: lower-case labels, no Node ID / GUID / GFX Version
                fields = [("Card series", "\t\t" + g["name"]), ("Card model", "\t\t" + dev),
                          ("Card vendor", "\t\t" + VENDOR), ("Card SKU", "\t\t" + sku)]
            for metric, value in fields:
                log(i, metric, value)
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


# ------------------------------------------------------------------------------------------- amd-smi
# subcommand -> its on/off flags (word -> attribute); "-g/--gpu N..." goes through argparse
AMD_SMI_FLAGS = {
    "metric": {"--json": "json", "-u": "usage", "--usage": "usage", "-m": "mem_usage", "--mem-usage": "mem_usage"},
    "process": {"--json": "json"},
    "static": {"--json": "json", "-a": "asic", "--asic": "asic", "-b": "bus", "--bus": "bus"},
    "list": {"--json": "json", "-e": "enumeration", "--enumeration": "enumeration"},
    "version": {},
}


def amd_smi_plain_call(argv, v):
    if not argv or argv[0] not in AMD_SMI_FLAGS:
        return None
    flags = dict(AMD_SMI_FLAGS[argv[0]])
    if argv[0] == "list" and v < (6, 4):  # enumeration info (hip_id) arrived with amd-smi 25.3
        del flags["-e"], flags["--enumeration"]
    defaults = {"cmd": argv[0], "gpu": None, **{attr: False for attr in flags.values()}}
    if argv[0] == "version":
        defaults.pop("gpu")
    return plain_call(argv[1:], flags, defaults)


def amd_smi_args(argv, v):
    """argparse's reading of the call (usage and exit 2 on a bad one); None after printing the
    help for a call with no subcommand."""
    import argparse

    p = argparse.ArgumentParser(prog="amd-smi", description="AMD System Management Interface")
    sub = p.add_subparsers(dest="cmd")
    parsers = {name: sub.add_parser(name) for name in AMD_SMI_FLAGS}
    for name in ("metric", "process", "static", "list"):
        parsers[name].add_argument("--json", action="store_true")
        parsers[name].add_argument("-g", "--gpu", nargs="+", type=int)
    parsers["metric"].add_argument("-u", "--usage", action="store_true")
    parsers["metric"].add_argument("-m", "--mem-usage", action="store_true")
    parsers["static"].add_argument("-a", "--asic", action="store_true")
    parsers["static"].add_argument("-b", "--bus", action="store_true")
    if v >= (6, 4):
        parsers["list"].add_argument("-e", "--enumeration", action="store_true")
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help()
        return None
    return a


def amd_smi(argv, st):
    v = st["v"]
    if not st.get("amd_smi_installed", True):
        sys.stderr.write("amd-smi: command not found\n")
        return 127
    a = amd_smi_plain_call(argv, v) or amd_smi_args(argv, v)
    if a is None:
        return 0
    rc = fault("amd-smi", st, getattr(a, "json", False))
    if rc is not None:
        return rc
    tool_ver = next(t for floor, t in AMD_SMI_VERSIONS if v >= floor)
    if a.cmd == "version":
        sys.stdout.write("AMDSMI Tool: %s+ede62f2 | AMDSMI Library version: %s | ROCm version: %s | "
                         "amdgpu version: 6.12.12 | amd_hsmp version: N/A\n"
                         % (tool_ver, tool_ver.rsplit(".", 1)[0] + ".0", st.get("rocm_version")))
        return 0
    if st.get("nonroot_warning"):  # print() in check_required_groups: stdout, before any JSON
        sys.stdout.write("WARNING: User is missing the following required groups: render, video. "
                         "Please add user to these groups.\n")
    gpus = st["gpus"]
    sel = [i for i in range(len(gpus)) if not a.gpu or i in a.gpu]
    if a.gpu and any(i >= len(gpus) for i in a.gpu):
        sys.stderr.write("AmdSmiParameterException: Invalid GPU index %s\n" % a.gpu)
        return 255

    def val(value, unit):  # units arrived in 6.1; before that the bare number
        return {"value": value, "unit": unit} if v >= (6, 1) else value

    entries = []
    for i in sel:
        g = gpus[i]
        e = {"gpu": i}
        if a.cmd == "metric":
            if a.usage or not a.mem_usage:
                use = g["use_pct"]
                e["usage"] = "N/A" if use is None else {
                    "gfx_activity": val(use, "%"), "umc_activity": val(use // 3, "%"), "mm_activity": val(0, "%"),
                    "vcn_activity": [val(0, "%"), "N/A", "N/A", "N/A"], "jpeg_activity": [val(0, "%")] + ["N/A"] * 7}
            if a.mem_usage or not a.usage:
                tot, used, gtt = g["vram_total"] // MIB, g["vram_used"] // MIB, 128 * 1024
                e["mem_usage"] = {k: val(n, "MB") for k, n in (
                    ("total_vram", tot), ("used_vram", used), ("free_vram", tot - used), ("total_visible_vram", tot),
                    ("used_visible_vram", used), ("free_visible_vram", tot - used), ("total_gtt", gtt),
                    ("used_gtt", 12), ("free_gtt", gtt - 12))}
        elif a.cmd == "process":
            plist = [{"process_info": {
                "name": "N/A" if st.get("nonroot_warning") else pr.get("name", "python3"),  # amdsmi #130
                "pid": int(pr["pid"]),
                "memory_usage": {"gtt_mem": val(0, "B"), "cpu_mem": val(0, "B"),
                                 "vram_mem": val(int(pr.get("vram_bytes", 0)), "B")},
                "mem_usage": val(int(pr.get("vram_bytes", 0)), "B"),
                "usage": {"gfx": val(0, "ns"), "enc": val(0, "ns")}}} for pr in g["processes"]]
            e["process_list"] = plist or [{"process_info": "No running processes detected"}]
        elif a.cmd == "static":
            dev, cus, _, _, _ = arch_info(g)
            e["asic"] = {"market_name": g["name"], "vendor_id": "0x1002", "vendor_name": VENDOR.replace(",", ""),
                         "subvendor_id": "0x1002", "device_id": dev, "subsystem_id": dev, "rev_id": "0x00",
                         "asic_serial": "0x" + hexid(g).upper(), "oam_id": i, "num_compute_units": cus,
                         "target_graphics_version": g["arch"]}
            if a.bus or not a.asic:
                e["bus"] = {"bdf": g["bdf"], "max_pcie_width": 16, "max_pcie_speed": val(32, "GT/s")}
        elif a.cmd == "list":
            h = hexid(g)
            e.update({"bdf": g["bdf"], "uuid": "%sff%s-0000-1000-80%s-%s" % (h[:2], arch_info(g)[0][2:], h[2:4], h[4:]),
                      "kfd_id": int(guid(g)), "node_id": g["node_id"], "partition_id": 0})
            if getattr(a, "enumeration", False):
                e.update({"render": "renderD%d" % (128 + i), "card": "card%d" % i, "hsa_id": g["node_id"],
                          "hip_id": hip_rank(st)[i], "hip_uuid": g["uuid"]})
        entries.append(e)
    if a.json:
        # amd-smi 26.x (ROCm 7.0) wraps static/metric in {"gpu_data": [...]}; process and list stay lists
        data = {"gpu_data": entries} if v >= (7, 0) and a.cmd in ("metric", "static") else entries
        sys.stdout.write(json.dumps(data, indent=4) + "\n")
    else:
        sys.stdout.write(amd_text(entries))
    return 0


def amd_text(entries):
    def render(key, value, depth):
        pad = "    " * depth
        if isinstance(value, dict) and set(value) == {"value", "unit"}:
            return ["%s%s: %s %s" % (pad, key.upper(), value["value"], value["unit"])]
        if isinstance(value, dict):
            return ["%s%s:" % (pad, key.upper())] + [ln for k, x in value.items() for ln in render(k, x, depth + 1)]
        if isinstance(value, list):
            if all(isinstance(x, dict) and "process_info" in x for x in value):
                return [ln for x in value for ln in render("process_info", x["process_info"], depth)]
            items = ["%s %s" % (x["value"], x["unit"]) if isinstance(x, dict) else str(x) for x in value]
            return ["%s%s: [%s]" % (pad, key.upper(), ", ".join(items))]
        return ["%s%s: %s" % (pad, key.upper(), value)]

    lines = []
    for e in entries:
        lines.append("GPU: %d" % e["gpu"])
        for k, x in e.items():
            if k != "gpu":
                lines += render(k, x, 1)
        lines.append("")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ rocminfo
def kv(indent, label, value=None):
    # rocminfo pads labels to 25 and values to 35 columns (trailing spaces are part of its output)
    return " " * indent + label.ljust(25) + ("" if value is None else value.ljust(35))


def pool_lines(pools):
    lines = [kv(2, "Pool Info:")]
    for n, (segment, size, alloc, gran, access) in enumerate(pools, 1):
        lines += [kv(4, "Pool %d" % n), kv(6, "Segment:", segment), kv(6, "Size:", size),
                  kv(6, "Allocatable:", alloc), kv(6, "Alloc Granule:", gran), kv(6, "Alloc Alignment:", gran),
                  kv(6, "Accessible by all:", access)]
    return lines


def agent_lines(n, fields, tail):
    return ["*******                  ", ("Agent %d" % n).ljust(25), "*******                  "] + \
        [kv(2, label + ":", value) if value is not None else kv(2, label + ":") for label, value in fields] + tail


def rocminfo(argv, st):
    rc = fault("rocminfo", st)
    if rc is not None:
        return rc
    v, cpus = st["v"], int(st.get("cpus", 2))
    gpus = sorted(st["gpus"], key=lambda g: g["node_id"])  # agents come in KFD node order
    visible = os.environ.get("ROCR_VISIBLE_DEVICES")
    if visible is not None:  # ROCr applies it, so rocminfo (unlike the SMI tools) honours it
        keep = [x.strip() for x in visible.split(",") if x.strip()]
        gpus = [g for n, g in enumerate(gpus) if str(n) in keep or g["uuid"] in keep]
    out = ["ROCk module version 6.10.5 is loaded" if v >= (6, 2) else "ROCk module is loaded",
           "=====================    ", "HSA System Attributes    ", "=====================    ",
           kv(0, "Runtime Version:") + "1.14", kv(0, "Runtime Ext Version:") + "1.6",
           kv(0, "System Timestamp Freq.:") + "1000.000000MHz",
           kv(0, "Sig. Max Wait Duration:") + "18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)",
           kv(0, "Machine Model:", "LARGE"), kv(0, "System Endianness:", "LITTLE"), kv(0, "Mwaitx:") + "DISABLED",
           kv(0, "DMAbuf Support:") + "YES", "", "==========               ", "HSA Agents               ",
           "==========               "]
    cpu_name = "AMD EPYC 9474F 48-Core Processor"
    for c in range(cpus):
        fields = [("Name", cpu_name), ("Uuid", "CPU-XX"), ("Marketing Name", cpu_name), ("Vendor Name", "CPU"),
                  ("Feature", "None specified"), ("Profile", "FULL_PROFILE"), ("Float Round Mode", "NEAR"),
                  ("Max Queue Number", "0(0x0)"), ("Queue Min Size", "0(0x0)"), ("Queue Max Size", "0(0x0)"),
                  ("Queue Type", "MULTI"), ("Node", str(c)), ("Device Type", "CPU"), ("Cache Info", None)]
        tail = [kv(4, "L1:", "32768(0x8000) KB"), kv(2, "Chip ID:", "0(0x0)"), kv(2, "ASIC Revision:", "0(0x0)"),
                kv(2, "Cacheline Size:", "64(0x40)"), kv(2, "Max Clock Freq. (MHz):", "3600"),
                kv(2, "BDFID:", "0"), kv(2, "Internal Node ID:", str(c)), kv(2, "Compute Unit:", "96"),
                kv(2, "SIMDs per CU:", "0"), kv(2, "Shader Engines:", "0"), kv(2, "Shader Arrs. per Eng.:", "0"),
                kv(2, "WatchPts on Addr. Ranges:") + "1", kv(2, "Features:") + "None"]
        size = "1188729676(0x46da934c) KB"
        tail += pool_lines([(s, size, "TRUE", "4KB", "TRUE") for s in (
            "GLOBAL; FLAGS: FINE GRAINED", "GLOBAL; FLAGS: KERNARG, FINE GRAINED", "GLOBAL; FLAGS: COARSE GRAINED")])
        out += agent_lines(c + 1, fields, tail + [kv(2, "ISA Info:")])
    for n, g in enumerate(gpus):
        dev, cus, generic, feats, _ = arch_info(g)
        bus = int(g["bdf"].split(":")[1], 16)
        fields = [("Name", g["arch"]), ("Uuid", g["uuid"]), ("Marketing Name", g["name"]), ("Vendor Name", "AMD"),
                  ("Feature", "KERNEL_DISPATCH"), ("Profile", "BASE_PROFILE"), ("Float Round Mode", "NEAR"),
                  ("Max Queue Number", "128(0x80)"), ("Queue Min Size", "64(0x40)"),
                  ("Queue Max Size", "131072(0x20000)"), ("Queue Type", "MULTI"), ("Node", str(g["node_id"])),
                  ("Device Type", "GPU"), ("Cache Info", None)]
        kb = "%d(0x%x) KB" % (g["vram_total"] >> 10, g["vram_total"] >> 10)
        tail = [kv(4, "L1:", "32(0x20) KB"), kv(4, "L2:", "4096(0x1000) KB"),
                kv(2, "Chip ID:", "%d(%s)" % (int(dev, 16), dev)), kv(2, "ASIC Revision:", "1(0x1)"),
                kv(2, "Cacheline Size:", "64(0x40)"), kv(2, "Max Clock Freq. (MHz):", "2100"),
                kv(2, "BDFID:", str(bus << 8)), kv(2, "Internal Node ID:", str(g["node_id"])),
                kv(2, "Compute Unit:", str(cus)), kv(2, "SIMDs per CU:", "4"), kv(2, "Shader Engines:", "32"),
                kv(2, "Shader Arrs. per Eng.:", "1"), kv(2, "WatchPts on Addr. Ranges:") + "4",
                kv(2, "Coherent Host Access:", "FALSE"), kv(2, "Features:") + "KERNEL_DISPATCH ",
                kv(2, "Fast F16 Operation:", "TRUE"), kv(2, "Wavefront Size:", "64(0x40)"),
                kv(2, "Workgroup Max Size:", "1024(0x400)"), kv(2, "Max Waves Per CU:", "32(0x20)")]
        tail += pool_lines([(s, kb, "TRUE", "4KB", "FALSE") for s in (
            "GLOBAL; FLAGS: COARSE GRAINED", "GLOBAL; FLAGS: EXTENDED FINE GRAINED", "GLOBAL; FLAGS: FINE GRAINED")]
            + [("GROUP", "64(0x40) KB", "FALSE", "0KB", "FALSE")])
        tail.append(kv(2, "ISA Info:"))
        isas = ["amdgcn-amd-amdhsa--" + g["arch"] + feats]
        if generic and v >= (6, 4):  # newer ROCm also lists the generic ISA (the 2nd `grep gfx` hit)
            isas.append("amdgcn-amd-amdhsa--" + generic + feats)
        for k, isa in enumerate(isas, 1):
            tail += [kv(4, "ISA %d" % k), " " * 6 + "Name:".ljust(25) + isa,
                     kv(6, "Machine Models:", "HSA_MACHINE_MODEL_LARGE"), kv(6, "Profiles:", "HSA_PROFILE_BASE"),
                     kv(6, "Default Rounding Mode:", "NEAR"), kv(6, "Fast f16:", "TRUE"),
                     kv(6, "Workgroup Max Size:", "1024(0x400)"), kv(6, "FBarrier Max Size:", "32")]
        out += agent_lines(cpus + n + 1, fields, tail)
    out.append("*** Done ***             ")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    tool = os.path.basename(argv[0])
    if tool not in TOOLS and len(argv) > 1 and argv[1] in TOOLS:  # `python3 tools.py rocm-smi ...`
        argv, tool = argv[1:], argv[1]
    if tool not in TOOLS:
        sys.stderr.write("simulated ROCm tools: call me as one of %s\n" % ", ".join(TOOLS))
        return 2
    st = load_state(tool)
    run = {"rocm-smi": rocm_smi, "amd-smi": amd_smi, "rocminfo": rocminfo}[tool]
    try:
        return run(argv[1:], st)
    except BrokenPipeError:  # `tool | head` must not print a traceback
        return 1


if __name__ == "__main__":
    sys.exit(main())
