"""The order a farm run builds in and the lanes it runs on (docs/adr/0017-one-pool.md).

Every platform draws from one pool of `pool.lanes` concurrent build jobs. The groups are put in
priority order: farm.yaml's tiers first (tier 1: the newest torch minor on the CUDA its PyPI
wheel pins), the rest newest torch first, and within a tier the longest chain first (a split
group's compile shards and link, farm_requires producers and their consumers). The ordered jobs
are cut into shards of about `pool.shard_hours` of predicted work; a lane runs one shard's jobs
in turn, then takes the next shard, so no lane waits while a job is left. A consumer of farm
wheels runs in its producers' shard, after every one of them, and takes their wheels from the
run's own artifacts. A run plans only the shards its lanes finish within `pool.run_days`, its
last hours filled with later shards that still end in time; the next run plans the rest from
what the Releases then hold, and the pass's last run takes its longest shards first. Pure:
reads nothing but its arguments.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import NamedTuple, Protocol, TypeVar

from packaging.version import Version

from wheelfarm.core.errors import PlanError
from wheelfarm.matrix.expand import Build, Cell
from wheelfarm.matrix.model import Matrix, Pool, TierRule

MAX_SHARDS = 256  # farm.yml's matrix of shards is one GitHub matrix
# what a shard adds to its jobs on its lane: the targets job, the runner setups, its publish jobs
SHARD_OVERHEAD_MINUTES = 15.0


class _Grouped(Protocol):
    """What the queue needs of a plan's group (matrix.plan.Group)."""

    @property
    def id(self) -> str: ...

    @property
    def builds(self) -> tuple[Build, ...]: ...


@dataclass(frozen=True)
class Placed:
    """Where a group stands in the run: its tier, its place in the queue (1-based), its shard,
    the producer groups whose wheels it takes from the shard (none: empty) and the predicted
    minutes from the run's start until its shard starts and ends."""

    tier: int
    place: int
    shard: int
    after: tuple[str, ...]
    starts: float
    ends: float


def tier_of(build: Build, matrix: Matrix) -> int:
    """The best (lowest) tier of any cell the build serves; len(tiers) + 1 for none."""
    tiers = matrix.farm.pool.tiers
    minors = sorted({r.minor for r in matrix.releases}, key=Version, reverse=True)
    best = len(tiers) + 1
    for cell in build.covers:
        for number, rules in enumerate(tiers, 1):
            if number < best and any(_holds(rule, cell, matrix, minors) for rule in rules):
                best = number
    return best


def _holds(rule: TierRule, cell: Cell, matrix: Matrix, minors: list[str]) -> bool:
    named = {"newest": minors[:1], "previous": minors[1:2]}.get(rule.torch)
    if not (cell.torch in named if named is not None else fnmatchcase(cell.torch, rule.torch)):
        return False
    if rule.cuda != "pypi":
        return fnmatchcase(cell.cuda, rule.cuda)
    pypi = matrix.release(cell.torch).pypi  # Windows: PyPI's torch there is CPU: Linux's CUDA
    return cell.cuda == pypi.get(cell.platform, pypi.get("linux_x86_64"))


G = TypeVar("G", bound=_Grouped)


def consumers(groups: Sequence[_Grouped]) -> dict[str, tuple[str, ...]]:
    """Consumer group id -> the producer groups of this plan whose wheels it imports, sorted;
    a group that imports none of this plan's wheels is not listed."""
    owner = {b.id: g.id for g in groups for b in g.builds}
    out = {}
    for g in groups:
        producers = {owner[r] for b in g.builds for r in b.requires if r in owner}
        if producers:
            out[g.id] = tuple(sorted(producers))
    return out


