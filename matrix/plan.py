"""Plan: keep the builds that are missing, apply filters, split into shards under GitHub's
matrix limit, estimate cost, and explain any cell. Pure: reads nothing but its arguments."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from wheelfarm.core import jsonread
from wheelfarm.core.errors import PlanError, UsageError
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix.expand import Build, Cell, Expansion
from wheelfarm.matrix.model import Matrix, PythonGroups, SplitCompile

MAX_JOBS_PER_MATRIX = 256  # GitHub runs at most this many jobs from one matrix


@dataclass(frozen=True, kw_only=True)
class Filters:
    """Selectors from the command line; each value may be a glob. Empty means everything."""

    package: tuple[str, ...] = ()
    cuda: tuple[str, ...] = ()
    torch: tuple[str, ...] = ()
    python: tuple[str, ...] = ()
    platform: tuple[str, ...] = ()

    def axes(self) -> Iterable[tuple[str, tuple[str, ...]]]:
        return (
            ("package", tuple(canonicalize_name(p) if "*" not in p else p for p in self.package)),
            ("cuda", self.cuda),
            ("torch", self.torch),
            ("python", self.python),
            ("platform", self.platform),
        )

    def match(self, cell: Cell) -> bool:
        return all(
            not wanted or any(fnmatchcase(getattr(cell, axis), w) for w in wanted)
            for axis, wanted in self.axes()
        )


@dataclass(frozen=True)
class Group:
    """The builds one job makes in turn against one compiler cache (ADR 16): the missing Pythons
    of a package version, CUDA, torch and platform. The first compiles every unit; each later
    one hits the cache for every unit that never includes Python.h, so it costs `reuse` of its
    own estimate (1.0 where the platform does not group)."""

    id: str
    builds: tuple[Build, ...]
    reuse: float = 1.0

    @property
    def platform(self) -> str:
        return self.builds[0].platform

    @property
    def minutes(self) -> float:
        """The group's compile estimate: the first Python's whole, the others' `reuse` share."""
        first, *rest = self.builds
        return first.minutes + self.reuse * sum(b.minutes for b in rest)


@dataclass(frozen=True)
class Shard:
    """At most `max_jobs` group jobs of one platform: one GitHub matrix."""

    name: str
    platform: str
    runner: str
    container: str
    groups: tuple[Group, ...]

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


def group(builds: Sequence[Build], groups: PythonGroups | None) -> tuple[Group, ...]:
    """The builds as group jobs, oldest Python first: every Python of a group id on a platform
    that groups (farm.yaml python_groups), a job per build elsewhere."""
    out: dict[str, list[Build]] = {}
    for b in builds:
        grouped = groups is not None and b.platform in groups.platforms
        out.setdefault(b.group_id if grouped else b.id, []).append(b)
    made = []
    for gid, members in out.items():
        members.sort(key=lambda b: Version(b.python))
        shared = {(b.torch, b.archs.torch, b.minutes) for b in members}
        if len(shared) > 1:  # one compile serves them all only if they compile the same
            msg = f"group {gid}: its builds differ in torch, archs or estimate: {sorted(shared)}"
            raise PlanError(msg)
        reuse = groups.next_python_fraction if groups is not None and len(members) > 1 else 1.0
        made.append(Group(gid, tuple(members), reuse))
    return tuple(made)


def compile_shards(group: Group, split: SplitCompile | None) -> int:
    """How many compile shards a group is split into; 0 for a group that runs as one job."""
    if (
        split is None
        or group.platform not in split.platforms
        or group.minutes <= split.over_minutes
    ):
        return 0
    return max(2, math.ceil(group.minutes / split.shard_minutes))


def job_minutes(group: Group, shards: int, split: SplitCompile | None) -> tuple[float, ...]:
    """(minutes,) of an unsplit group; the K shard jobs' minutes then the link job's (it links,
    repairs and verifies every Python of the group)."""
    if not shards or split is None:
        return (round(group.minutes, 1),)
    each = group.minutes / shards + split.job_overhead_minutes
    link = sum(b.minutes for b in group.builds) * split.link_fraction + split.job_overhead_minutes
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
        have = sorted({getattr(c, axis) for c in cells})
        for w in wanted:
            if not any(fnmatchcase(h, w) for h in have):
                hint = difflib.get_close_matches(w, have, n=1)
                tip = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(f"--{axis} {w!r} matches nothing (have: {', '.join(have)}){tip}")
    if problems:
        raise PlanError("\n".join(problems))


