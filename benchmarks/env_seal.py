"""What sealing a torch env costs (issue 36 row 4): seal (chmod, header times, hashing every
file), a reuse's check (one lstat a file), a check after a newer env linked its big files
(those hashed once), and a header view (read-only clones where the file system has them, else
copies; never links: issue 49). Synthetic env shaped
like torch's: BIG_MB of libraries in a few files, HEADERS header files of 8 KB.

    python benchmarks/env_seal.py [DIR] [BIG_MB] [HEADERS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from wheelfarm.builder import ccache, envs


def _timed(what: str, run: object) -> float:
    start = time.perf_counter()
    run()  # type: ignore[operator]
    took = time.perf_counter() - start
    print(f"{what}: {took:.2f} s")
    return took


def main() -> None:
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    big_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1024  # noqa: PLR2004
    headers = int(sys.argv[3]) if len(sys.argv) > 3 else 9000  # noqa: PLR2004
    env = base / "envs" / "torch-bench"
    site = env / "lib/python3.11/site-packages/torch"
    (site / "lib").mkdir(parents=True)
    for i in range(4):
        (site / "lib" / f"lib{i}.so").write_bytes(os.urandom(big_mb * 2**20 // 4))
    for i in range(headers):
        folder = site / "include" / f"d{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"h{i}.h").write_bytes(b"/* x */\n" * 1024)
    manifest = envs.manifest_of(env)
    print(f"env: {big_mb} MiB of libraries, {headers} headers of 8 KiB")
    _timed("seal (chmod, header times, sha256 of every file)", lambda: envs.seal(env, manifest))
    _timed("check on reuse (fast path: one lstat a file)", lambda: envs.check_sealed(env, manifest))
    for lib in (site / "lib").iterdir():
        os.link(lib, base / f"twin-{lib.name}")  # a newer env links them: their ctime moves
    _timed("check after a newer env linked the libraries", lambda: envs.check_sealed(env, manifest))
    view = base / "work" / ccache.TORCH_VIEW
    _timed("header view (clones or copies)", lambda: ccache.header_view(site / "include", view))
    used = sum(p.stat().st_size for p in view.rglob("*.h"))
    print(f"  its size: {used / 2**20:.1f} MiB (its own disk where the file system cannot clone)")


if __name__ == "__main__":
    main()
