"""Build an index for 100,000 synthetic wheels, then rerun with no change; print both times
(target: under 10 s) and the ratio.

Usage: python benchmarks/site_100k.py [COUNT]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from wheelfarm.core.root import find_root
from wheelfarm.index.entries import Covered, WheelEntry
from wheelfarm.index.site import build_site

REPO = find_root(Path(__file__).resolve().parents[1])  # this checkout's farm root

RELEASES = "https://github.com/o/r/releases/download/t/"
TORCH = ["2.9", "2.10", "2.11", "2.12", "2.13", "2.14"]
CUDA = ["cu126", "cu128", "cu130", "cu132"]
PY = ["3.10", "3.11", "3.12", "3.13", "3.14"]
PLAT = {
    "linux_x86_64": "manylinux_2_28_x86_64",
    "linux_aarch64": "manylinux_2_28_aarch64",
    "win_amd64": "win_amd64",
}


def entries(count: int) -> list[WheelEntry]:
    out: list[WheelEntry] = []
    i = 0
    while len(out) < count:
        pkg, ver = f"pkg-{i % 200:03d}", f"1.{i // 200 % 40}.{i // 8000}"
        for torch in TORCH:
            for cuda in CUDA:
                for py in PY:
                    for plat, tag in PLAT.items():
                        cp = "cp" + py.replace(".", "")
                        name = (
                            f"{pkg.replace('-', '_')}-{ver}+{cuda}torch{torch}-{cp}-{cp}-{tag}.whl"
                        )
                        out.append(
                            WheelEntry(
                                filename=name,
                                url=RELEASES + name.replace("+", "%2B"),
                                sha256="ab" * 32,
                                size=1000,
                                requires_python=">=3.10",
                                metadata_sha256="cd" * 32,
                                covers=(Covered(cuda=cuda, torch=torch, python=py, platform=plat),),
                            )
                        )
        i += 1
    return out[:count]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    wheels = entries(count)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        first = build_site(wheels, Path(tmp), templates=REPO.templates)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        again = build_site(wheels, Path(tmp), templates=REPO.templates)
        warm = time.perf_counter() - started
    print(f"{count} wheels -> {first.combos} (cuda, torch) indexes, {first.written} files")
    print(
        f"first build {cold:.2f}s (target < 10 s); no-change rerun {warm:.2f}s, "
        f"{again.written} files rewritten; rerun/first = {warm / cold:.2f}"
    )


if __name__ == "__main__":
    main()