def shard(
    matrix: Matrix, groups: Sequence[Group], max_jobs: int, splits: dict[str, int] | None = None
) -> tuple[Shard, ...]:
    """Split group jobs per platform into even shards of at most `max_jobs` jobs. A split group
    is a shard of its own (`<platform>-split-IofN`): its link job waits for its own compile
    shards only, so they run together and their caches are fresh when it starts (ADR 13)."""
    splits = splits or {}
    out = []
    for platform in sorted({g.platform for g in groups}):
        mine = sorted((g for g in groups if g.platform == platform), key=lambda g: g.id)
        info = matrix.farm.platforms[platform]
        whole = [g for g in mine if g.id not in splits]
        if whole:
            count = math.ceil(len(whole) / max_jobs)
            size = math.ceil(len(whole) / count)
            out += [
                Shard(
                    f"{platform}-{i + 1}of{count}",
                    platform,
                    info.runner,
                    info.container,
                    tuple(whole[i * size : (i + 1) * size]),
                )
                for i in range(count)
            ]
        split = [g for g in mine if g.id in splits]
        out += [
            Shard(
                f"{platform}-split-{i + 1}of{len(split)}",
                platform,
                info.runner,
                info.container,
                (g,),
            )
            for i, g in enumerate(split)
        ]
    return tuple(out)


