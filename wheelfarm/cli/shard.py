"""`wheelfarm shard`: one shard's matrices, or one publish batch, from the plan artifact."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "shard", execute, "Write one shard's matrices (or a publish batch) from a plan file."
    )
    p.add_argument("name", help="the shard's name, e.g. linux_x86_64-1of9")
    p.add_argument("--plan-file", type=Path, required=True, help="the plan job's artifact")
    p.add_argument("--batch", type=int, help="one publish batch of the shard")
    p.add_argument(
        "--runner",
        action="append",
        default=[],
        metavar="PLATFORM=LABEL",
        help="run that platform's jobs on this runner label (empty LABEL: the plan's runner)",
    )
    p.add_argument(
        "--limit-minutes",
        type=int,
        default=360,
        help="the time limit of the runners --runner names, at most 1440 (default 360)",
    )
    p.add_argument(
        "--expect", type=Path, help="write what the batch must publish (for publish --expect)"
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.core.errors import UsageError
    from wheelfarm.core.platforms import NAMES
    from wheelfarm.github.actions import (
        MAX_SELF_HOSTED_MINUTES,
        check_trusted,
        expected,
        read_plan,
        shard_outputs,
        write_outputs,
    )
    from wheelfarm.matrix.gridcache import matrix_from_env

    runners = {}
    for given in args.runner:
        platform, sep, label = given.partition("=")
        if not sep or platform not in NAMES:
            msg = f"--runner {given!r}: expected PLATFORM=LABEL, PLATFORM one of {', '.join(NAMES)}"
            raise UsageError(msg)
        if label:
            runners[platform] = label
    if not 1 <= args.limit_minutes <= MAX_SELF_HOSTED_MINUTES:
        msg = (
            f"--limit-minutes {args.limit_minutes}: 1 to {MAX_SELF_HOSTED_MINUTES} "
            f"(a job's GITHUB_TOKEN lasts 24 h)"
        )
        raise UsageError(msg)
    document = read_plan(args.plan_file)
    check_trusted(document, args.name, matrix_from_env(common.root(args)))
    if args.expect is not None:
        wanted = expected(document, args.name, args.batch)
        args.expect.write_text(json.dumps(wanted), encoding="utf-8")
        print(f"{len(wanted['include'])} builds to publish from shard {args.name}")
        return 0
    target = os.environ.get("GITHUB_OUTPUT")
    outputs = shard_outputs(document, args.name, runners, args.limit_minutes)
    write_outputs(outputs, Path(target) if target else None)
    print(f"shard {args.name}: {outputs['count']} jobs")
    return 0
