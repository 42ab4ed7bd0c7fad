"""`wheelfarm plan`: expand the matrix, drop what exists, shard the rest for the workflows."""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError

logger = logging.getLogger("wheelfarm")


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "plan", execute, "Expand the matrix and plan the builds that are missing."
    )
    common.add_filters(p)
    existing = p.add_mutually_exclusive_group()
    existing.add_argument(
        "--existing", type=Path, help="packages.json of an index, or a folder of wheels"
    )
    existing.add_argument(
        "--existing-releases",
        metavar="OWNER/REPO",
        help="what the repository's Releases hold (the farm's source of truth)",
    )
    common.add_api(p)
    common.add_timeout(p, 600)
    p.add_argument("--max-jobs", type=int, help="jobs per shard (default farm.yaml, max 256)")
    p.add_argument("--format", choices=("table", "json", "github"), default="table")
    p.add_argument(
        "--plan-file",
        type=Path,
        help="with --format github: write the plan (each shard's matrices) to this file",
    )
    p.add_argument(
        "--explain",
        action="append",
        metavar="CELL",
        help="say why a cell id is built, covered, present or excluded",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.github.actions import github_outputs, plan_document, write_outputs
    from wheelfarm.github.releases import ReleasesSource
    from wheelfarm.matrix.plan import existing_build_ids, make_plan
    from wheelfarm.matrix.report import explain, table, to_json

    started = time.perf_counter()
    matrix, expansion = common.grid(args)
    if args.existing_releases:
        existing = ReleasesSource(common.client(args.existing_releases, args)).build_ids()
    else:
        existing = existing_build_ids(args.existing)
    plan = make_plan(
        matrix, expansion, filters=common.filters(args), existing=existing, max_jobs=args.max_jobs
    )
    if args.explain:
        for cell in args.explain:
            print(explain(plan, cell))
        return 0
    if args.format == "github":
        if args.plan_file is None:
            msg = "--format github needs --plan-file FILE: the shards' matrices go there (ADR 13)"
            raise UsageError(msg)
        farm = matrix.farm
        document = plan_document(
            plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
        )
        args.plan_file.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        outputs = github_outputs(plan)
        target = os.environ.get("GITHUB_OUTPUT")
        print(write_outputs(outputs, Path(target) if target else None), end="")
    elif args.format == "json":
        print(json.dumps(to_json(plan), indent=2))
    else:
        print(table(plan))
        print(
            f"planned {len(expansion.cells)} cells -> {len(expansion.builds)} builds "
            f"in {time.perf_counter() - started:.2f}s"
        )
    for w in plan.warnings:
        logger.warning("warning: %s", w)
    return 0
