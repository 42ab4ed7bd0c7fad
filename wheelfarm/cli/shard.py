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
        "--expect", type=Path, help="write what the batch must publish (for publish --expect)"
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.github.actions import (
        check_trusted,
        expected,
        read_plan,
        shard_outputs,
        write_outputs,
    )
    from wheelfarm.matrix.load import load_matrix

    document = read_plan(args.plan_file)
    check_trusted(document, args.name, load_matrix(common.root(args)))
    if args.expect is not None:
        wanted = expected(document, args.name, args.batch)
        args.expect.write_text(json.dumps(wanted), encoding="utf-8")
        print(f"{len(wanted['include'])} builds to publish from shard {args.name}")
        return 0
    target = os.environ.get("GITHUB_OUTPUT")
    outputs = shard_outputs(document, args.name)
    write_outputs(outputs, Path(target) if target else None)
    print(f"shard {args.name}: {outputs['count']} jobs on {outputs['runner']}")
    return 0
