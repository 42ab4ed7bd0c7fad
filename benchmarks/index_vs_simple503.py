"""`wheelfarm index` against simple503 on one wheelhouse of tiny wheels, in one run, each
through its CLI: wall time and peak memory of a first build, then wheelfarm's unchanged rerun.
Both hash every wheel, place it in the site and write its PEP 658 metadata (simple503 copies
each wheel; wheelfarm hard-links it, as it does for every wheelhouse on the site's file
system). The wheelhouse has just been written, so both read it from the page cache.

Usage: python benchmarks/index_vs_simple503.py [COUNT]   (pip install simple503 first)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wheelfarm.core.wheelfile import write_wheel

BIN = Path(sys.executable).parent
CELLS = [
    (cuda, torch, py, plat)
    for torch in ("2.11", "2.12", "2.13", "2.14")
    for cuda in ("cu126", "cu128", "cu130")
    for py in ("310", "311", "312", "313")
    for plat in ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64")
]


def wheelhouse(folder: Path, count: int) -> None:
    """`count` tiny wheels: 100 projects, versions and (CUDA, torch, Python, platform) cells."""
    for i in range(count):
        cuda, torch, py, plat = CELLS[i % len(CELLS)]
        name, version = f"pkg{i % 100:03d}", f"1.{i // 100}.0+{cuda}torch{torch}"
        cp = f"cp{py}"
        info = f"{name}-{version}.dist-info"
        write_wheel(
            folder / f"{name}-{version}-{cp}-{cp}-{plat}.whl",
            {
                f"{name}/__init__.py": b"",
                f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                "Requires-Python: >=3.10\n".encode(),
                f"{info}/WHEEL": f"Wheel-Version: 1.0\nTag: {cp}-{cp}-{plat}\n".encode(),
            },
            info,
        )


def timed(*argv: str | Path) -> tuple[float, int]:
    """Wall seconds and peak resident memory (bytes) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        msg = f"{argv[0]} failed ({status})"
        raise SystemExit(msg)
    return time.perf_counter() - start, usage.ru_maxrss * 1024


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        house = Path(tmp) / "house"
        house.mkdir()
        wheelhouse(house, count)
        farm = (BIN / "wheelfarm", "index", "--wheelhouse", house, "--out", Path(tmp) / "site")
        peer = (BIN / "simple503", "--extract-metadata", "--copy", house, Path(tmp) / "s503")
        s_time, s_mem = timed(*peer)
        w_time, w_mem = timed(*farm)
        rerun, _ = timed(*farm)
    print(f"{count} wheels: simple503 {s_time:.1f} s {s_mem / 1e6:.0f} MB", end="; ")
    print(f"wheelfarm {w_time:.1f} s {w_mem / 1e6:.0f} MB, rerun {rerun:.2f} s")
    ratio = f"time={w_time / s_time:.2f} memory={w_mem / s_mem:.2f}"
    print(f"wheelfarm/simple503 {ratio} rerun={rerun:.2f}s")


if __name__ == "__main__":
    main()
