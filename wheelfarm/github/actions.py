"""GitHub Actions outputs of a plan: one shard list per platform (each shard one matrix of at
most 256 jobs), job timeouts under the hosted limit, and counts the workflows branch on."""

from __future__ import annotations

import json
import math
from pathlib import Path

from wheelfarm.core.platforms import NAMES
from wheelfarm.matrix.expand import Build
from wheelfarm.matrix.plan import Plan

# Keys of one job in the GitHub matrix. The build workflows read exactly these (tested).
JOB_KEYS = ("id", "cuda", "python", "platform", "timeout_minutes", "build_timeout_minutes")
# The build step stops this long before the job limit, so its logs and compiler cache are saved
# and a rerun resumes warm.
SAVE_MARGIN_MINUTES = 15


def job(build: Build, limit_minutes: int) -> dict[str, object]:
    """One matrix entry; keys are JOB_KEYS."""
    timeout = min(limit_minutes, max(30, math.ceil(build.minutes * 1.5) + 20))
    return {
        "id": build.id,
        "cuda": build.cuda,
        "python": build.python,
        "platform": build.platform,
        "timeout_minutes": timeout,
        "build_timeout_minutes": timeout - SAVE_MARGIN_MINUTES,
    }


def github_outputs(plan: Plan, limit_minutes: int) -> dict[str, str]:
    """Step outputs: one shard list per platform (each shard a matrix), and counts."""
    out = {"count": str(len(plan.todo))}
    for platform in NAMES:
        shards = [
            {
                "name": s.name,
                "runner": s.runner,
                "container": s.container,
                "include": [job(b, limit_minutes) for b in s.builds],
            }
            for s in plan.shards
            if s.platform == platform
        ]
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
