"""The names of clock events a run's watch records (``GpuClocks.throttle_seen``), and their two classes:

- **unlike**: events that make two like runs unlike, because the clocks then depend on something other
  than the work and the machine's settings: the GPU's or its memory's temperature, a signal from outside
  the GPU (NVIDIA's hardware slowdown and power brake, AMD's PROCHOT, VRHOT, PPM and FIT), or another GPU's
  clocks (NVIDIA's sync boost holds a group at its slowest member). A run that saw one makes no call;
- **normal**: the operating state every like run shares: an idle GPU, clocks an administrator set, the
  display's clock, and the power and current limits the work itself reaches (NVIDIA's ``sw_power_cap``,
  AMD's PPT, TDC and EDC limits). A large GEMM runs at its power cap by design; the cap's value is a fact of
  the machine, held equal between the runs compared.

Any name not listed here (a reading that could not be decoded, such as an ASIC-specific AMD
``throttle_status_0x...``) counts as unlike: what it was cannot be told.
"""

from __future__ import annotations

from collections.abc import Iterable

# NVML's clock event (throttle) reason bits (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*), by the
# names nvidia-smi -q prints, in lower case; these names are recorded in artifacts: never renamed
NVML_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clock_setting"),
)

# The amdgpu driver's ASIC-independent throttler bits (SMU_THROTTLER_*_BIT, gpu_metrics' indep_throttle_status)
AMD_INDEP_REASONS = (
    (0, "ppt0"),
    (1, "ppt1"),
    (2, "ppt2"),
    (3, "ppt3"),
    (4, "spl"),
    (5, "fppt"),
    (6, "sppt"),
    (7, "sppt_apu"),
    (16, "tdc_gfx"),
    (17, "tdc_soc"),
    (18, "tdc_mem"),
    (19, "tdc_vdd"),
    (20, "tdc_cvip"),
    (21, "edc_cpu"),
    (22, "edc_gfx"),
    (23, "apcc"),
    (32, "temp_gpu"),
    (33, "temp_core"),
    (34, "temp_mem"),
    (35, "temp_edge"),
    (36, "temp_hotspot"),
    (37, "temp_soc"),
    (38, "temp_vr_gfx"),
    (39, "temp_vr_soc"),
    (40, "temp_vr_mem0"),
    (41, "temp_vr_mem1"),
    (42, "temp_liquid0"),
    (43, "temp_liquid1"),
    (44, "vrhot0"),
    (45, "vrhot1"),
    (46, "prochot_cpu"),
    (47, "prochot_gfx"),
    (56, "ppm"),
    (57, "fit"),
)

# amdsmi_get_violation_status' active flags (MI300 on): field -> the recorded name
AMD_VIOLATIONS = (
    ("active_ppt_pwr", "ppt_pwr"),
    ("active_prochot_thrm", "prochot_thrm"),
    ("active_socket_thrm", "socket_thrm"),
    ("active_vr_thrm", "vr_thrm"),
    ("active_hbm_thrm", "hbm_thrm"),
)

# the power limits: reached by the work itself at the machine's power cap
POWER_CAP = frozenset({"sw_power_cap", "ppt0", "ppt1", "ppt2", "ppt3", "spl", "fppt", "sppt", "sppt_apu", "ppt_pwr"})
# the normal operating state: idle, clocks an administrator set, the display's clock, the power and current limits
NORMAL = POWER_CAP | frozenset(
    {
        "gpu_idle",
        "applications_clocks_setting",
        "display_clock_setting",
        "tdc_gfx",
        "tdc_soc",
        "tdc_mem",
        "tdc_vdd",
        "tdc_cvip",
        "edc_cpu",
        "edc_gfx",
        "apcc",
    }
)


def classify(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(unlike, normal): the distinct ``names``, each sorted, split into the two classes."""
    seen = sorted(set(names))
    return [n for n in seen if n not in NORMAL], [n for n in seen if n in NORMAL]


def bits_named(value: int, table: tuple[tuple[int, str], ...], shift: bool = False) -> list[str]:
    """The names of the bits set in ``value`` (``table`` by mask, or by bit position with ``shift``), and
    ``unknown_bit_<n>`` for a set bit the table does not name."""
    named = {(1 << bit) if shift else bit: name for bit, name in table}
    return [named.get(1 << i, f"unknown_bit_{i}") for i in range(value.bit_length()) if value >> i & 1]