def chains(groups: Sequence[_Grouped], after: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Group id -> its chain's name: the groups linked through farm_requires (producers and the
    consumers of their wheels, however many of each) form one chain, which one lane builds in
    turn; a group outside any is a chain of its own."""
    root = {g.id: g.id for g in groups}

    def find(i: str) -> str:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for consumer, producers in after.items():
        for p in producers:
            root[find(p)] = find(consumer)
    return {g.id: find(g.id) for g in groups}


def group_tiers(groups: Sequence[_Grouped], matrix: Matrix) -> dict[str, int]:
    """Group id -> its tier: the best tier of its builds."""
    return {g.id: min(tier_of(b, matrix) for b in g.builds) for g in groups}


def order(
    groups: Sequence[G],
    matrix: Matrix,
    minutes: Callable[[G], float],
    after: dict[str, tuple[str, ...]],
    tiers: dict[str, int],
) -> list[G]:
    """The groups in priority order: tier, then (past the tiers) newest torch, then the longest
    chain (the group's jobs in turn, and those of the producers and consumers linked to it),
    then id. A chain's groups come together, ranked by its best one: each producer before
    every consumer of its wheels."""
    chain = chains(groups, after)
    total: dict[str, float] = {}
    members: dict[str, list[G]] = {}
    for g in groups:
        total[chain[g.id]] = total.get(chain[g.id], 0.0) + minutes(g)
        members.setdefault(chain[g.id], []).append(g)
    last = len(matrix.farm.pool.tiers) + 1

    def key(g: G) -> tuple[int, float, float, str]:
        # past the tiers the newest torch first; torch-free builds serve every torch
        newest = _ordinal(g.builds[0].torch_minor) if tiers[g.id] == last else 0.0
        return tiers[g.id], -newest, -total[chain[g.id]], g.id

    depth: dict[str, int] = {}

    def deep(i: str) -> int:  # farm_requires has no cycles (matrix/load.py)
        if i not in depth:
            depth[i] = 1 + max((deep(p) for p in after.get(i, ())), default=-1)
        return depth[i]

    ranked = sorted(members.values(), key=lambda m: min(map(key, m)))
    return [g for m in ranked for g in sorted(m, key=lambda g: (deep(g.id), g.id))]


def _ordinal(minor: str | None) -> float:
    """A sortable number for a torch minor ('2.15' -> 2.015); a torch-free build's is 0."""
    if minor is None:
        return 0.0
    major, number = (*Version(minor).release, 0, 0)[:2]
    return major + number / 1000


def cut_shards(
    ordered: Sequence[G],
    minutes: Callable[[G], float],
    jobs: Callable[[G], int],
    pool: Pool,
    max_jobs: int,
    chain: dict[str, str],
    tiers: dict[str, int],
    per_run: Callable[[list[list[G]]], int] = len,
) -> list[list[G]]:
    """The ordered groups in shards of one tier each, each at most `max_jobs` jobs. Tier 1's
    shards hold its work spread over every lane (at most `shard_hours`), so that it all starts
    at once; later tiers' hold `shard_hours`, more where a run (`per_run`: the most shards one
    run of them holds) would pass MAX_SHARDS. A longer group is a shard of its own; a chain
    (`chain`: group id -> its chain, whose groups `order` put together) stays in one shard, so
    that a consumer follows every producer it imports in the same lane."""
    totals: dict[int, float] = {}
    for g in ordered:
        totals[tiers[g.id]] = totals.get(tiers[g.id], 0.0) + minutes(g)
    hours = pool.shard_hours * 60
    targets = {t: min(hours, max(60.0, total / pool.lanes)) for t, total in totals.items()}
    targets = {t: hours if t > 1 else v for t, v in targets.items()}
    while per_run(shards := _packed(ordered, minutes, jobs, targets, tiers, max_jobs, chain)) > (
        MAX_SHARDS
    ):
        if max(targets.values()) > sum(totals.values()):  # the job limit cuts them, not hours
            msg = (
                f"the run needs {len(shards)} shards of at most {max_jobs} jobs, over GitHub's "
                f"{MAX_SHARDS} matrix entries: raise max_jobs_per_shard in farm.yaml or narrow it"
            )
            raise PlanError(msg)
        targets = {t: v * 1.25 if t > 1 or len(targets) == 1 else v for t, v in targets.items()}
    return shards


def _packed(
    ordered: Sequence[G],
    minutes: Callable[[G], float],
    jobs: Callable[[G], int],
    targets: dict[int, float],
    tiers: dict[str, int],
    max_jobs: int,
    chain: dict[str, str],
) -> list[list[G]]:
    shards: list[list[G]] = []
    held = count = 0.0
    for g in ordered:
        chained = bool(shards) and chain[g.id] == chain[shards[-1][-1].id]
        tier = tiers[g.id]
        full = held > 0 and (held + minutes(g) > targets[tier] or count + jobs(g) > max_jobs)
        if not shards or (not chained and (full or tiers[shards[-1][0].id] != tier)):
            shards.append([])
            held = count = 0.0
        shards[-1].append(g)
        held += minutes(g)
        count += jobs(g)
    return shards


class Slot(NamedTuple):
    """A shard's predicted minutes from the pass's start, and the farm run (0: this one) that
    builds it."""

    start: float
    end: float
    run: int


def simulate(durations: Sequence[float], lanes: int, limit: float = math.inf) -> list[Slot]:
    """Each shard's slot when `lanes` lanes take them in order, each the next shard as soon as
    it is free (GitHub's max-parallel over the shard matrix), in runs of at most `limit`
    minutes. A shard that would end past its run's limit is left to the next run, and the
    lanes go on with the later shards that still end in time: the run fills its lanes to its
    last hour instead of idling while its last shards end. A run always keeps its first shard
    (or nothing would ever be built); the next run starts when this one ends (its run waits in
    farm.yml's concurrency group)."""
    out: list[Slot | None] = [None] * len(durations)
    left = list(range(len(durations)))
    begins, run = 0.0, 0
    while left:
        free = [begins] * max(1, lanes)
        rest: list[int] = []
        kept = False  # a run always keeps its first shard, or nothing would ever be built
        for i in left:
            start = free[0]
            if kept and start + durations[i] > begins + limit:
                rest.append(i)
                continue
            heapq.heapreplace(free, start + durations[i])
            out[i] = Slot(start, start + durations[i], run)
            kept = True
        begins = max(free)
        left, run = rest, run + 1
    return [s for s in out if s is not None]


def place(
    groups: Sequence[G],
    matrix: Matrix,
    minutes: Callable[[G], float],
    jobs: Callable[[G], int],
    max_jobs: int,
    *,
    one_run: bool = True,
) -> tuple[list[list[G]], list[G], dict[str, Placed]]:
    """(this run's shards, the groups left to the next run, where every group stands);
    `one_run` False keeps every shard (the whole pass)."""
    pool = matrix.farm.pool
    after = consumers(groups)
    chain = chains(groups, after)
    tiers = group_tiers(groups, matrix)
    ranked = order(groups, matrix, minutes, after, tiers)
    # on its lane a whole group's job also sets up (toolkit, torch env, source), which a split
    # group's estimate already counts for each of its jobs (split_compile.job_overhead_minutes)
    setup = matrix.farm.split_compile.job_overhead_minutes if matrix.farm.split_compile else 0.0

    def lane_minutes(shard: list[G]) -> float:
        work = sum(minutes(g) + (setup if jobs(g) == 1 else 0.0) for g in shard)
        return work + SHARD_OVERHEAD_MINUTES

    limit = pool.run_days * 24 * 60

    def per_run(cut: list[list[G]]) -> int:  # GitHub's matrix limit is a run's
        runs = Counter(s.run for s in simulate([lane_minutes(s) for s in cut], pool.lanes, limit))
        return max(runs.values(), default=0)

    shards = cut_shards(ranked, minutes, jobs, pool, max_jobs, chain, tiers, per_run)
    durations = [lane_minutes(s) for s in shards]
    slots = simulate(durations, pool.lanes, limit)
    # the pass's last run builds all that is left: its last tier's shards longest first, so
    # that its lanes end together (longest processing time first) rather than on one long shard
    final = [i for i, s in enumerate(slots) if s.run == max(s.run for s in slots)]
    tail = [i for i in final if tiers[shards[i][0].id] == tiers[shards[final[-1]][0].id]]
    ranks = dict(zip(tail, sorted(tail, key=lambda i: -durations[i]), strict=True))
    shards = [shards[ranks.get(i, i)] for i in range(len(shards))]
    slots = simulate([durations[ranks.get(i, i)] for i in range(len(shards))], pool.lanes, limit)
    # numbered by run: this run's shards first, in their order (the priority)
    numbered = sorted(range(len(shards)), key=lambda i: (slots[i].run, i))
    placed: dict[str, Placed] = {}
    number = 0
    for n, i in enumerate(numbered):
        for g in shards[i]:
            number += 1
            placed[g.id] = Placed(
                tier=tiers[g.id],
                place=number,
                shard=n + 1,
                after=after.get(g.id, ()),
                starts=slots[i].start,
                ends=slots[i].end,
            )
    kept = [shards[i] for i in numbered if not one_run or slots[i].run == 0]
    later = [g for i in numbered if one_run and slots[i].run > 0 for g in shards[i]]
    return kept, later, placed


def hours(minutes: float) -> str:
    """'13.2 h' for a predicted time."""
    return f"{math.ceil(minutes / 6) / 10:.1f} h"