def make_plan(
    matrix: Matrix,
    expansion: Expansion,
    *,
    filters: Filters = Filters(),
    existing: set[str] | frozenset[str] = frozenset(),
    max_jobs: int | None = None,
    grouped: bool = True,
) -> Plan:
    """Select, skip what exists, group, shard and estimate (`grouped` False: a job per build,
    as before ADR 16)."""
    _check_filters(filters, expansion.cells)
    selected = [b for b in expansion.builds if any(filters.match(c) for c in b.covers)]
    if not selected:
        msg = "the filters together select no build; loosen one of them"
        raise PlanError(msg)
    deferred = {
        b.id: missing
        for b in selected
        if b.id not in existing and (missing := tuple(r for r in b.requires if r not in existing))
    }
    todo = tuple(b for b in selected if b.id not in existing and b.id not in deferred)
    present = tuple(b for b in selected if b.id in existing)
    jobs = matrix.farm.max_jobs_per_shard if max_jobs is None else max_jobs
    if not 1 <= jobs <= MAX_JOBS_PER_MATRIX:
        msg = f"--max-jobs {jobs}: a shard holds 1 to {MAX_JOBS_PER_MATRIX} jobs (GitHub's limit)"
        raise PlanError(msg)
    split = matrix.farm.split_compile
    groups = group(todo, matrix.farm.python_groups if grouped else None)
    # at most one matrix of compile shards per group; what still runs too long warns below
    splits = {g.id: min(k, jobs) for g in groups if (k := compile_shards(g, split))}
    return Plan(
        todo,
        present,
        shard(matrix, groups, jobs, splits),
        filters,
        expansion,
        _long_job_warnings(groups, matrix.farm.hosted_job_limit_minutes, splits, split)
        + _deferred_warnings(selected, deferred),
        splits,
        split,
        deferred,
        groups,
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


def explain(plan: Plan, cell_id: str) -> str:
    """Why one cell is built, covered by another build, already present, filtered or excluded."""
    for ex in plan.expansion.excluded:
        if ex.cell.id == cell_id:
            return f"{cell_id}: excluded by {ex.rule}"
    todo = {b.id for b in plan.todo}
    for b in plan.expansion.builds:
        for c in b.covers:
            if c.id != cell_id:
                continue
            if not plan.filters.match(c):
                return f"{cell_id}: not selected by the filters"
            if b.id in plan.deferred:
                return (
                    f"{cell_id}: deferred: {b.id} imports {', '.join(plan.deferred[b.id])}, "
                    f"not published yet (farm_requires); a run after that builds it"
                )
            if b.id not in todo:
                return f"{cell_id}: already present as {b.id}"
            g = plan.group_of(b.id)
            job = (
                f"; in job {g.id} with {len(g.builds) - 1} other Pythons"
                if len(g.builds) > 1
                else ""
            )
            if len(b.covers) == 1:
                return f"{cell_id}: built by {b.id} (archs {b.archs.torch}{job})"
            return (
                f"{cell_id}: covered by {b.abi} build {b.id} (built with torch {b.torch}, "
                f"Python {b.python}; serves {len(b.covers)} cells{job})"
            )
    known = [c.id for c in plan.expansion.cells] + [e.cell.id for e in plan.expansion.excluded]
    hint = difflib.get_close_matches(cell_id, known, n=1, cutoff=0.8)
    tip = f"; did you mean {hint[0]!r}?" if hint else ""
    msg = (
        f"{cell_id!r} is no cell of this matrix: torch does not ship that combination or the "
        f"package is unknown{tip}"
    )
    raise PlanError(msg)


def table(plan: Plan, limit: int = 40) -> str:
    """Human summary: per-package counts, the builds to make, shards, cost."""
    per: dict[str, list[int]] = {}
    for c in plan.expansion.cells:
        per.setdefault(c.package, [0, 0, 0, 0])[0] += 1
    for b in plan.expansion.builds:
        per[b.package][1] += 1
    for b in plan.present:
        per[b.package][2] += 1
    for b in plan.todo:
        per[b.package][3] += 1
    width = max([18, *map(len, per)])  # the longest package name sets the column
    rows = [f"{'package':<{width}} {'cells':>6} {'builds':>6} {'present':>7} {'to build':>8}"]
    rows += [
        f"{p:<{width}} {n[0]:>6} {n[1]:>6} {n[2]:>7} {n[3]:>8}" for p, n in sorted(per.items())
    ]
    rows.append("")
    rows.append(f"{'build':<62} {'archs':<28} {'covers':>6} {'est min':>7}")
    for b in plan.todo[:limit]:
        rows.append(f"{b.id:<62} {b.archs.torch:<28} {len(b.covers):>6} {b.minutes:>7.0f}")
    if len(plan.todo) > limit:
        rows.append(f"... {len(plan.todo) - limit} more (--format json lists all)")
    rows.append("")
    for s in plan.shards:
        compiles = sum(plan.splits.get(g.id, 0) for g in s.groups)
        rows.append(
            f"shard {s.name}: {len(s.groups)} jobs for {len(s.builds)} builds"
            + (f" (link jobs after {compiles} compile shards)" if compiles else "")
            + f" on {s.runner}"
            + (f" in {s.container}" if s.container else "")
        )
    if plan.splits:
        rows.append(
            f"{len(plan.splits)} groups split into {sum(plan.splits.values())} compile shards "
            f"and a link job each (farm.yaml split_compile)"
        )
    rows.append(
        f"{len(plan.todo)} builds to make in {len(plan.groups)} group jobs and "
        f"{len(plan.shards)} shards, "
        f"{len(plan.present)} present"
        + (f", {len(plan.deferred)} deferred (farm_requires)" if plan.deferred else "")
        + f"; estimated {plan.runner_hours:.1f} runner-hours "
        f"({plan.runner_hours / max(1, len(plan.todo)):.3f} a build), longest "
        f"job {plan.longest_job_minutes:.0f} min"
    )
    return "\n".join(rows)


def to_json(plan: Plan) -> dict[str, object]:
    """Machine-readable plan (versioned): every build with its covered cells and group job,
    and every group job with its builds and predicted minutes."""
    group_of = {b.id: g.id for g in plan.groups for b in g.builds}
    return {
        "version": 1,
        "runner_hours": round(plan.runner_hours, 2),
        "longest_job_minutes": round(plan.longest_job_minutes, 1),
        "warnings": list(plan.warnings),
        "deferred": {k: list(v) for k, v in plan.deferred.items()},
        "builds": [
            {
                "id": b.id,
                "cuda": b.cuda,
                "python": b.python,
                "platform": b.platform,
                "minutes": b.minutes,
                "group": group_of[b.id],
                "package": b.package,
                "torch": b.torch,
                "archs": b.archs.torch,
                "label": b.label,
                "abi": b.abi,
                "covers": [c.id for c in b.covers],
            }
            for b in plan.todo
        ],
        "groups": [
            {
                "id": g.id,
                "builds": [b.id for b in g.builds],
                "minutes": round(g.minutes, 1),
                "compile_shards": plan.splits.get(g.id, 0),
                "job_minutes": list(plan.job_minutes(g)),
            }
            for g in plan.groups
        ],
        "present": [b.id for b in plan.present],
        "shards": [
            {"name": s.name, "platform": s.platform, "jobs": len(s.groups)} for s in plan.shards
        ],
    }
