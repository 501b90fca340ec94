#!/usr/bin/env python3
"""What the simulated ``rocm-smi``, ``amd-smi`` and ``rocminfo`` share: the state, faults, the call's reading.

Stdlib-only, like the other ``gpuverify_sim_*`` modules: they run inside bare containers that have
neither pydantic nor this package. ``install()`` copies them flat into the bin dir, with the absolute
path of the state file baked into ``STATE_PATH`` here (this module alone), and each executable there
is a stub calling :func:`main`. ``main`` dispatches on the name it was called by, reads the state JSON
(``$GPUVERIFY_SIM_STATE``, else ``STATE_PATH``) on every call, and runs that tool's module, imported
then, so a call loads only its own tool: ``gpuverify_sim_rocm_smi``, ``gpuverify_sim_amd_smi`` or
``gpuverify_sim_rocminfo``, each printing what the real tool prints for the state. Layouts follow the
real tools' output as captured on ROCm hosts (rocm-smi banner width, tab-padded tables, one-line ``--json``;
amd-smi list vs ``gpu_data`` envelopes; rocminfo padding).
"""

import json
import os
import sys
import time

STATE_PATH = "/nonexistent/sim-state.json"  # install() bakes the absolute path of the state file in here
TOOLS = ("rocm-smi", "amd-smi", "rocminfo", "rocprofv3")
USE_TOOL = "gpuverify-sim-use"  # runs a command as a process on the simulated GPUs (see gpu_use)
USE_VAR = "GPUVERIFY_SIM_GPU_USE"  # in a process's environment: "<state path>:<VRAM MiB>"
MIB = 1 << 20
VENDOR = "Advanced Micro Devices, Inc. [AMD/ATI]"
# arch -> (device id, compute units, generic ISA or None, ISA feature suffix, card SKU)
ARCH = {
    "gfx942": ("0x74a1", 304, "gfx9-4-generic", ":sramecc+:xnack-", "M3000100"),
    "gfx950": ("0x75a3", 256, "gfx9-4-generic", ":sramecc+:xnack-", "M3500100"),
    "gfx90a": ("0x740c", 110, None, ":sramecc+:xnack-", "D65201"),
    "gfx1100": ("0x744c", 96, "gfx11-generic", "", "D70401"),
}


def ver(text):
    """ "6.4.1" -> (6, 4, 1), on the numeric prefix of each part ("7.0.2-rc1" -> (7, 0, 2))."""
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


def load_state(tool, path=None):
    path = path or os.environ.get("GPUVERIFY_SIM_STATE") or STATE_PATH
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
        if g.get("use_until") is not None and time.time() >= g["use_until"]:
            g["use_pct"] = 0  # the load that the utilisation figure still averaged over has left its span
        g.setdefault("vram_used", 283 * MIB)
        g.setdefault("vram_total", 192 << 30)
        g["node_id"] = cpus + i if g.get("node_id") is None else g["node_id"]
        g["bdf"] = g.get("bdf") or "0000:%02x:00.0" % (5 + 0x20 * i)
        g["uuid"] = g.get("uuid") or "GPU-%016x" % (0x8D1457E2C20F0000 + i)
        g.setdefault("processes", [])
        g["serial"] = g.get("serial") or str(int(hexid(g)[:10], 16))[:12]
        for key, value in (
            ("vbios", "113-M3000100-102"),
            ("compute_partition", "SPX"),
            ("memory_partition", "NPS1"),
            ("power_cap_w", 750.0),
            ("ecc_enabled", True),
            ("ecc_corrected", 0),
            ("ecc_uncorrected", 0),
        ):
            g.setdefault(key, value)
    st.setdefault("amdgpu_version", "6.12.12")
    st["v"] = ver(st.get("rocm_version", "6.4.1"))
    add_live_processes(st, path)
    return st


