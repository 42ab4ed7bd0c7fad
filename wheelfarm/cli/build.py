"""`wheelfarm build`: one target through every step, or one shard of a split compile."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError

if TYPE_CHECKING:
    from wheelfarm.builder.build import BuildResult, ShardResult
    from wheelfarm.builder.shard import Split

logger = logging.getLogger("wheelfarm")


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "build", execute, "Compile, relabel, repair and verify one target or group."
    )
    common.add_target_args(p)
    common.add_build_args(p)
    p.add_argument(
        "--pythons",
        metavar="VERSIONS",
        help="with a group id from `plan --format json`: build these of its Pythons (spaces, "
        "commas or lines between), oldest first, against one compiler cache; default all",
    )
    p.add_argument(
        "--variants",
        metavar="CUDAS",
        help="with a group id: build the wheels of these CUDA tags only (e.g. 'cu132': a plan "
        "filtered by CUDA, or one whose other minor is released); their compile is the same "
        "(docs/adr/0019-one-compile-per-cuda-major.md); default all",
    )
    p.add_argument("--out", type=Path, default=common.WHEELHOUSE, help="where wheels go")
    p.add_argument(
        "--job-started",
        type=float,
        metavar="EPOCH",
        help="when the CI job started (date +%%s); with --job-minutes the compile stops in time "
        "for the job to save its compiler cache",
    )
    p.add_argument("--job-minutes", type=int, metavar="N", help="the CI job's time limit")
    p.add_argument(
        "--shard",
        metavar="I/K",
        help="compile only shard I of K of a split build's objects into the compiler cache "
        "(no wheel; docs/adr/0011-split-compile.md)",
    )
    p.add_argument(
        "--link",
        nargs="+",
        type=Path,
        metavar="CACHE",
        help="the link build of a split compile: merge the shards' ccache folders, build, fail "
        "below 99%% cache hits",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.builder.group import build_group
    from wheelfarm.farm import choose_targets

    matrix, expansion = common.grid(args)
    query = common.query(args)
    opts = common.build_options(  # bad flags are refused before the target is chosen
        args,
        local=query.build_id is None,
        out=args.out,
        deadline=_deadline(args),
        split=_split(args),
    )
    pythons = (args.pythons or "").replace(",", " ").split()
    variants = (args.variants or "").replace(",", " ").split()
    targets = choose_targets(matrix, expansion, query, pythons, variants)
    build_group(targets, opts, _report)
    return 0


def _report(result: BuildResult | ShardResult) -> None:
    """A wheel's path, or a compile shard's summary, printed as it is made (CI reads them)."""
    from wheelfarm.builder.build import ShardResult

    if isinstance(result, ShardResult):
        total = sum(result.durations.values())
        logger.info("compiled %s in %.1fs", result.summary.name, total)
        print(result.summary)
        return
    total = sum(result.durations.values())
    logger.info("built %s in %.1fs; record %s", result.wheel, total, result.record.name)
    print(result.wheel)


def _split(args: argparse.Namespace) -> Split | None:
    """--shard I/K (one compile shard) or --link CACHE... (the link build of a split compile)."""
    from wheelfarm.builder.shard import Split

    if args.shard is not None and args.link is not None:
        msg = "--shard and --link exclude each other (a job compiles a shard or links)"
        raise UsageError(msg)
    if args.shard is not None:
        return Split.parse_shard(args.shard)
    return None if args.link is None else Split.link(args.link)


def _deadline(args: argparse.Namespace) -> float | None:
    """--job-started and --job-minutes, which come together, as the build's deadline."""
    from wheelfarm.farm import job_deadline

    started, minutes = args.job_started, args.job_minutes
    if (started is None) != (minutes is None):
        msg = "--job-started and --job-minutes go together (the CI job's start and its limit)"
        raise UsageError(msg)
    return None if started is None or minutes is None else job_deadline(started, minutes)
