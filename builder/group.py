"""A group job's builds: one target per Python of a group (oldest first, against one compiler
cache), or a lone target. A failed Python does not stop the rest: their wheels are kept and
published, and the group fails after the last with the first failure."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from wheelfarm.builder.build import BuildOptions, BuildResult, ShardResult, run_build, run_shard
from wheelfarm.builder.target import Target
from wheelfarm.core.errors import WheelfarmError

logger = logging.getLogger(__name__)

Built = Callable[[BuildResult | ShardResult], None]


def build_one(target: Target, opts: BuildOptions) -> BuildResult | ShardResult:
    """One target: its wheel, or (`opts.split` a shard) its compile shard."""
    b = target.build
    logger.info(
        "building %s (archs %s, %s)",
        target.id,
        b.archs.torch or "none: no device code",
        f"torch {b.torch}" if b.torch else "no torch",
    )
    if opts.split is not None and opts.split.is_shard:
        return run_shard(target, opts)
    return run_build(target, opts)


def build_group(
    targets: Sequence[Target],
    opts: BuildOptions,
    built: Built,
    *,
    build: Callable[[Target, BuildOptions], BuildResult | ShardResult] = build_one,
) -> None:
    """`build` each target, handing each result to `built` as it comes; a lone target's failure
    is raised as it is, a group's after its other Pythons built (each logged in one line)."""
    failed: list[tuple[Target, WheelfarmError]] = []
    for target in targets:
        try:
            built(build(target, opts))
        except WheelfarmError as exc:  # noqa: PERF203 - a failed Python must not stop the rest
            if len(targets) == 1:
                raise
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
