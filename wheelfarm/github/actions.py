"""GitHub Actions outputs of a plan: one shard list per platform (each shard one matrix of at
most 256 jobs), job timeouts under the hosted limit, and counts the workflows branch on."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from wheelfarm.core.platforms import NAMES
from wheelfarm.matrix.expand import Build
from wheelfarm.matrix.plan import Plan

# Keys of one job in the GitHub matrix (a build, a split build's link job or one of its compile
# shards). The build workflows read exactly these (tested).
JOB_KEYS = (
    "id",
    "cuda",
    "python",
    "platform",
    "timeout_minutes",
    "build_timeout_minutes",
    "compile_shards",  # a link job: how many shard caches it merges; 0 for a whole build
    "shard",  # a compile shard: "I/K"; "" otherwise
)
# The build step stops this long before the job limit, so its logs and compiler cache are saved
# and a rerun resumes warm.
SAVE_MARGIN_MINUTES = 15


def job(
    build: Build,
    limit_minutes: int,
    *,
    minutes: float | None = None,
    compile_shards: int = 0,
    shard: str = "",
) -> dict[str, object]:
    """One matrix entry; keys are JOB_KEYS. `minutes`: the job's estimate (default the build's)."""
    estimate = build.minutes if minutes is None else minutes
    timeout = min(limit_minutes, max(30, math.ceil(estimate * 1.5) + 20))
    return {
        "id": build.id,
        "cuda": build.cuda,
        "python": build.python,
        "platform": build.platform,
        "timeout_minutes": timeout,
        "build_timeout_minutes": timeout - SAVE_MARGIN_MINUTES,
        "compile_shards": compile_shards,
        "shard": shard,
    }


def jobs(
    plan: Plan, build: Build, limit_minutes: int
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """(compile-shard jobs, the build's job): no shard jobs for a build that is not split."""
    k = plan.splits.get(build.id, 0)
    minutes = plan.job_minutes(build)
    shards = [job(build, limit_minutes, minutes=minutes[i], shard=f"{i + 1}/{k}") for i in range(k)]
    return shards, job(build, limit_minutes, minutes=minutes[-1], compile_shards=k)


def github_outputs(plan: Plan, limit_minutes: int) -> dict[str, str]:
    """Step outputs: one shard list per platform (each shard a matrix of builds, `include`, and
    of the compile shards its split builds' link jobs wait for, `compile`), and counts."""
    out = {"count": str(len(plan.todo))}
    for platform in NAMES:
        shards: list[dict[str, Any]] = []
        for s in (s for s in plan.shards if s.platform == platform):
            made = [jobs(plan, b, limit_minutes) for b in s.builds]
            shards.append(
                {
                    "name": s.name,
                    "runner": s.runner,
                    "container": s.container,
                    "include": [main for _, main in made],
                    "compile": [c for compiles, _ in made for c in compiles],
                }
            )
        out[f"shards_{platform}"] = json.dumps(shards, separators=(",", ":"))
        out[f"count_{platform}"] = str(sum(len(s["include"]) for s in shards))
    return out


def write_outputs(outputs: dict[str, str], target: Path | None) -> str:
    """`key=value` lines, appended to $GITHUB_OUTPUT when the step has one; returns the text."""
    text = "".join(f"{k}={v}\n" for k, v in outputs.items())
    if target is not None:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(text)
    return text
