"""Plan: keep the builds that are missing, apply filters, split into shards under GitHub's
matrix limit, estimate cost, and explain any cell. Pure: reads nothing but its arguments."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path

from packaging.utils import canonicalize_name

from wheelfarm.core import gcpause, jsonread
from wheelfarm.core.errors import PlanError, UsageError
from wheelfarm.core.label import parsed
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix import queue
from wheelfarm.matrix.expand import Build, Cell, Expansion
from wheelfarm.matrix.model import Matrix, PythonGroups, SplitCompile
from wheelfarm.matrix.queue import Placed

MAX_JOBS_PER_MATRIX = 256  # GitHub runs at most this many jobs from one matrix


@dataclass(frozen=True, kw_only=True)
class Filters:
    """Selectors from the command line; each value may be a glob. Empty means everything."""

    package: tuple[str, ...] = ()
    cuda: tuple[str, ...] = ()
    torch: tuple[str, ...] = ()
    python: tuple[str, ...] = ()
    platform: tuple[str, ...] = ()
    version: tuple[str, ...] = ()  # a wheel request's label builds the version it answered

    def axes(self) -> Iterable[tuple[str, tuple[str, ...]]]:
        return (
            ("package", tuple(canonicalize_name(p) if "*" not in p else p for p in self.package)),
            ("cuda", self.cuda),
            ("torch", self.torch),
            ("python", self.python),
            ("platform", self.platform),
            ("version", self.version),
        )

    @cached_property
    def _wanted(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The axes a value is given for: a plan matches every cell against them."""
        return tuple((axis, wanted) for axis, wanted in self.axes() if wanted)

    def serves(self, build: Build) -> bool:
        """Whether `build` serves a cell the filters match."""
        return any(self.match(c) for c in build.covers)

    def match(self, cell: Cell) -> bool:
        if not self._wanted:  # no filter: a plan of everything asks for every cell
            return True
        return all(
            any(fnmatchcase(getattr(cell, axis), w) for w in wanted)
            for axis, wanted in self._wanted
        )


@dataclass(frozen=True)
class Group:
    """The builds one job makes in turn against one compiler cache (ADR 16): the missing Pythons
    and CUDA minors (ADR 19) of a package version, CUDA major, torch and platform. Each Python
    compiles once: the first every unit, each later one hits the cache for every unit that never
    includes Python.h, so it costs `reuse` of its own estimate (1.0 where the platform does not
    group); each further minor's wheel of a compile costs `variant` minutes."""

    id: str
    builds: tuple[Build, ...]
    reuse: float = 1.0
    variant: float = 0.0

    @property
    def platform(self) -> str:
        return self.builds[0].platform

    @cached_property
    def compiles(self) -> dict[str, float]:
        """Each compile's own estimate (one a Python), by compile id, oldest Python first."""
        return {b.compile_id: b.minutes for b in self.builds}

    @cached_property
    def compile_minutes(self) -> float:
        """The compiles' estimate: the first one's whole, the other Pythons' `reuse` share."""
        first, *rest = self.compiles.values()
        return first + self.reuse * sum(rest)

    @cached_property
    def variant_minutes(self) -> float:
        """`variant` for each wheel relabelled from another minor's compile."""
        return self.variant * (len(self.builds) - len(self.compiles))

    @cached_property
    def minutes(self) -> float:
        """The group's estimate: its compiles and its relabelled wheels."""
        return self.compile_minutes + self.variant_minutes


@dataclass(frozen=True)
class Shard:
    """At most `max_jobs` group jobs of any platform, which one lane runs in turn: one GitHub
    matrix (docs/adr/0017-one-pool.md). A compile lane (farm.yml's `compile` job) first runs
    `parts`: compile shards (group, part index) whose link job is in a later shard."""

    name: str
    groups: tuple[Group, ...]
    parts: tuple[tuple[Group, int], ...] = ()

    @property
    def builds(self) -> tuple[Build, ...]:
        return tuple(b for g in self.groups for b in g.builds)


