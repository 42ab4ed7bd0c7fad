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
from typing import Any, NamedTuple, Protocol, TypeVar

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
    return _Tiers(matrix).of(build)


class _Tiers:
    """farm.yaml's tier rules read once for a plan: a cell's tier depends only on its torch,
    CUDA and platform, so each of those is judged once, not once per build it serves."""

    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        minors = sorted({r.minor for r in matrix.releases}, key=Version, reverse=True)
        self.named = {"newest": minors[:1], "previous": minors[1:2]}
        self.known: dict[tuple[str, str, str], int] = {}

    def of(self, build: Build) -> int:
        return min(map(self.cell, build.covers), default=len(self.matrix.farm.pool.tiers) + 1)

    def cell(self, cell: Cell) -> int:
        key = (cell.torch, cell.cuda, cell.platform)
        tier = self.known.get(key)
        if tier is None:
            rules = self.matrix.farm.pool.tiers
            tier = self.known[key] = next(
                (n for n, rs in enumerate(rules, 1) if any(self._holds(r, cell) for r in rs)),
                len(rules) + 1,
            )
        return tier

    def _holds(self, rule: TierRule, cell: Cell) -> bool:
        named = self.named.get(rule.torch)
        if not (cell.torch in named if named is not None else fnmatchcase(cell.torch, rule.torch)):
            return False
        if rule.cuda != "pypi":
            return fnmatchcase(cell.cuda, rule.cuda)
        # Windows: PyPI's torch there is CPU, so Linux's CUDA
        pypi = self.matrix.release(cell.torch).pypi
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
    tiers = _Tiers(matrix)
    return {g.id: min(tiers.of(b) for b in g.builds) for g in groups}


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
    at once; later tiers' hold `shard_hours`, more where a run
    (`per_run`: the most shards one run of them holds) would pass MAX_SHARDS. A longer group
    is a shard of its own; a chain (`chain`: group id -> its chain, whose groups `order` put
    together) stays in one shard, so that a consumer follows every producer it imports in the
    same lane."""
    # each group's (minutes, jobs, tier, chain), read once for every packing tried
    each = [(minutes(g), jobs(g), tiers[g.id], chain[g.id]) for g in ordered]
    totals: dict[int, float] = {}
    for spent, _, tier, _ in each:
        totals[tier] = totals.get(tier, 0.0) + spent
    hours = pool.shard_hours * 60
    targets = {t: min(hours, max(60.0, total / pool.lanes)) for t, total in totals.items()}
    targets = {t: hours if t > 1 else v for t, v in targets.items()}
    while per_run(shards := _packed(ordered, each, targets, max_jobs)) > MAX_SHARDS:
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
    each: list[tuple[float, int, int, str]],
    targets: dict[int, float],
    max_jobs: int,
) -> list[list[G]]:
    """The groups cut where a shard would pass its tier's target or `max_jobs`, or the tier
    changes, never inside a chain (`each`: a group's minutes, jobs, tier and chain)."""
    shards: list[list[G]] = []
    held = count = 0.0
    shard_tier, last_chain = 0, ""
    for g, (spent, jobs, tier, chain) in zip(ordered, each, strict=True):
        chained = bool(shards) and chain == last_chain
        full = held > 0 and (held + spent > targets[tier] or count + jobs > max_jobs)
        if not shards or (not chained and (full or shard_tier != tier)):
            shards.append([])
            held = count = 0.0
            shard_tier = tier
        shards[-1].append(g)
        held += spent
        count += jobs
        last_chain = chain
    return shards


class Slot(NamedTuple):
    """A shard's predicted minutes from the pass's start, and the farm run (0: this one) that
    builds it."""

    start: float
    end: float
    run: int


def simulate(
    durations: Sequence[float], lanes: int, limit: float = math.inf, first: float = 0.0
) -> list[Slot]:
    """Each shard's slot when `lanes` lanes take them in order, each the next shard as soon as
    it is free (GitHub's max-parallel over the shard matrix), in runs of at most `limit`
    minutes. A shard that would end past its run's limit is left to the next run, and the
    lanes go on with the later shards that still end in time: the run fills its lanes to its
    last hour instead of idling while its last shards end. A run always keeps its first shard
    (or nothing would ever be built); the next run starts when this one ends (its run waits in
    farm.yml's concurrency group). `first`: when this run's lanes are free (after its compile
    lanes, `spread`)."""
    out: list[Slot | None] = [None] * len(durations)
    left = list(range(len(durations)))
    begins, run = 0.0, 0
    while left:
        free = [begins + (first if run == 0 else 0.0)] * max(1, lanes)
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


class _Spread(NamedTuple):
    """The run's compile lanes (farm.yml's `compile` job, before its shards): each lane's
    compile shards (group, part index) and the whole groups that fill it, and when the last
    lane ends."""

    parts: list[list[tuple[Any, int]]]
    fill: list[list[Any]]
    ends: float


def spread(
    ranked: Sequence[G],
    parts: Callable[[G], tuple[float, ...]],
    minutes: Callable[[G], float],
    chain: dict[str, str],
    tiers: dict[str, int],
    lanes: int,
    max_jobs: int,
) -> _Spread:
    """The compile shards of the run's first tier's split groups, longest chain first while
    they all fit the lanes at once, a lane each (ADR 11's link job then runs in a shard after
    them all, farm.yml's `needs:`), and the lanes that end early filled with that
    tier's whole groups (a chain of their own) that end by the last compile shard, so that
    the lanes wait little at the barrier. A group in a farm_requires chain keeps its
    compile shards in its chain's lane."""
    alone = Counter(chain.values())
    first = min(tiers.values(), default=0)
    wide: list[G] = []
    for g in ranked:  # longest chain first, while every compile shard has a lane at once
        if parts(g) and tiers[g.id] == first and alone[chain[g.id]] == 1:
            if sum(len(parts(w)) for w in wide) + len(parts(g)) > lanes:
                break
            wide.append(g)
    if not wide:
        return _Spread([], [], 0.0)
    work = sorted(
        ((m, n, g, i) for n, g in enumerate(wide) for i, m in enumerate(parts(g))),
        key=lambda t: (-t[0], t[1], t[3]),
    )
    width = min(lanes, len(work))
    free = [(0.0, lane) for lane in range(width)]
    held: list[list[tuple[Any, int]]] = [[] for _ in range(width)]
    for m, _, g, i in work:
        start, lane = heapq.heappop(free)
        held[lane].append((g, i))
        heapq.heappush(free, (start + m, lane))
    load = [0.0] * width
    for start, lane in free:
        load[lane] = start
    ends = max(load)
    fill: list[list[Any]] = [[] for _ in range(width)]
    for g in ranked:
        if parts(g) or tiers[g.id] != first or alone[chain[g.id]] != 1:
            continue
        lane = min(range(width), key=lambda n: load[n])
        if load[lane] + minutes(g) <= ends and len(held[lane]) + len(fill[lane]) < max_jobs:
            fill[lane].append(g)
            load[lane] += minutes(g)
    return _Spread(held, fill, ends + SHARD_OVERHEAD_MINUTES)


class Placement(NamedTuple):
    """A run's shards: its compile lanes (`spread`), the shards after them, the groups left to
    the next run, and where every group stands."""

    spread: _Spread
    shards: list[list[Any]]
    later: list[Any]
    placed: dict[str, Placed]


def place(
    groups: Sequence[G],
    matrix: Matrix,
    minutes: Callable[[G], float],
    jobs: Callable[[G], int],
    max_jobs: int,
    *,
    one_run: bool = True,
    parts: Callable[[G], tuple[float, ...]] = lambda _: (),
) -> Placement:
    """The run's compile lanes, its shards after them, the groups left to the next run and
    where every group stands; `one_run` False keeps every shard (the whole pass). `parts`: a
    split group's compile shards' minutes (its `minutes` less them is its link job's)."""
    pool = matrix.farm.pool
    after = consumers(groups)
    chain = chains(groups, after)
    tiers = group_tiers(groups, matrix)
    ranked = order(groups, matrix, minutes, after, tiers)
    lanes_first = spread(ranked, parts, minutes, chain, tiers, pool.lanes, max_jobs)
    wide = {g.id for lane in lanes_first.parts for g, _ in lane}
    filled = {g.id for lane in lanes_first.fill for g in lane}
    ranked = [g for g in ranked if g.id not in filled]
    # on its lane a whole group's job also sets up (toolkit, torch env, source), which a split
    # group's estimate already counts for each of its jobs (split_compile.job_overhead_minutes)
    setup = matrix.farm.split_compile.job_overhead_minutes if matrix.farm.split_compile else 0.0

    def left(g: G) -> float:  # a spread group's link job; the rest as they were
        return minutes(g) - sum(parts(g)) if g.id in wide else minutes(g)

    def lane_minutes(shard: list[G]) -> float:
        work = sum(left(g) + (setup if jobs(g) == 1 else 0.0) for g in shard)
        return work + SHARD_OVERHEAD_MINUTES

    limit = pool.run_days * 24 * 60
    begins = lanes_first.ends
    spread_shards = len(lanes_first.parts)

    def per_run(cut: list[list[G]]) -> int:  # GitHub's matrix limit is a run's
        durations = [lane_minutes(s) for s in cut]
        runs = Counter(s.run for s in simulate(durations, pool.lanes, limit, begins))
        return max(runs.values(), default=0) + spread_shards

    def one(g: G) -> int:
        return 1 if g.id in wide else jobs(g)

    # each spread group's link job a shard of its own, first: it publishes as soon as it ends
    links = [[g] for g in ranked if g.id in wide]
    rest = [g for g in ranked if g.id not in wide]
    shards = links + cut_shards(
        rest, left, one, pool, max_jobs, chain, tiers, lambda cut: per_run(links + cut)
    )
    durations = [lane_minutes(s) for s in shards]
    slots = simulate(durations, pool.lanes, limit, begins)
    # the pass's last run builds all that is left: its last tier's shards longest first, so
    # that its lanes end together (longest processing time first) rather than on one long shard
    last_run = max((s.run for s in slots), default=0)
    final = [i for i, s in enumerate(slots) if s.run == last_run]
    # (a link job after the compile lanes keeps its place: first)
    tail = [
        i
        for i in final
        if tiers[shards[i][0].id] == tiers[shards[final[-1]][0].id]
        and not any(g.id in wide for g in shards[i])
    ]
    ranks = dict(zip(tail, sorted(tail, key=lambda i: -durations[i]), strict=True))
    shards = [shards[ranks.get(i, i)] for i in range(len(shards))]
    slots = simulate(
        [durations[ranks.get(i, i)] for i in range(len(shards))], pool.lanes, limit, begins
    )
    # numbered by run: the compile lanes, then this run's shards, in their order (the priority)
    numbered = sorted(range(len(shards)), key=lambda i: (slots[i].run, i))
    placed: dict[str, Placed] = {}
    # the spread groups first: their compile shards start the run
    first = {
        i: n for n, i in enumerate(dict.fromkeys(g.id for p in lanes_first.parts for g, _ in p), 1)
    }
    number = len(first)
    for n, lane in enumerate(lanes_first.fill):
        for g in lane:
            number += 1
            placed[g.id] = Placed(tiers[g.id], number, n + 1, (), 0.0, lanes_first.ends)
    for n, i in enumerate(numbered, spread_shards):
        for g in shards[i]:
            number += g.id not in first
            placed[g.id] = Placed(
                tier=tiers[g.id],
                place=first.get(g.id, number),
                shard=n + 1,
                after=after.get(g.id, ()),
                starts=slots[i].start,
                ends=slots[i].end,
            )
    kept = [shards[i] for i in numbered if not one_run or slots[i].run == 0]
    later = [g for i in numbered if one_run and slots[i].run > 0 for g in shards[i]]
    return Placement(lanes_first, kept, later, placed)


def hours(minutes: float) -> str:
    """'13.2 h' for a predicted time."""
    return f"{math.ceil(minutes / 6) / 10:.1f} h"
