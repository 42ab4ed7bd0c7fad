"""One `wheelfarm build` run by a benchmark as a user runs it, with its own compiler cache folder
(or a shared one), timed: wall seconds, the compile step's, the CPU of the build and every child
(os.wait4), and its ccache counts. sharded_build.py and python_reuse.py run their builds here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def build(
    tmp: Path,
    name: str,
    cache: Path,
    common: list[str],
    extra: list[str],
    *,
    ccache: Path | None = None,
) -> dict[str, Any]:
    """One build in `tmp/work-NAME` with `ccache` (default its own empty `tmp/ccache-NAME`) as
    its compiler cache, logging each compile to `tmp/NAME.ccache.log`; exits on failure."""
    ccache = ccache or tmp / f"ccache-{name}"
    out, log = tmp / f"out-{name}", tmp / f"{name}.log"
    ccache_log = tmp / f"{name}.ccache.log"
    env = {**os.environ, "CCACHE_DIR": str(ccache), "CCACHE_LOGFILE": str(ccache_log)}
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
        "ccache_log": ccache_log,
        "product": product,
    }
    shown = {k: v for k, v in result.items() if k in {"name", "wall", "compile", "cpu", "ccache"}}
    print(f"{name}: {json.dumps(shown)}")
    return result