@dataclass(frozen=True)
class Plan:
    """What to build now, and why everything else is not built."""

    todo: tuple[Build, ...]
    present: tuple[Build, ...]
    shards: tuple[Shard, ...]
    filters: Filters
    expansion: Expansion
    warnings: tuple[str, ...] = field(default=())
    splits: dict[str, int] = field(default_factory=dict)  # group id -> its compile shards
    split: SplitCompile | None = None
    # build id -> the farm_requires builds it waits for (not yet published)
    deferred: dict[str, tuple[str, ...]] = field(default_factory=dict)
    groups: tuple[Group, ...] = ()
    placed: dict[str, Placed] = field(default_factory=dict)  # group id -> tier, place, shard
    later: tuple[Group, ...] = ()  # past the run's days: the next run plans them
    compile_lanes: int = 0  # the first shards: compile lanes, before the rest (farm.yml)
    lanes: int = 0  # farm.yaml pool.lanes: farm.yml's max-parallel

    def job_minutes(self, group: Group) -> tuple[float, ...]:
        """Predicted minutes of each job the group runs: one, or its shards and its link."""
        return job_minutes(group, self.splits.get(group.id, 0), self.split)

    def group_of(self, build_id: str) -> Group:
        return next(g for g in self.groups if any(b.id == build_id for b in g.builds))

    @property
    def runner_hours(self) -> float:
        return sum(sum(self.job_minutes(g)) for g in self.groups) / 60

    @property
    def longest_job_minutes(self) -> float:
        return max((max(self.job_minutes(g)) for g in self.groups), default=0.0)


def group(
    builds: Sequence[Build], groups: PythonGroups | None, variant: float = 0.0
) -> tuple[Group, ...]:
    """The builds as group jobs, oldest Python first: every Python and CUDA minor of a group id
    on a platform that groups (farm.yaml python_groups), a job per build elsewhere; `variant`
    minutes for each wheel relabelled from another's compile (farm.yaml cuda_majors)."""
    out: dict[str, list[Build]] = {}
    for b in builds:
        grouped = groups is not None and b.platform in groups.platforms
        alone = b.id if groups is None else b.compile_id  # a job per build, or per compile
        out.setdefault(b.group_id if grouped else alone, []).append(b)
    made = []
    for gid, members in out.items():
        # oldest Python first, each Python's compiling minor before the minors relabelled from it
        members.sort(key=lambda b: (parsed(b.python), b.variants.index(b.cuda)))
        shared = {(b.torch, b.archs.torch, b.minutes) for b in members}
        if len(shared) > 1:  # one compile serves them all only if they compile the same
            msg = f"group {gid}: its builds differ in torch, archs or estimate: {sorted(shared)}"
            raise PlanError(msg)
        reuse = groups.next_python_fraction if groups is not None and len(members) > 1 else 1.0
        made.append(Group(gid, tuple(members), reuse, variant))
    return tuple(made)


def variant_minutes(matrix: Matrix) -> float:
    """What each CUDA minor's wheel relabelled from another's compile costs (farm.yaml
    cuda_majors); 0 where every minor compiles on its own."""
    majors = matrix.farm.cuda_majors
    return 0.0 if majors is None else majors.variant_minutes


def compile_shards(group: Group, split: SplitCompile | None) -> int:
    """How many compile shards a group is split into; 0 for a group that runs as one job."""
    if (
        split is None
        or group.platform not in split.platforms
        or group.compile_minutes <= split.over_minutes
    ):
        return 0
    return max(2, math.ceil(group.compile_minutes / split.shard_minutes))


def job_minutes(group: Group, shards: int, split: SplitCompile | None) -> tuple[float, ...]:
    """(minutes,) of an unsplit group; the K shard jobs' minutes then the link job's (it links,
    repairs and verifies every Python of the group, and relabels and verifies each minor's
    wheel of a compile)."""
    if not shards or split is None:
        return (round(group.minutes, 1),)
    each = group.compile_minutes / shards + split.job_overhead_minutes
    link = (
        sum(group.compiles.values()) * split.link_fraction
        + split.job_overhead_minutes
        + group.variant_minutes
    )
    return (*(round(each, 1) for _ in range(shards)), round(link, 1))