def add_live_processes(st, path, proc="/proc"):
    """Real processes started by ``gpuverify-sim-use`` with this state: each is on the GPUs its
    ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES leave it, all when unset, holding its VRAM, by its
    pid as this process sees it (a container's processes by their host pid, as the real tools list them)."""
    needle = ("%s=%s:" % (USE_VAR, path)).encode()
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return
    hip_order = sorted(range(len(st["gpus"])), key=lambda i: st["gpus"][i]["node_id"])
    for pid in pids:
        try:
            with open("%s/%s/environ" % (proc, pid), "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle not in env:
            continue
        entries = dict(e.split(b"=", 1) for e in env.split(b"\0") if b"=" in e)
        try:
            mib = int(entries[USE_VAR.encode()].rsplit(b":", 1)[1])
            with open("%s/%s/comm" % (proc, pid), "rb") as fh:
                name = fh.read().decode("utf-8", "replace").strip() or "python3"
        except (ValueError, IndexError, KeyError, OSError):
            continue
        # as the runtime applies them: ROCR_VISIBLE_DEVICES (indices or UUIDs) first, then
        # HIP_VISIBLE_DEVICES counts within what it left
        seen = list(hip_order)
        rocr = entries.get(b"ROCR_VISIBLE_DEVICES")
        if rocr is not None:
            keep = [t.strip().decode("utf-8", "replace") for t in rocr.split(b",") if t.strip()]
            seen = [
                seen[int(t)]
                if t.isdigit() and int(t) < len(seen)
                else next((i for i in seen if st["gpus"][i]["uuid"] == t), None)
                for t in keep
            ]
            seen = [i for i in seen if i is not None]
        visible = entries.get(b"HIP_VISIBLE_DEVICES")
        try:
            hips = [int(v) for v in visible.split(b",")] if visible else list(range(len(seen)))
        except ValueError:
            continue
        for hip in hips:
            if 0 <= hip < len(seen):
                g = st["gpus"][seen[hip]]
                g["processes"].append({"pid": int(pid), "name": name, "vram_bytes": mib * MIB})
                g["vram_used"] = g["vram_used"] + mib * MIB
                g["use_pct"] = max(g.get("use_pct") or 0, 90)


def gpu_use(argv):
    """``gpuverify-sim-use VRAM_MIB COMMAND...``: run COMMAND as a process on the simulated GPUs (those its
    HIP_VISIBLE_DEVICES names) holding VRAM_MIB, as a kernel's process holds a real GPU."""
    if len(argv) < 3 or not argv[1].isdigit():
        sys.stderr.write("usage: %s VRAM_MIB COMMAND [ARGS...]\n" % USE_TOOL)
        return 2
    path = os.environ.get("GPUVERIFY_SIM_STATE") or STATE_PATH
    os.environ[USE_VAR] = "%s:%s" % (path, argv[1])
    os.execvp(argv[2], argv[2:])


def hexid(g):
    return g["uuid"].split("-", 1)[-1].lower()


def guid(g):
    return str(int(hexid(g)[:4] or "0", 16) % 65000 + 1000)  # KFD gpu_id: stable per GPU, arbitrary value


def device_uuid(g):
    """The ROCm device UUID (``amd-smi list``'s ``uuid``, ``amdsmi_get_gpu_device_uuid``), not the HIP one."""
    h = hexid(g)
    return "%sff%s-0000-1000-80%s-%s" % (h[:2], arch_info(g)[0][2:], h[2:4], h[4:])


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
        sys.stdout.write('\x1b[0m@@ %s: \x01\x02 ?? 0xDEADBEEF <garbage>\n{"card0": [1, 2,, }\n' % tool)
        return 0
    if kind == "fail":
        if tool == "rocm-smi":  # logs the error and still exits 0 (RETCODE stays 0 at the default log level)
            sys.stderr.write("ERROR: Driver not initialized (amdgpu not found in modules)\n")
            if json_mode:
                sys.stderr.write("WARNING: No JSON data to report\n")
            else:
                w = banner_width(st)
                sys.stdout.write(
                    "\n\n"
                    + spacer(w, " ROCm System Management Interface ")
                    + "\n"
                    + spacer(w, " End of ROCm SMI Log ")
                    + "\n"
                )
            return 0
        if tool == "amd-smi":
            sys.stderr.write(
                "AMDSMI_STATUS_DRM_ERROR - Error when calling libdrm\n"
                "ERROR: Unable to initialize amdsmi library, is the amdgpu driver loaded?\n"
            )
            return 1
        sys.stdout.write("ROCk module is loaded\n")
        sys.stderr.write(
            "hsa api call failure at: /longer_pathname_so_that_rpms_can_support_packaging_the_debug_"
            "info_for_all_os_releases/BUILD/rocminfo/rocminfo.cc:1306\nCall returned "
            "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
        )
        return 1
    return 0  # "empty": print nothing, exit 0


def banner_width(st):
    return 80 if st["v"] < (5, 6) else 84 if st["v"] < (6, 0) else 90  # appWidth by release


def spacer(width, title=""):
    if len(title) % 2:
        title += "="
    half = (width - len(title)) // 2
    return "=" * half + title + "=" * half


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


def tool_module(tool):
    """The module acting out ``tool`` ("rocm-smi" -> ``gpuverify_sim_rocm_smi``), imported on first use."""
    return __import__("gpuverify_sim_" + tool.replace("-", "_"))


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    tool = os.path.basename(argv[0])
    if tool == USE_TOOL:
        return gpu_use(argv)
    if tool not in TOOLS and len(argv) > 1 and argv[1] in TOOLS:  # `python3 gpuverify_sim_common.py rocm-smi ...`
        argv, tool = argv[1:], argv[1]
    if tool not in TOOLS:
        sys.stderr.write("simulated ROCm tools: call me as one of %s\n" % ", ".join(TOOLS))
        return 2
    st = load_state(tool)
    run = getattr(tool_module(tool), tool.replace("-", "_"))  # rocm_smi, amd_smi or rocminfo
    try:
        return run(argv[1:], st)
    except BrokenPipeError:  # `tool | head` must not print a traceback
        return 1


if __name__ == "__main__":  # run as a script (-I leaves its directory off sys.path): the tools sit beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
