"""`wheelfarm index` against simple503 on one wheelhouse of tiny wheels, in one run, each
through its CLI: wall time and peak memory of a first build, then wheelfarm's reruns: with the
wheelhouse unchanged; changed (one wheel replaced by new bytes of the same name, one added),
its site then checked file by file against a cold build of the same wheelhouse; and with one
wheel removed (`--allow-removal`). Both hash every wheel, place it in the site and write its
PEP 658 metadata (both copy each wheel: wheelfarm writes its copy from the bytes it hashed,
ADR 14). The wheelhouse has just been written, so both read it from the page cache.

The first builds run RUNS times each, alternating (simple503, then wheelfarm, each into a
fresh site; an earlier site is moved aside, not deleted: `alternating`), so a shared machine's
load falls on both alike; each tool's median counts.
The last line gives wheelfarm's first build as ratios to simple503's (median time, median
peak memory), the unchanged and changed reruns' seconds, and the changed rerun's peak memory
as a ratio to simple503's first build.

Usage: python benchmarks/index_vs_simple503.py [COUNT [RUNS]]   (COUNT: default 100,000; RUNS:
default 5; simple503 comes with the test extra)
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

from wheelfarm.core.wheelfile import write_wheel

BIN = Path(sys.executable).parent
CELLS = [
    (cuda, torch, py, plat)
    for torch in ("2.11", "2.12", "2.13", "2.14")
    for cuda in ("cu126", "cu128", "cu130")
    for py in ("310", "311", "312", "313")
    for plat in ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64")
]


def tiny_wheel(folder: Path, i: int, body: bytes = b"") -> Path:
    """Wheel number `i` of a wheelhouse: one of 100 projects, a version per 100 wheels, a
    (CUDA, torch, Python, platform) cell; `body` is its module's text."""
    cuda, torch, py, plat = CELLS[i % len(CELLS)]
    name, version = f"pkg{i % 100:03d}", f"1.{i // 100}.0+{cuda}torch{torch}"
    cp = f"cp{py}"
    info = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-{cp}-{cp}-{plat}.whl"
    write_wheel(
        path,
        {
            f"{name}/__init__.py": body,
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            "Requires-Python: >=3.10\n".encode(),
            f"{info}/WHEEL": f"Wheel-Version: 1.0\nTag: {cp}-{cp}-{plat}\n".encode(),
        },
        info,
    )
    return path


def timed(*argv: str | Path) -> tuple[float, int]:
    """Wall seconds and peak resident memory (bytes) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        msg = f"{argv[0]} failed ({status})"
        raise SystemExit(msg)
    return time.perf_counter() - start, usage.ru_maxrss * 1024


def digests(site: Path) -> dict[str, str]:
    """Every file of a site by path, as its sha256."""
    return {
        str(p.relative_to(site)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in site.rglob("*")
        if p.is_file()
    }


def differences(site: Path, other: Path) -> list[str]:
    """The paths whose bytes differ between two sites (or that only one has)."""
    ours, theirs = digests(site), digests(other)
    return sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))


def same_as_cold(house: Path, site: Path) -> None:
    """Exit unless a cold build of `house` writes exactly the files of `site`. Compared in a
    spawned process: a child's peak memory counts its parent's at the fork (Linux keeps the
    high-water mark across exec), and the two sites' digests would be the next run's peak."""
    cold = site.with_name("cold")
    timed(BIN / "wheelfarm", "index", "--wheelhouse", house, "--out", cold)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        differ = pool.submit(differences, site, cold).result()
    if differ:
        msg = f"the changed rerun's site differs from a cold build in {len(differ)}: {differ[:5]}"
        raise SystemExit(msg)


def alternating(runs: int, peer: tuple[str | Path, ...], farm: tuple[str | Path, ...]) -> Medians:
    """The median seconds and peak memory of `runs` first builds of each command, alternated,
    each into a fresh site (its output, the command's last argument, moved aside before, not
    deleted: on an ext4 without a journal, as here, each new inode is searched for past every
    free one deleted in the last 5 minutes, so a run right after `rm -rf` of 20,000 files paid
    3.4 s of kernel time to simple503's 1.0 s, and that fell on whichever tool made its files
    where the last were freed; the sites go when the run ends); the last wheelfarm site stays
    for the reruns."""
    peers, farms = [], []
    for run in range(runs):
        for argv, results in ((peer, peers), (farm, farms)):
            out = Path(argv[-1])
            if out.exists():
                out.rename(out.with_name(f"{out.name}.{run}"))
            results.append(timed(*argv))
        (pt, pm), (ft, fm) = peers[-1], farms[-1]
        pair = f"simple503 {pt:.1f} s {pm / 1e6:.0f} MB, wheelfarm {ft:.1f} s {fm / 1e6:.0f} MB"
        print(f"pair {run + 1}: {pair}", flush=True)
    return Medians(*(statistics.median(r[i] for r in rs) for rs in (peers, farms) for i in (0, 1)))


class Medians(NamedTuple):
    peer_time: float
    peer_memory: float
    farm_time: float
    farm_memory: float


def main() -> None:
    given = [int(a) for a in sys.argv[1:]]
    count = given[0] if given else 100_000
    runs = given[1] if len(given) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        house, site = Path(tmp) / "house", Path(tmp) / "site"
        house.mkdir()
        for i in range(count):
            tiny_wheel(house, i)
        farm = (BIN / "wheelfarm", "index", "--wheelhouse", house, "--out", site)
        peer = (BIN / "simple503", "--extract-metadata", "--copy", house, Path(tmp) / "s503")
        s_time, s_mem, w_time, w_mem = alternating(runs, peer, farm)
        rerun, _ = timed(*farm)
        tiny_wheel(house, 0, body=b"# new bytes\n")  # replaced, as builds do: a new inode
        tiny_wheel(house, count)  # a new wheel
        changed, c_mem = timed(*farm)
        same_as_cold(house, site)
        tiny_wheel(house, count).unlink()
        removed, r_mem = timed(*farm, "--allow-removal")
        # printed before the folder's removal, which takes minutes for the kept sites
        print(
            f"{count} wheels, median of {runs}: simple503 {s_time:.1f} s {s_mem / 1e6:.0f} MB",
            end="; ",
        )
        print(f"wheelfarm {w_time:.1f} s {w_mem / 1e6:.0f} MB, rerun {rerun:.2f} s", end="; ")
        print(f"changed {changed:.2f} s {c_mem / 1e6:.0f} MB (same as a cold build)", end="; ")
        print(f"one removed {removed:.2f} s {r_mem / 1e6:.0f} MB")
        ratio = f"time={w_time / s_time:.2f} memory={w_mem / s_mem:.2f}"
        changes = f"changed_rerun={changed:.2f}s changed_memory={c_mem / s_mem:.2f}"
        print(f"wheelfarm/simple503 {ratio} rerun={rerun:.2f}s {changes}", flush=True)


if __name__ == "__main__":
    main()
