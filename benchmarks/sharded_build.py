"""A split compile against one cold build: upstream causal-conv1d 1.7.0 for sm_90, built once
unsharded, then as 2 compile shards plus the link build that merges their caches
(docs/adr/0011-split-compile.md). Every build gets its own empty ccache folder and work folder;
the torch environment is shared. CPU time is each build subprocess's rusage (os.wait4: the
process and every child it reaped).

Goals: link compile <= 0.15x the unsharded compile; shards' CPU together <= 1.15x the
unsharded build's. Ends with `link/unsharded=... shards_cpu/unsharded=... hits=...%`.

Usage: python benchmarks/sharded_build.py [--package causal-conv1d] [--archs 9.0] [--shards 2]
(about 10 minutes on 2 cores: run it alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def build(tmp: Path, name: str, cache: Path, common: list[str], extra: list[str]) -> dict[str, Any]:
    """One `wheelfarm build` with its own ccache folder; its compile seconds, CPU seconds and
    ccache counts."""
    ccache = tmp / f"ccache-{name}"
    out, log = tmp / f"out-{name}", tmp / f"{name}.log"
    env = {**os.environ, "CCACHE_DIR": str(ccache)}
    argv = [sys.executable, "-m", "wheelfarm", "build", *common, "--cache", str(cache)]
    argv += ["--out", str(out), "--work", str(tmp / f"work-{name}"), *extra]
    started = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=fh, text=True)
        stdout = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{name} failed ({proc.returncode}); log: {log}\n{log.read_text()[-3000:]}")
    product = Path(stdout.strip().splitlines()[-1])
    if product.suffix == ".json":  # a compile shard's summary
        data = json.loads(product.read_text())
        steps, counts = data["steps_seconds"], data["ccache"]
    else:
        record = json.loads(product.with_name(product.name + ".build.json").read_text())
        timing = record.get("timing", record)
        steps, counts = timing["steps_seconds"], timing["ccache"]
    result = {
        "name": name,
        "wall": round(time.perf_counter() - started, 1),
        "compile": steps["compile"],
        "cpu": round(usage.ru_utime + usage.ru_stime, 1),
        "ccache": counts,
        "ccache_dir": ccache,
    }
    print(f"{name}: {json.dumps({k: v for k, v in result.items() if k != 'ccache_dir'})}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="causal-conv1d")
    ap.add_argument("--archs", default="9.0")
    ap.add_argument("--shards", type=int, default=2)
    args = ap.parse_args()
    cache = Path(os.environ.get("WHEELFARM_CACHE", Path.home() / ".cache" / "wheelfarm"))
    common = ["--local", "--package", args.package, "--archs", args.archs]
    with tempfile.TemporaryDirectory(prefix="wheelfarm-sharded-") as name:
        tmp = Path(name)
        whole = build(tmp, "unsharded", cache, common, [])
        k = args.shards
        shards = [
            build(tmp, f"shard{i}", cache, common, ["--shard", f"{i}/{k}"]) for i in range(1, k + 1)
        ]
        caches = [str(s["ccache_dir"]) for s in shards]
        link = build(tmp, "link", cache, common, ["--link", *caches])
    hits, misses = link["ccache"]["hits"], link["ccache"]["misses"]
    link_ratio = link["compile"] / whole["compile"]
    cpu_ratio = sum(s["cpu"] for s in shards) / whole["cpu"]
    shard_compile = ", ".join(f"{s['compile']:.1f}s" for s in shards)
    shard_cpu = ", ".join(f"{s['cpu']:.1f}s" for s in shards)
    print(
        f"unsharded compile {whole['compile']:.1f}s cpu {whole['cpu']:.1f}s; shards compile "
        f"{shard_compile} cpu {shard_cpu}; link compile {link['compile']:.1f}s "
        f"cpu {link['cpu']:.1f}s; goals: link <= 0.15, shards cpu <= 1.15"
    )
    print(
        f"link/unsharded={link_ratio:.3f} shards_cpu/unsharded={cpu_ratio:.3f} "
        f"hits={100 * hits / max(1, hits + misses):.1f}%"
    )


if __name__ == "__main__":
    main()
