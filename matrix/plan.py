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

    def match(self, cell: Cell) -> bool:
        return all(
            not wanted or any(fnmatchcase(getattr(cell, axis), w) for w in wanted)
            for axis, wanted in self.axes()
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

    @property
    def compiles(self) -> dict[str, float]:
        """Each compile's own estimate (one a Python), by compile id, oldest Python first."""
        return {b.compile_id: b.minutes for b in self.builds}

    @property
    def compile_minutes(self) -> float:
        """The compiles' estimate: the first one's whole, the other Pythons' `reuse` share."""
        first, *rest = self.compiles.values()
        return first + self.reuse * sum(rest)

    @property
    def variant_minutes(self) -> float:
        """`variant` for each wheel relabelled from another minor's compile."""
        return self.variant * (len(self.builds) - len(self.compiles))

    @property
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
        members.sort(key=lambda b: (Version(b.python), b.variants.index(b.cuda)))
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
        have = sorted({getattr(c, axis) for c in cells})
        for w in wanted:
            if not any(fnmatchcase(h, w) for h in have):
                hint = difflib.get_close_matches(w, have, n=1)
                tip = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(f"--{axis} {w!r} matches nothing (have: {', '.join(have)}){tip}")
    if problems:
        raise PlanError("\n".join(problems))


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
    """Select, skip what exists, group, order, cut into lane shards and estimate (`grouped`
    False: a job per build, as before ADR 16; `one_run` False: the whole pass, with no run's
    days cut off)."""
    _check_filters(filters, expansion.cells)
    selected = [b for b in expansion.builds if any(filters.match(c) for c in b.covers)]
    if not selected:
        msg = "the filters together select no build; loosen one of them"
        raise PlanError(msg)
    missing = {b.id for b in selected if b.id not in existing}
    # a consumer builds in this run after every producer group of this run it imports (queue.py)
    waits = {b.id: tuple(r for r in b.requires if r not in existing) for b in selected}
    deferred = {i: w for i, w in waits.items() if i in missing and any(r not in missing for r in w)}
    jobs = matrix.farm.max_jobs_per_shard if max_jobs is None else max_jobs
    if not 1 <= jobs <= MAX_JOBS_PER_MATRIX:
        msg = f"--max-jobs {jobs}: a shard holds 1 to {MAX_JOBS_PER_MATRIX} jobs (GitHub's limit)"
        raise PlanError(msg)
    split = matrix.farm.split_compile
    candidates = group(
        [b for b in selected if b.id in missing and b.id not in deferred],
        matrix.farm.python_groups if grouped else None,
        variant_minutes(matrix),
    )
    while held := {g.id for g in _waiting(candidates, waits, existing)}:
        deferred.update({b.id: waits[b.id] for g in candidates if g.id in held for b in g.builds})
        candidates = tuple(g for g in candidates if g.id not in held)
    # at most one matrix of compile shards per group; what still runs too long warns below
    splits = {g.id: min(k, jobs) for g in candidates if (k := compile_shards(g, split))}

    def minutes(g: Group) -> float:
        return sum(job_minutes(g, splits.get(g.id, 0), split))

    def parts(g: Group) -> tuple[float, ...]:
        return job_minutes(g, splits[g.id], split)[:-1] if g.id in splits else ()

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

    # compile shards in parallel lanes shorten a split group's chain, but the lanes then wait
    # at the link's barrier: spread only where the first tier ends sooner (a wide pool)
    where = placed(spread=True)
    if where.spread.parts and _finish(narrow := placed(spread=False)) < _finish(where):
        where = narrow
    first = where.spread
    cut = [(tuple(p), tuple(f)) for p, f in zip(first.parts, first.fill, strict=True)]
    cut += [((), tuple(s)) for s in where.shards]
    shards = tuple(Shard(f"{i + 1}of{len(cut)}", f, p) for i, (p, f) in enumerate(cut))
    groups = tuple(g for s in shards for g in s.groups)
    later, placed = where.later, where.placed
    todo = tuple(b for g in groups for b in g.builds)
    present = tuple(b for b in selected if b.id in existing)
    return Plan(
        todo,
        present,
        shards,
        filters,
        expansion,
        _long_job_warnings(groups, matrix.farm.hosted_job_limit_minutes, splits, split)
        + _deferred_warnings(selected, deferred)
        + _later_warnings(later, placed, matrix),
        {g.id: splits[g.id] for g in groups if g.id in splits},
        split,
        deferred,
        groups,
        placed,
        tuple(later),
        len(first.parts),
        matrix.farm.pool.lanes,
    )


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


def explain(plan: Plan, cell_id: str) -> str:
    """Why one cell (or the build a build id names) is built (and where it stands in the
    queue), covered by another build, already present, deferred, left to the next run,
    filtered or excluded."""
    for ex in plan.expansion.excluded:
        if ex.cell.id == cell_id:
            return f"{cell_id}: excluded by {ex.rule}"
    build = plan.expansion.by_id.get(cell_id)  # a build id: the cell it was named after
    if build is not None:
        return f"{cell_id}: {_why(plan, build, build.covers[0])}"
    for b in plan.expansion.builds:
        if any(c.id == cell_id for c in b.covers):
            return f"{cell_id}: {_why(plan, b, next(c for c in b.covers if c.id == cell_id))}"
    known = [c.id for c in plan.expansion.cells] + [e.cell.id for e in plan.expansion.excluded]
    hint = difflib.get_close_matches(cell_id, known, n=1, cutoff=0.8)
    tip = f"; did you mean {hint[0]!r}?" if hint else ""
    msg = (
        f"{cell_id!r} is no cell of this matrix: torch does not ship that combination or the "
        f"package is unknown{tip}"
    )
    raise PlanError(msg)


def _why(plan: Plan, b: Build, cell: Cell) -> str:
    """What the plan does with the build that serves a cell."""
    if not plan.filters.match(cell):
        return "not selected by the filters"
    if b.id in plan.deferred:
        return (
            f"deferred: {b.id} imports {', '.join(plan.deferred[b.id])}, not published yet "
            f"(farm_requires); a run after that builds it"
        )
    later = next((g for g in plan.later if any(x.id == b.id for x in g.builds)), None)
    if later is not None:
        where = plan.placed[later.id]
        return (
            f"tier {where.tier}, place {where.place} of the queue: past this run's days "
            f"(farm.yaml pool.run_days), the next farm run builds {b.id}"
        )
    if not any(x.id == b.id for x in plan.todo):
        return f"already present as {b.id}"
    job = _compiled(b) + _queued(plan, plan.group_of(b.id))
    if len(b.covers) == 1:
        return f"built by {b.id} (archs {b.archs.torch}{job})"
    return (
        f"covered by {b.abi} build {b.id} (built with torch {b.torch}, Python {b.python}; "
        f"serves {len(b.covers)} cells{job})"
    )


def _compiled(b: Build) -> str:
    """'; served by the cu130 compile ...' where one compile serves several minors (ADR 19)."""
    if len(b.variants) == 1:
        return ""
    others = ", ".join(v for v in b.variants if v != b.cuda)
    if b.compile_cuda == b.cuda:
        return f"; its compile {b.compile_id} (CUDA {b.compile_cuda}) also serves {others}"
    return (
        f"; served by the {b.compile_cuda} compile {b.compile_id} (one per CUDA major, "
        f"ADR 19), relabelled +{b.label} and verified against {b.cuda}'s torch"
    )


def _queued(plan: Plan, g: Group) -> str:
    """'; in job G with N other Pythons; tier T, place P of Q in the queue, ...'."""
    where = plan.placed[g.id]
    others = f"; in job {g.id} with {len(g.builds) - 1} other wheels" if len(g.builds) > 1 else ""
    after = f"; after {', '.join(where.after)}, whose wheels it imports" if where.after else ""
    return (
        f"{others}; tier {where.tier}, place {where.place} of {len(plan.groups)} in the queue, "
        f"shard {where.shard}, predicted to start {queue.hours(where.starts)} and be published "
        f"{queue.hours(where.ends)} after the run starts{after}"
    )


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
    rows += [_compile_lane(plan, s) for s in plan.shards[: plan.compile_lanes]]
    for s in plan.shards[plan.compile_lanes :]:
        compiles = sum(plan.splits.get(g.id, 0) for g in s.groups)
        first = plan.placed[s.groups[0].id]
        platforms = sorted({g.platform for g in s.groups})
        rows.append(
            f"shard {s.name}: {len(s.groups)} jobs for {len(s.builds)} builds"
            + (f" (link jobs after {compiles} compile shards)" if compiles else "")
            + f" on {', '.join(platforms)}, tier {first.tier}, predicted "
            f"{queue.hours(first.starts)} to {queue.hours(first.ends)}"
        )
    for tier, done in tier_hours(plan).items():
        rows.append(f"tier {tier}: every wheel published {queue.hours(done)} after the start")
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


def _compile_lane(plan: Plan, s: Shard) -> str:
    """'shard 1of35: compile lane: 2 compile shards (...), then 3 jobs for 9 builds, ...'."""
    names = ", ".join(f"{g.id} {i + 1}/{plan.splits[g.id]}" for g, i in s.parts)
    fill = f", then {len(s.groups)} jobs for {len(s.builds)} builds" if s.groups else ""
    ends = queue.hours(max((plan.placed[g.id].ends for g in s.groups), default=0.0))
    return (
        f"shard {s.name}: compile lane: {len(s.parts)} compile shards ({names}){fill}; "
        f"the shards after the compile lanes start when all end"
        + (f" (its jobs published {ends} after the start)" if s.groups else "")
    )


def tier_hours(plan: Plan) -> dict[int, float]:
    """Each tier's predicted minutes from the run's start until its last shard ends."""
    out: dict[int, float] = {}
    for g in plan.groups:
        where = plan.placed[g.id]
        out[where.tier] = max(out.get(where.tier, 0.0), where.ends)
    return dict(sorted(out.items()))


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
            {
                "name": s.name,
                "jobs": len(s.groups) + len(s.parts),
                "tier": min(plan.placed[g.id].tier for g in (*s.groups, *(g for g, _ in s.parts))),
                "compile_lane": n < plan.compile_lanes,
            }
            for n, s in enumerate(plan.shards)
        ],
    }
