"""`wheelfarm build`: one target through every step, or one shard of a split compile."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError, WheelfarmError

if TYPE_CHECKING:
    from wheelfarm.builder.build import BuildOptions
    from wheelfarm.builder.shard import Split
    from wheelfarm.builder.target import Target

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
    targets = choose_targets(matrix, expansion, query, pythons)
    failed: list[tuple[Target, WheelfarmError]] = []
    for target in targets:
        try:
            _build(target, opts)
        except WheelfarmError as exc:  # noqa: PERF203 - a failed Python must not stop the rest
            if len(targets) == 1:
                raise
            # the group's other Pythons still build: their wheels are kept and published
            logger.error("%s failed: %s", target.id, exc)  # noqa: TRY400 - one line per build
            failed.append((target, exc))
    if failed:
        names = ", ".join(t.build.python for t, _ in failed)
        logger.error(
            "%d of %d Pythons failed (%s); the others' wheels are in %s",
            len(failed),
            len(targets),
            names,
            opts.out_dir,
        )
        raise failed[0][1]
    return 0


def _build(target: Target, opts: BuildOptions) -> None:
    """One target: a wheel (its path printed), or a compile shard (its summary printed)."""
    from wheelfarm.builder.build import run_build, run_shard

    b = target.build
    logger.info(
        "building %s (archs %s, %s)",
        target.id,
        b.archs.torch or "none: no device code",
        f"torch {b.torch}" if b.torch else "no torch",
    )
    if opts.split is not None and opts.split.is_shard:
        shard = run_shard(target, opts)
        logger.info("compiled %s in %.1fs", shard.summary.name, sum(shard.durations.values()))
        print(shard.summary)
        return
    result = run_build(target, opts)
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