def existing_build_ids(source: Path | None) -> set[str]:
    """Build ids already published: from an index's packages.json (a wheel built with fewer
    archs than its policy does not count) or a folder of wheels."""
    if source is None:
        return set()
    if source.is_dir():
        return {build_id_from_wheel(p.name) for p in source.glob("*.whl")}
    if not source.is_file():
        msg = (
            f"--existing {str(source)!r}: no such file or folder "
            f"(give packages.json or a wheelhouse)"
        )
        raise UsageError(msg)
    try:
        data = jsonread.loads(source.read_bytes(), what=str(source))
        return {
            w.get("build_id") or build_id_from_wheel(w["filename"])
            for w in data["wheels"]
            if not w.get("partial_archs")  # a quick --archs build: the full one is still due
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = f"--existing {str(source)!r} is not a wheelfarm packages.json: {exc!r}"
        raise UsageError(msg) from exc


def _check_filters(filters: Filters, cells: Sequence[Cell]) -> None:
    """A filter value that matches no cell is a typo, never an empty green run."""
    problems = []
    for axis, wanted in filters.axes():
        if not wanted:
            continue
        have = sorted({getattr(c, axis) for c in cells})
        for w in wanted:
            if not any(fnmatchcase(h, w) for h in have):
                hint = difflib.get_close_matches(w, have, n=1)
                tip = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(f"--{axis} {w!r} matches nothing (have: {', '.join(have)}){tip}")
    if problems:
        raise PlanError("\n".join(problems))


@gcpause.paused()
def make_plan(
    matrix: Matrix,
    expansion: Expansion,
    *,
    filters: Filters = Filters(),
    existing: set[str] | frozenset[str] = frozenset(),
    max_jobs: int | None = None,
    grouped: bool = True,
    one_run: bool = True,
) -> Plan:
    """The plan, stage by stage: select what the filters name and Releases lack, group it into
    jobs, defer what waits for unpublished wheels, split long compiles, place the groups in
    lanes and shards, and warn (`grouped` False: a job per build, as before ADR 16; `one_run`
    False: the whole pass, with no run's days cut off)."""
    _check_filters(filters, expansion.cells)
    jobs = _max_jobs(matrix, max_jobs)
    chosen = _select(expansion, filters, existing)
    grouping = matrix.farm.python_groups if grouped else None
    candidates = group(chosen.buildable, grouping, variant_minutes(matrix))
    candidates, deferred = _defer(candidates, chosen, existing)
    splits = _split(candidates, matrix.farm.split_compile, jobs)
    where = _place(candidates, matrix, splits, jobs, one_run=one_run)
    shards = _cut(where)
    groups = tuple(g for s in shards for g in s.groups)
    split = matrix.farm.split_compile
    return Plan(
        todo=tuple(b for g in groups for b in g.builds),
        present=tuple(b for b in chosen.selected if b.id in existing),
        shards=shards,
        filters=filters,
        expansion=expansion,
        warnings=_long_job_warnings(groups, matrix.farm.hosted_job_limit_minutes, splits, split)
        + _deferred_warnings(chosen.selected, deferred)
        + _later_warnings(where.later, where.placed, matrix),
        splits={g.id: splits[g.id] for g in groups if g.id in splits},
        split=split,
        deferred=deferred,
        groups=groups,
        placed=where.placed,
        later=tuple(where.later),
        compile_lanes=len(where.spread.parts),
        lanes=matrix.farm.pool.lanes,
    )


def _max_jobs(matrix: Matrix, max_jobs: int | None) -> int:
    """A shard's job limit: farm.yaml's, or `--max-jobs`, within GitHub's matrix limit."""
    jobs = matrix.farm.max_jobs_per_shard if max_jobs is None else max_jobs
    if not 1 <= jobs <= MAX_JOBS_PER_MATRIX:
        msg = f"--max-jobs {jobs}: a shard holds 1 to {MAX_JOBS_PER_MATRIX} jobs (GitHub's limit)"
        raise PlanError(msg)
    return jobs


@dataclass(frozen=True)
class _Selection:
    """The builds the filters select, and what each still waits for."""

    selected: list[Build]
    waits: dict[str, tuple[str, ...]]  # build id -> its unpublished farm_requires builds
    deferred: dict[str, tuple[str, ...]]  # those waiting for a build this run does not make
    buildable: list[Build]  # missing from Releases and not deferred


def _select(
    expansion: Expansion, filters: Filters, existing: set[str] | frozenset[str]
) -> _Selection:
    """Select: the builds serving a cell the filters match; those Releases lack are missing,
    and one importing a missing build that is not selected waits for a later run."""
    selected = [b for b in expansion.builds if filters.serves(b)]
    if not selected:
        msg = "the filters together select no build; loosen one of them"
        raise PlanError(msg)
    missing = {b.id for b in selected if b.id not in existing}
    waits, deferred = _waits(selected, missing, existing)
    buildable = [b for b in selected if b.id in missing and b.id not in deferred]
    return _Selection(selected, waits, deferred, buildable)


def _waits(
    selected: list[Build], missing: set[str], existing: set[str] | frozenset[str]
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each selected build's farm_requires builds that Releases lack, and the missing builds
    among them that wait for one this run does not make. A consumer builds in this run after
    every producer group of this run it imports (queue.py)."""
    waits = {b.id: tuple(r for r in b.requires if r not in existing) for b in selected}
    deferred = {i: w for i, w in waits.items() if i in missing and any(r not in missing for r in w)}
    return waits, deferred


def _defer(
    candidates: tuple[Group, ...], chosen: _Selection, existing: set[str] | frozenset[str]
) -> tuple[tuple[Group, ...], dict[str, tuple[str, ...]]]:
    """Defer: hold back each group that cannot build in this run (`_waiting`), until none is
    left; the groups kept and every deferred build with what it waits for."""
    deferred = dict(chosen.deferred)
    while held := {g.id for g in _waiting(candidates, chosen.waits, existing)}:
        deferred.update(
            {b.id: chosen.waits[b.id] for g in candidates if g.id in held for b in g.builds}
        )
        candidates = tuple(g for g in candidates if g.id not in held)
    return candidates, deferred


def _split(candidates: Sequence[Group], split: SplitCompile | None, jobs: int) -> dict[str, int]:
    """Split: each long group's compile shards, at most one matrix of them (what still runs
    too long warns)."""
    return {g.id: min(k, jobs) for g in candidates if (k := compile_shards(g, split))}


def _place(
    candidates: Sequence[Group],
    matrix: Matrix,
    splits: dict[str, int],
    jobs: int,
    *,
    one_run: bool,
) -> queue.Placement:
    """Place: the groups in lanes and shards (queue.place). Compile shards in parallel lanes
    shorten a split group's chain, but the lanes then wait at the link's barrier: they are
    spread only where the first tier ends sooner (a wide pool)."""
    split = matrix.farm.split_compile
    jobs_of = {g.id: job_minutes(g, splits.get(g.id, 0), split) for g in candidates}
    total = {i: sum(each) for i, each in jobs_of.items()}  # the queue asks for each many times

    def minutes(g: Group) -> float:
        return total[g.id]

    def parts(g: Group) -> tuple[float, ...]:
        return jobs_of[g.id][:-1] if g.id in splits else ()

    def placed(*, spread: bool) -> queue.Placement:
        return queue.place(
            candidates,
            matrix,
            minutes,
            lambda g: splits.get(g.id, 0) + 1,
            jobs,
            one_run=one_run,
            parts=parts if spread else lambda _: (),
        )

    where = placed(spread=True)
    if where.spread.parts and _finish(narrow := placed(spread=False)) < _finish(where):
        return narrow
    return where


def _cut(where: queue.Placement) -> tuple[Shard, ...]:
    """The shards farm.yml runs: the compile lanes first (their parts, then the groups
    filling them), then the rest."""
    first = where.spread
    cut = [(tuple(p), tuple(f)) for p, f in zip(first.parts, first.fill, strict=True)]
    cut += [((), tuple(s)) for s in where.shards]
    return tuple(Shard(f"{i + 1}of{len(cut)}", f, p) for i, (p, f) in enumerate(cut))


def _finish(where: queue.Placement) -> tuple[float, float]:
    """When the first tier's last group ends, then the last of all."""
    ends = [(p.tier, p.ends) for p in where.placed.values()]
    first = min((t for t, _ in ends), default=0)
    return (
        max((e for t, e in ends if t == first), default=0.0),
        max((e for _, e in ends), default=0.0),
    )


def _waiting(
    groups: Sequence[Group], waits: dict[str, tuple[str, ...]], existing: set[str] | frozenset[str]
) -> list[Group]:
    """The groups this run cannot build yet: one importing a farm wheel that is neither
    published nor built by a group of the run left in (a producer it waits for may be held
    itself), or one taking wheels both from its producers in the run and from the Releases
    (its job reads one source, the shard's artifacts: docs/adr/0017-one-pool.md)."""
    built = {b.id for g in groups for b in g.builds}
    out = []
    for g in groups:
        unpublished = {r for b in g.builds for r in waits[b.id]}
        published = {r for b in g.builds for r in b.requires if r in existing}
        if not unpublished <= built or (unpublished and published):
            out.append(g)
    return out


def _later_warnings(
    later: Sequence[Group], placed: dict[str, Placed], matrix: Matrix
) -> tuple[str, ...]:
    """One line when the run's days cannot hold every group: the next run plans the rest."""
    if not later:
        return ()
    builds = sum(len(g.builds) for g in later)
    first = min(placed[g.id].tier for g in later)
    return (
        (
            f"{builds} builds in {len(later)} group jobs (from tier {first}) are left to the "
            f"next farm run: this one plans what {matrix.farm.pool.lanes} lanes finish in "
            f"{matrix.farm.pool.run_days:g} days (farm.yaml pool.run_days)"
        ),
    )


def _deferred_warnings(
    selected: Sequence[Build], deferred: dict[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """One line per package whose builds wait for the farm wheels they import."""
    waiting: dict[str, list[Build]] = {}
    for b in selected:
        if b.id in deferred:
            waiting.setdefault(b.package, []).append(b)
    return tuple(
        f"{pkg}: {len(bs)} builds deferred until the farm_requires wheels they import are "
        f"published (e.g. {bs[0].id} waits for {', '.join(deferred[bs[0].id])}); a run after "
        f"those are released builds them"
        for pkg, bs in waiting.items()
    )


def _long_job_warnings(
    groups: Sequence[Group], limit: int, splits: dict[str, int], split: SplitCompile | None
) -> tuple[str, ...]:
    """One line per package whose group jobs have one predicted past the hosted-job limit."""
    over: dict[str, list[float]] = {}
    example: dict[str, str] = {}
    for g in groups:
        longest = max(job_minutes(g, splits.get(g.id, 0), split))
        if longest > limit:
            package = g.builds[0].package
            over.setdefault(package, []).append(longest)
            example.setdefault(package, g.id)
    return tuple(
        f"{pkg}: {len(ms)} job(s) predicted up to {max(ms):.0f} min > {limit} "
        f"min hosted-job limit (e.g. {example[pkg]}); send them to a self-hosted runner (the "
        f"runner_<platform> input), split their compile (farm.yaml split_compile) or narrow "
        f"their archs; cut off, a job saves its compiler cache and its rerun resumes"
        for pkg, ms in over.items()
    )
