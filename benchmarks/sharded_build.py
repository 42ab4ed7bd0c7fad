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
import os
import tempfile
from pathlib import Path

from buildrun import build


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
