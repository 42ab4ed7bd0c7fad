"""Cold vs warm-cache build of the demo extension through `wheelfarm build --local`: prints both
compile times and their ratio (goal <= 0.2). The torch environment is shared by both runs; only
the ccache directory starts empty for the cold run.

Usage: python benchmarks/build_cache.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def build(cache: Path, ccache: Path, out: Path) -> dict[str, float]:
    env = {**os.environ, "CCACHE_DIR": str(ccache)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "wheelfarm",
            "build",
            "--local",
            "--out",
            out,
            "--work",
            out / "work",
            "--cache",
            cache,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = Path(result.stdout.strip().splitlines()[-1])
    timing = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())["timing"]
    return {**timing["steps_seconds"], **{f"ccache_{k}": v for k, v in timing["ccache"].items()}}


def main() -> None:
    cache = Path(os.environ.get("WHEELFARM_CACHE", Path.home() / ".cache" / "wheelfarm"))
    with tempfile.TemporaryDirectory() as tmp:
        ccache = Path(tmp) / "ccache"
        cold = build(cache, ccache, Path(tmp) / "cold")
        warm = build(cache, ccache, Path(tmp) / "warm")
        shutil.rmtree(ccache, ignore_errors=True)
    total = lambda steps: sum(v for k, v in steps.items() if not k.startswith("ccache"))  # noqa: E731
    print(
        f"cold: compile {cold['compile']:.1f}s, whole build {total(cold):.1f}s, "
        f"ccache misses {cold.get('ccache_misses', 0)}"
    )
    print(
        f"warm: compile {warm['compile']:.1f}s, whole build {total(warm):.1f}s, "
        f"ccache hits {warm.get('ccache_hits', 0)}"
    )
    print(
        f"warm/cold compile = {warm['compile'] / cold['compile']:.3f}; "
        f"whole build = {total(warm) / total(cold):.3f} (goal <= 0.2)"
    )


if __name__ == "__main__":
    main()
