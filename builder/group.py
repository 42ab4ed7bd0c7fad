"""A group job's builds: its compiles (one per Python, oldest first, against one compiler
cache, ADR 16), each giving the wheels of every CUDA minor it serves (ADR 19), or a lone
target. A failed Python or minor does not stop the rest: their wheels are kept and published,
and the group fails after the last with the first failure."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import groupby

from wheelfarm.builder.build import (
    BuildOptions,
    BuildResult,
    Outcome,
    ShardResult,
    run_compile,
    run_shard,
)
from wheelfarm.builder.target import Target
from wheelfarm.core.errors import WheelfarmError

logger = logging.getLogger(__name__)

Built = Callable[[BuildResult | ShardResult], None]
Compile = Callable[[Sequence[Target], BuildOptions], Iterable[Outcome | tuple[Target, ShardResult]]]


def _compile_one(
    targets: Sequence[Target], opts: BuildOptions
) -> Iterator[Outcome | tuple[Target, ShardResult]]:
    """One compile's targets: their wheels, or (`opts.split` a shard) its compile shard, which
    every minor of the compile shares."""
    b = targets[0].build
    logger.info(
        "building %s (archs %s, %s, CUDA %s for %s)",
        b.compile_id,
        b.archs.torch or "none: no device code",
        f"torch {b.torch}" if b.torch else "no torch",
        b.compile_cuda,
        ", ".join(t.build.cuda for t in targets),
    )
    if opts.split is not None and opts.split.is_shard:
        yield targets[0], run_shard(targets[0], opts)
        return
    yield from run_compile(targets, opts)


def build_group(
    targets: Sequence[Target],
    opts: BuildOptions,
    built: Built,
    *,
    build: Compile = _compile_one,
) -> None:
    """`build` each compile of the targets (consecutive targets of one compile id), handing each
    result to `built` as it comes; a lone target's failure is raised as it is, a group's after
    its other Pythons and minors built (each logged in one line)."""
    failed: list[tuple[Target, WheelfarmError]] = []
    for _, batch in groupby(targets, key=lambda t: t.build.compile_id):
        compile_targets = list(batch)
        try:
            for target, outcome in build(compile_targets, opts):
                if isinstance(outcome, WheelfarmError):
                    _failed(target, outcome, len(targets), failed)
                else:
                    built(outcome)
        except WheelfarmError as exc:  # a failed compile must not stop the rest
            for target in compile_targets:
                _failed(target, exc, len(targets), failed)
    if failed:
        names = ", ".join(f"{t.build.python} {t.build.cuda}" for t, _ in failed)
        logger.error(
            "%d of %d builds failed (%s); the others' wheels are in %s",
            len(failed),
            len(targets),
            names,
            opts.out_dir,
        )
        raise failed[0][1]


def _failed(
    target: Target, exc: WheelfarmError, count: int, failed: list[tuple[Target, WheelfarmError]]
) -> None:
    if count == 1:
        raise exc
    logger.error("%s failed: %s", target.id, exc)  # one line per build
    failed.append((target, exc))
