"""Simulated ``rocminfo``: the HSA system attributes, then the CPU agents and the GPU agents in KFD node order.

Stdlib-only and imported flat beside :mod:`gpuverify_sim_common` (see there). It ignores its arguments,
and it honours ``ROCR_VISIBLE_DEVICES`` (the runtime applies it; the SMI tools do not).
"""

import os
import sys

from gpuverify_sim_common import arch_info, fault


def kv(indent, label, value=None):
    # rocminfo pads labels to 25 and values to 35 columns (trailing spaces are part of its output)
    return " " * indent + label.ljust(25) + ("" if value is None else value.ljust(35))


def pool_lines(pools):
    lines = [kv(2, "Pool Info:")]
    for n, (segment, size, alloc, gran, access) in enumerate(pools, 1):
        lines += [
            kv(4, "Pool %d" % n),
            kv(6, "Segment:", segment),
            kv(6, "Size:", size),
            kv(6, "Allocatable:", alloc),
            kv(6, "Alloc Granule:", gran),
            kv(6, "Alloc Alignment:", gran),
            kv(6, "Accessible by all:", access),
        ]
    return lines


def agent_lines(n, fields, tail):
    return (
        ["*******                  ", ("Agent %d" % n).ljust(25), "*******                  "]
        + [kv(2, label + ":", value) if value is not None else kv(2, label + ":") for label, value in fields]
        + tail
    )


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
    out = [
        "ROCk module version 6.10.5 is loaded" if v >= (6, 2) else "ROCk module is loaded",
        "=====================    ",
        "HSA System Attributes    ",
        "=====================    ",
        kv(0, "Runtime Version:") + "1.14",
        kv(0, "Runtime Ext Version:") + "1.6",
        kv(0, "System Timestamp Freq.:") + "1000.000000MHz",
        kv(0, "Sig. Max Wait Duration:") + "18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)",
        kv(0, "Machine Model:", "LARGE"),
        kv(0, "System Endianness:", "LITTLE"),
        kv(0, "Mwaitx:") + "DISABLED",
        kv(0, "DMAbuf Support:") + "YES",
        "",
        "==========               ",
        "HSA Agents               ",
        "==========               ",
    ]
    cpu_name = "AMD EPYC 9474F 48-Core Processor"
    for c in range(cpus):
        fields = [
            ("Name", cpu_name),
            ("Uuid", "CPU-XX"),
            ("Marketing Name", cpu_name),
            ("Vendor Name", "CPU"),
            ("Feature", "None specified"),
            ("Profile", "FULL_PROFILE"),
            ("Float Round Mode", "NEAR"),
            ("Max Queue Number", "0(0x0)"),
            ("Queue Min Size", "0(0x0)"),
            ("Queue Max Size", "0(0x0)"),
            ("Queue Type", "MULTI"),
            ("Node", str(c)),
            ("Device Type", "CPU"),
            ("Cache Info", None),
        ]
        tail = [
            kv(4, "L1:", "32768(0x8000) KB"),
            kv(2, "Chip ID:", "0(0x0)"),
            kv(2, "ASIC Revision:", "0(0x0)"),
            kv(2, "Cacheline Size:", "64(0x40)"),
            kv(2, "Max Clock Freq. (MHz):", "3600"),
            kv(2, "BDFID:", "0"),
            kv(2, "Internal Node ID:", str(c)),
            kv(2, "Compute Unit:", "96"),
            kv(2, "SIMDs per CU:", "0"),
            kv(2, "Shader Engines:", "0"),
            kv(2, "Shader Arrs. per Eng.:", "0"),
            kv(2, "WatchPts on Addr. Ranges:") + "1",
            kv(2, "Features:") + "None",
        ]
        size = "1188729676(0x46da934c) KB"
        tail += pool_lines(
            [
                (s, size, "TRUE", "4KB", "TRUE")
                for s in (
                    "GLOBAL; FLAGS: FINE GRAINED",
                    "GLOBAL; FLAGS: KERNARG, FINE GRAINED",
                    "GLOBAL; FLAGS: COARSE GRAINED",
                )
            ]
        )
        out += agent_lines(c + 1, fields, tail + [kv(2, "ISA Info:")])
    for n, g in enumerate(gpus):
        dev, cus, generic, feats, _ = arch_info(g)
        bus = int(g["bdf"].split(":")[1], 16)
        fields = [
            ("Name", g["arch"]),
            ("Uuid", g["uuid"]),
            ("Marketing Name", g["name"]),
            ("Vendor Name", "AMD"),
            ("Feature", "KERNEL_DISPATCH"),
            ("Profile", "BASE_PROFILE"),
            ("Float Round Mode", "NEAR"),
            ("Max Queue Number", "128(0x80)"),
            ("Queue Min Size", "64(0x40)"),
            ("Queue Max Size", "131072(0x20000)"),
            ("Queue Type", "MULTI"),
            ("Node", str(g["node_id"])),
            ("Device Type", "GPU"),
            ("Cache Info", None),
        ]
        kb = "%d(0x%x) KB" % (g["vram_total"] >> 10, g["vram_total"] >> 10)
        tail = [
            kv(4, "L1:", "32(0x20) KB"),
            kv(4, "L2:", "4096(0x1000) KB"),
            kv(2, "Chip ID:", "%d(%s)" % (int(dev, 16), dev)),
            kv(2, "ASIC Revision:", "1(0x1)"),
            kv(2, "Cacheline Size:", "64(0x40)"),
            kv(2, "Max Clock Freq. (MHz):", "2100"),
            kv(2, "BDFID:", str(bus << 8)),
            kv(2, "Internal Node ID:", str(g["node_id"])),
            kv(2, "Compute Unit:", str(cus)),
            kv(2, "SIMDs per CU:", "4"),
            kv(2, "Shader Engines:", "32"),
            kv(2, "Shader Arrs. per Eng.:", "1"),
            kv(2, "WatchPts on Addr. Ranges:") + "4",
            kv(2, "Coherent Host Access:", "FALSE"),
            kv(2, "Features:") + "KERNEL_DISPATCH ",
            kv(2, "Fast F16 Operation:", "TRUE"),
            kv(2, "Wavefront Size:", "64(0x40)"),
            kv(2, "Workgroup Max Size:", "1024(0x400)"),
            kv(2, "Max Waves Per CU:", "32(0x20)"),
        ]
        tail += pool_lines(
            [
                (s, kb, "TRUE", "4KB", "FALSE")
                for s in (
                    "GLOBAL; FLAGS: COARSE GRAINED",
                    "GLOBAL; FLAGS: EXTENDED FINE GRAINED",
                    "GLOBAL; FLAGS: FINE GRAINED",
                )
            ]
            + [("GROUP", "64(0x40) KB", "FALSE", "0KB", "FALSE")]
        )
        tail.append(kv(2, "ISA Info:"))
        isas = ["amdgcn-amd-amdhsa--" + g["arch"] + feats]
        if generic and v >= (6, 4):  # newer ROCm also lists the generic ISA (the 2nd `grep gfx` hit)
            isas.append("amdgcn-amd-amdhsa--" + generic + feats)
        for k, isa in enumerate(isas, 1):
            tail += [
                kv(4, "ISA %d" % k),
                " " * 6 + "Name:".ljust(25) + isa,
                kv(6, "Machine Models:", "HSA_MACHINE_MODEL_LARGE"),
                kv(6, "Profiles:", "HSA_PROFILE_BASE"),
                kv(6, "Default Rounding Mode:", "NEAR"),
                kv(6, "Fast f16:", "TRUE"),
                kv(6, "Workgroup Max Size:", "1024(0x400)"),
                kv(6, "FBarrier Max Size:", "32"),
            ]
        out += agent_lines(cpus + n + 1, fields, tail)
    out.append("*** Done ***             ")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
