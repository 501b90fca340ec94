"""Pages seen as a browser shows them: headless Chromium (``/usr/bin/chromium``) takes a screenshot or runs
the page's scripts and hands back the DOM they left; the screenshot's pixels read without an image library."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "headless Chromium is needed (apt-get install -y chromium)"
    return found


def _headless(*args: str) -> list[str]:
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args]


def screenshot(page: Path, shot: Path, size: tuple[int, int]) -> None:
    """``page`` drawn at ``size`` (width, height) into the PNG ``shot``."""
    argv = _headless(f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}", f"file://{page}")
    subprocess.run(argv, capture_output=True, timeout=120, check=True)


def rendered_dom(page: Path, size: tuple[int, int] = (1200, 1600)) -> str:
    """The page's DOM after its scripts ran (a script may write what it measured of the layout into it)."""
    argv = _headless("--dump-dom", "--virtual-time-budget=5000", f"--window-size={size[0]},{size[1]}", f"file://{page}")
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout


def png_pixels(path: Path) -> list[tuple[int, int, int]]:
    """The RGB pixels of an 8-bit, non-interlaced PNG (as Chromium writes its screenshots)."""
    data = path.read_bytes()
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + size]
        header = body if kind == b"IHDR" else header
        chunks += [body] if kind == b"IDAT" else []
        pos += 12 + size
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6), (depth, color)
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(b"".join(chunks)), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a, b, c = line[i - bpp] if i >= bpp else 0, prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pred = {
                0: 0,
                1: a,
                2: b,
                3: (a + b) // 2,
                4: a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c,
            }[kind]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    return [(r[i], r[i + 1], r[i + 2]) for r in rows for i in range(0, stride, bpp)]
