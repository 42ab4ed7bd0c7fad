"""Cold vs warm-cache build of the demo extension through `wheelfarm build --local`: prints both
compile times and their ratio (goal <= 0.2). The torch environment is shared by both runs; only
the ccache directory starts empty for the cold run.

Usage: python benchmarks/build_cache.py [--archs 9.0]   (default: the demo's own arch list; one
arch for a quicker run)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def build(cache: Path, ccache: Path, out: Path, extra: list[str]) -> dict[str, float]:
    """One `wheelfarm build --local` of the demo with `ccache` as its compiler cache; its step
    seconds and ccache counts, from the build record."""
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
            *extra,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = Path(result.stdout.strip().splitlines()[-1])
    timing = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())["timing"]
    return {**timing["steps_seconds"], **{f"ccache_{k}": v for k, v in timing["ccache"].items()}}


def total(steps: dict[str, float]) -> float:
    """The whole build's seconds: every step, not the ccache counts beside them."""
    return sum(v for k, v in steps.items() if not k.startswith("ccache"))


def main() -> None:
    parser = argparse.ArgumentParser(description="Cold vs warm-cache build of the demo extension.")
    parser.add_argument("--archs", help="replace the demo's arch list, e.g. '9.0'")
    args = parser.parse_args()
    extra = ["--archs", args.archs] if args.archs else []
    cache = Path(os.environ.get("WHEELFARM_CACHE", Path.home() / ".cache" / "wheelfarm"))
    with tempfile.TemporaryDirectory() as tmp:
        ccache = Path(tmp) / "ccache"
        cold = build(cache, ccache, Path(tmp) / "cold", extra)
        warm = build(cache, ccache, Path(tmp) / "warm", extra)
        shutil.rmtree(ccache, ignore_errors=True)
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
