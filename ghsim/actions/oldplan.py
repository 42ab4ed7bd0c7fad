"""`wheelfarm plan --format github` as it was before the plan became an artifact: every shard's
whole matrix in the plan job's outputs, split builds grouped into shards of up to 256 compile
jobs. Only the `before` fixture workflows run it (ghsim/actions/fixtures/before/bin)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from wheelfarm import cli
from wheelfarm.cli import common
from wheelfarm.core.platforms import NAMES
from wheelfarm.github.actions import jobs
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.matrix.expand import Build
from wheelfarm.matrix.plan import make_plan

OLD_KEYS = {
    "timeout": "timeout_minutes",
    "step": "build_timeout_minutes",
    "links": "compile_shards",
    "part": "shard",
}


def old(entry: dict[str, object], platform: str) -> dict[str, object]:
    new = {"batch", "runner", "container", "after", "minutes"}  # keys of the one pool's jobs
    out = {OLD_KEYS.get(k, k): v for k, v in entry.items() if k not in new}
    return {**out, "platform": platform}


def main(argv: list[str]) -> int:
    args = cli._parser().parse_args(["plan", *argv])
    matrix, expansion = common.grid(args)
    existing = (
        ReleasesSource(common.client(args.existing_releases, args)).build_ids()
        if args.existing_releases
        else set()
    )
    plan = make_plan(
        matrix,
        expansion,
        filters=common.filters(args),
        existing=existing,
        max_jobs=256,
        grouped=False,
        one_run=False,
    )
    group_of = {g.id: g for g in plan.groups}
    limit = matrix.farm.hosted_job_limit_minutes
    out = {"count": str(len(plan.todo))}
    for platform in NAMES:
        mine = sorted((b for b in plan.todo if b.platform == platform), key=lambda b: b.id)
        whole = [b for b in mine if b.id not in plan.splits]
        groups: list[tuple[str, list[Build]]] = []
        if whole:
            count = math.ceil(len(whole) / 256)
            size = math.ceil(len(whole) / count)
            groups += [
                (f"{platform}-{i + 1}of{count}", whole[i * size : (i + 1) * size])
                for i in range(count)
            ]
        split: list[list[Build]] = []
        for b in (b for b in mine if b.id in plan.splits):
            if not split or sum(plan.splits[x.id] for x in split[-1]) + plan.splits[b.id] > 256:
                split.append([])
            split[-1].append(b)
        groups += [(f"{platform}-split-{i + 1}of{len(split)}", g) for i, g in enumerate(split)]
        info = matrix.farm.platforms[platform]
        shards = []
        for name, builds in groups:
            made = [jobs(plan, group_of[b.id], limit, info) for b in builds]
            shards.append({"name": name, "runner": info.runner, "container": info.container,
                           "include": [old(m, platform) for _, m in made],
                           "compile": [old(c, platform) for cs, _ in made for c in cs]})  # fmt: skip
        out[f"shards_{platform}"] = json.dumps(shards, separators=(",", ":"))
        out[f"count_{platform}"] = str(sum(len(s["include"]) for s in shards))
    with Path(os.environ["GITHUB_OUTPUT"]).open("a", encoding="utf-8") as fh:
        fh.writelines(f"{k}={v}\n" for k, v in out.items())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
