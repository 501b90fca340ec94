"""Simulated ``amd-smi``: ``version``, ``metric``, ``process``, ``static`` and ``list``, as text or ``--json``.

Stdlib-only and imported flat beside :mod:`gpuverify_sim_common` (see there). A call made of a
subcommand and its on/off flags is read without argparse (:func:`amd_smi_plain_call`); argparse reads
the rest, with the flags of the simulated release (``list -e`` from amd-smi 25.3, ROCm 6.4).
"""

import json
import sys

from gpuverify_sim_common import MIB, VENDOR, arch_info, device_uuid, fault, guid, hexid, plain_call

# ROCm release -> amd-smi tool version (amd-smi prints both in `amd-smi version`)
AMD_SMI_VERSIONS = [
    ((7, 1), "26.1.0"),
    ((7, 0), "26.0.2"),
    ((6, 4), "25.3.0"),
    ((6, 3), "24.7.1"),
    ((6, 2), "24.6.2"),
    ((6, 1), "24.5.1"),
    ((), "23.4.2"),
]  # (): even a version with no number in it


def hip_rank(st):
    """SMI index -> HIP index: HIP numbers GPUs by KFD node id."""
    order = sorted(range(len(st["gpus"])), key=lambda i: st["gpus"][i]["node_id"])
    return {smi: hip for hip, smi in enumerate(order)}


