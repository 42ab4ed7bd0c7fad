"""`wheelfarm coverage`: built / missing wheels per package and platform."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from wheelfarm.cli import common

logger = logging.getLogger("wheelfarm")


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "coverage", execute, "Built / missing wheels per package and platform."
    )
    p.add_argument("--existing", type=Path, help="packages.json of the index, or a wheelhouse")
    p.add_argument(
        "--write-docs",
        action="store_true",
        help="rewrite the farm root's docs/coverage.md, README summary line and docs/comfyui.md's "
        "table",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.index.coverage import coverage, held_back, markdown, write_docs, write_offer
    from wheelfarm.matrix.plan import existing_build_ids

    matrix, expansion = common.grid(args)
    rows = coverage(expansion, existing_build_ids(args.existing))
    if args.write_docs:
        for path in [*write_docs(rows, matrix.root), *write_offer(expansion, matrix.root)]:
            logger.info("wrote %s", path)
    print(markdown(rows), end="")
    held = held_back(args.existing)
    if held:
        print(f"\n{len(held)} built wheel(s) held back by the GPU check (no index lists them):")
    for wheel, reason in held:
        print(f"- {wheel}: {reason}")
    return 0
