"""A group job's second Python against its first (docs/adr/0016-python-groups.md): upstream
causal-conv1d 1.7.0 for sm_90 built by this interpreter, then by another CPython of the same
minor (Debian's /usr/bin/python3.11: other headers at other paths, its own torch env), each in
its own work folder, sharing one compiler cache that starts empty. Both torch envs are made
before the clock starts: a group job makes each Python's env whatever the cache does.

Goals: the second build's wall time <= 0.25 of the first's, and >= 95 % of its nvcc compiles
hit the cache (a unit that includes Python.h may not: it compiles once per Python). Both wheels
verify and import (the build's own verify step). Ends with
`second/first=R nvcc_hits=P% wheels_ok=N`.

Usage: python benchmarks/python_reuse.py [--package causal-conv1d] [--archs 9.0]
[--second /usr/bin/python3.11]   (about 15 minutes on 2 cores: run it alone)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from buildrun import build

from wheelfarm.builder.ccache import compile_results
from wheelfarm.builder.envs import PIP_INDEX, torch_env

HITS = {"direct_cache_hit", "preprocessed_cache_hit"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="causal-conv1d")
    ap.add_argument("--archs", default="9.0")
    ap.add_argument("--second", default="/usr/bin/python3.11", help="the other interpreter")
    args = ap.parse_args()
    cache = Path(os.environ.get("WHEELFARM_CACHE", Path.home() / ".cache" / "wheelfarm"))
    pythons = {"first": sys.executable, "second": args.second}
    with tempfile.TemporaryDirectory(prefix="wheelfarm-python-reuse-") as name:
        tmp = Path(name)
        for python in pythons.values():  # both envs before the clock starts
            torch_env(cache, python=python, torch="2.14.1", cuda="cu130", index=PIP_INDEX,
                      log=tmp / "envs.log")  # fmt: skip
        shared = tmp / "ccache"  # empty: the first build fills it
        common = ["--local", "--package", args.package, "--archs", args.archs]
        made = {
            key: build(tmp, key, cache, common, ["--python-exe", python], ccache=shared)
            for key, python in pythons.items()
        }
        nvcc = [c.result for c in compile_results(made["second"]["ccache_log"])
                if c.compiler == "nvcc"]  # fmt: skip
        wheels = sum(1 for b in made.values() if b["product"].suffix == ".whl")
    first, second = made["first"], made["second"]
    hits = sum(1 for r in nvcc if r in HITS)
    print(
        f"first: wall {first['wall']:.1f}s compile {first['compile']:.1f}s; second: wall "
        f"{second['wall']:.1f}s compile {second['compile']:.1f}s; second's nvcc compiles: "
        f"{hits} of {len(nvcc)} hit; goals: second/first <= 0.25, nvcc hits >= 95%"
    )
    print(
        f"second/first={second['wall'] / first['wall']:.3f} "
        f"nvcc_hits={100 * hits / max(1, len(nvcc)):.1f}% wheels_ok={wheels}"
    )


if __name__ == "__main__":
    main()