# subcommand -> its on/off flags (word -> attribute); "-g/--gpu N..." goes through argparse
AMD_SMI_FLAGS = {
    "metric": {"--json": "json", "-u": "usage", "--usage": "usage", "-m": "mem_usage", "--mem-usage": "mem_usage"},
    "process": {"--json": "json"},
    "static": {
        "--json": "json",
        "-a": "asic",
        "--asic": "asic",
        "-b": "bus",
        "--bus": "bus",
        "-V": "vbios",
        "--vbios": "vbios",
        "-d": "driver",
        "--driver": "driver",
        "-B": "board",
        "--board": "board",
        "-p": "partition",
        "--partition": "partition",
        "-l": "limit",
        "--limit": "limit",
    },
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
    for short, name in (("-V", "vbios"), ("-d", "driver"), ("-B", "board"), ("-p", "partition"), ("-l", "limit")):
        parsers["static"].add_argument(short, "--" + name, action="store_true")
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
        sys.stdout.write(
            "AMDSMI Tool: %s+ede62f2 | AMDSMI Library version: %s | ROCm version: %s | "
            "amdgpu version: %s | amd_hsmp version: N/A\n"
            % (tool_ver, tool_ver.rsplit(".", 1)[0] + ".0", st.get("rocm_version"), st["amdgpu_version"])
        )
        return 0
    if st.get("nonroot_warning"):  # print() in check_required_groups: stdout, before any JSON
        sys.stdout.write(
            "WARNING: User is missing the following required groups: render, video. Please add user to these groups.\n"
        )
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
                e["usage"] = (
                    "N/A"
                    if use is None
                    else {
                        "gfx_activity": val(use, "%"),
                        "umc_activity": val(use // 3, "%"),
                        "mm_activity": val(0, "%"),
                        "vcn_activity": [val(0, "%"), "N/A", "N/A", "N/A"],
                        "jpeg_activity": [val(0, "%")] + ["N/A"] * 7,
                    }
                )
            if a.mem_usage or not a.usage:
                tot, used, gtt = g["vram_total"] // MIB, g["vram_used"] // MIB, 128 * 1024
                e["mem_usage"] = {
                    k: val(n, "MB")
                    for k, n in (
                        ("total_vram", tot),
                        ("used_vram", used),
                        ("free_vram", tot - used),
                        ("total_visible_vram", tot),
                        ("used_visible_vram", used),
                        ("free_visible_vram", tot - used),
                        ("total_gtt", gtt),
                        ("used_gtt", 12),
                        ("free_gtt", gtt - 12),
                    )
                }
        elif a.cmd == "process":
            plist = [
                {
                    "process_info": {
                        "name": "N/A" if st.get("nonroot_warning") else pr.get("name", "python3"),  # amdsmi #130
                        "pid": int(pr["pid"]),
                        "memory_usage": {
                            "gtt_mem": val(0, "B"),
                            "cpu_mem": val(0, "B"),
                            "vram_mem": val(int(pr.get("vram_bytes", 0)), "B"),
                        },
                        "mem_usage": val(int(pr.get("vram_bytes", 0)), "B"),
                        "usage": {"gfx": val(0, "ns"), "enc": val(0, "ns")},
                    }
                }
                for pr in g["processes"]
            ]
            e["process_list"] = plist or [{"process_info": "No running processes detected"}]
        elif a.cmd == "static":
            e.update(static_sections(a, g, i, st))
        elif a.cmd == "list":
            e.update(
                {
                    "bdf": g["bdf"],
                    "uuid": device_uuid(g),
                    "kfd_id": int(guid(g)),
                    "node_id": g["node_id"],
                    "partition_id": 0,
                }
            )
            if getattr(a, "enumeration", False):
                e.update(
                    {
                        "render": "renderD%d" % (128 + i),
                        "card": "card%d" % i,
                        "hsa_id": g["node_id"],
                        "hip_id": hip_rank(st)[i],
                        "hip_uuid": g["uuid"],
                    }
                )
        entries.append(e)
    if a.json:
        # amd-smi 26.x (ROCm 7.0) wraps static/metric in {"gpu_data": [...]}; process and list stay lists
        data = {"gpu_data": entries} if v >= (7, 0) and a.cmd in ("metric", "static") else entries
        sys.stdout.write(json.dumps(data, indent=4) + "\n")
    else:
        sys.stdout.write(amd_text(entries))
    return 0


STATIC_SECTIONS = ("asic", "bus", "vbios", "limit", "driver", "board", "partition")  # the real tool's order


def static_sections(a, g, i, st):
    """``amd-smi static``'s sections of GPU ``g`` (index ``i``): those asked for, all when none is."""
    v = st["v"]

    def val(value, unit):
        return {"value": value, "unit": unit} if v >= (6, 1) else value

    dev, cus, _, _, sku = arch_info(g)
    asked = [name for name in STATIC_SECTIONS if getattr(a, name, False)] or list(STATIC_SECTIONS)
    out = {}
    for name in asked:
        if name == "asic":
            out["asic"] = {
                "market_name": g["name"],
                "vendor_id": "0x1002",
                "vendor_name": VENDOR.replace(",", ""),
                "subvendor_id": "0x1002",
                "device_id": dev,
                "subsystem_id": dev,
                "rev_id": "0x00",
                "asic_serial": "0x" + hexid(g).upper(),
                "oam_id": i,
                "num_compute_units": cus,
                "target_graphics_version": g["arch"],
            }
        elif name == "bus":
            out["bus"] = {"bdf": g["bdf"], "max_pcie_width": 16, "max_pcie_speed": val(32, "GT/s")}
        elif name == "vbios":  # ROCm 7 calls it the IFWI
            out["ifwi" if v >= (7, 0) else "vbios"] = {
                "name": "AMD " + sku,
                "build_date": "2024/05/17 10:06",
                "part_number": g["vbios"],
                "version": g["vbios"],
            }
        elif name == "limit":  # socket_power: the cap set now; max_power: the most it can be set to
            cap = float(g["power_cap_w"])
            out["limit"] = {
                "max_power": val(max(cap, 750.0), "W"),
                "min_power": val(0, "W"),
                "socket_power": val(cap, "W"),
            }
        elif name == "driver":
            out["driver"] = {"name": "amdgpu", "version": st["amdgpu_version"]}
        elif name == "board":
            out["board"] = {
                "model_number": "102-" + sku,
                "product_serial": g["serial"],
                "fru_id": "N/A",
                "product_name": g["name"] + " OAM",
                "manufacturer_name": "AMD",
            }
        elif name == "partition":
            out["partition"] = {
                "compute_partition": g.get("compute_partition") or "N/A",
                "memory_partition": g.get("memory_partition") or "N/A",
                "partition_id": 0,
            }
    return out


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
