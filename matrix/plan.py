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

from wheelfarm.core import jsonread
from wheelfarm.core.errors import PlanError, UsageError
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix.expand import Build, Cell, Expansion
from wheelfarm.matrix.model import Matrix, SplitCompile

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
class Shard:
    """At most `max_jobs` builds of one platform: one GitHub matrix."""

    name: str
    platform: str
    runner: str
    container: str
    builds: tuple[Build, ...]


@dataclass(frozen=True)
class Plan:
    """What to build now, and why everything else is not built."""

    todo: tuple[Build, ...]
    present: tuple[Build, ...]
    shards: tuple[Shard, ...]
    filters: Filters
    expansion: Expansion
    warnings: tuple[str, ...] = field(default=())
    splits: dict[str, int] = field(default_factory=dict)  # build id -> its compile shards
    split: SplitCompile | None = None
    # build id -> the farm_requires builds it waits for (not yet published)
    deferred: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def job_minutes(self, build: Build) -> tuple[float, ...]:
        """Predicted minutes of each job the build runs: one, or its shards and its link."""
        return job_minutes(build, self.splits.get(build.id, 0), self.split)

    @property
    def runner_hours(self) -> float:
        return sum(sum(self.job_minutes(b)) for b in self.todo) / 60

    @property
    def longest_job_minutes(self) -> float:
        return max((max(self.job_minutes(b)) for b in self.todo), default=0.0)


def compile_shards(build: Build, split: SplitCompile | None) -> int:
    """How many compile shards a build is split into; 0 for a build that runs as one job."""
    if (
        split is None
        or build.platform not in split.platforms
        or build.minutes <= split.over_minutes
    ):
        return 0
    return max(2, math.ceil(build.minutes / split.shard_minutes))


def job_minutes(build: Build, shards: int, split: SplitCompile | None) -> tuple[float, ...]:
    """(minutes,) of an unsplit build; the K shard jobs' minutes then the link job's."""
    if not shards or split is None:
        return (build.minutes,)
    each = build.minutes / shards + split.job_overhead_minutes
    link = build.minutes * split.link_fraction + split.job_overhead_minutes
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
    matrix: Matrix, todo: Sequence[Build], max_jobs: int, splits: dict[str, int] | None = None
) -> tuple[Shard, ...]:
    """Split builds per platform into even shards of at most `max_jobs` jobs. A split build is a
    shard of its own (`<platform>-split-IofN`): its link job waits for its own compile shards
    only, so they run together and their caches are fresh when it starts (ADR 13)."""
    splits = splits or {}
    out = []
    for platform in sorted({b.platform for b in todo}):
        mine = sorted((b for b in todo if b.platform == platform), key=lambda b: b.id)
        info = matrix.farm.platforms[platform]
        whole = [b for b in mine if b.id not in splits]
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
        split = [b for b in mine if b.id in splits]
        out += [
            Shard(
                f"{platform}-split-{i + 1}of{len(split)}",
                platform,
                info.runner,
                info.container,
                (b,),
            )
            for i, b in enumerate(split)
        ]
    return tuple(out)


def make_plan(
    matrix: Matrix,
    expansion: Expansion,
    *,
    filters: Filters = Filters(),
    existing: set[str] | frozenset[str] = frozenset(),
    max_jobs: int | None = None,
) -> Plan:
    """Select, skip what exists, shard and estimate."""
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
    # at most one matrix of compile shards per build; what still runs too long warns below
    splits = {b.id: min(k, jobs) for b in todo if (k := compile_shards(b, split))}
    return Plan(
        todo,
        present,
        shard(matrix, todo, jobs, splits),
        filters,
        expansion,
        _long_job_warnings(todo, matrix.farm.hosted_job_limit_minutes, splits, split)
        + _deferred_warnings(selected, deferred),
        splits,
        split,
        deferred,
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
    todo: Sequence[Build], limit: int, splits: dict[str, int], split: SplitCompile | None
) -> tuple[str, ...]:
    """One line per package whose builds have a job predicted past the hosted-job limit."""
    over: dict[str, list[float]] = {}
    example: dict[str, str] = {}
    for b in todo:
        longest = max(job_minutes(b, splits.get(b.id, 0), split))
        if longest > limit:
            over.setdefault(b.package, []).append(longest)
            example.setdefault(b.package, b.id)
    return tuple(
        f"{pkg}: {len(ms)} builds predicted up to {max(ms):.0f} min > {limit} "
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
            if len(b.covers) == 1:
                return f"{cell_id}: built by {b.id} (archs {b.archs.torch})"
            return (
                f"{cell_id}: covered by {b.abi} build {b.id} (built with torch {b.torch}, "
                f"Python {b.python}; serves {len(b.covers)} cells)"
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
        compiles = sum(plan.splits.get(b.id, 0) for b in s.builds)
        rows.append(
            f"shard {s.name}: {len(s.builds)} jobs"
            + (f" (link jobs after {compiles} compile shards)" if compiles else "")
            + f" on {s.runner}"
            + (f" in {s.container}" if s.container else "")
        )
    if plan.splits:
        rows.append(
            f"{len(plan.splits)} builds split into {sum(plan.splits.values())} compile shards "
            f"and a link job each (farm.yaml split_compile)"
        )
    rows.append(
        f"{len(plan.todo)} builds to make in {len(plan.shards)} shards, "
        f"{len(plan.present)} present"
        + (f", {len(plan.deferred)} deferred (farm_requires)" if plan.deferred else "")
        + f"; estimated {plan.runner_hours:.1f} runner-hours, longest "
        f"job {plan.longest_job_minutes:.0f} min"
    )
    return "\n".join(rows)


def to_json(plan: Plan) -> dict[str, object]:
    """Machine-readable plan (versioned): every build with its covered cells."""
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
                "compile_shards": plan.splits.get(b.id, 0),
                "job_minutes": list(plan.job_minutes(b)),
                "package": b.package,
                "torch": b.torch,
                "archs": b.archs.torch,
                "label": b.label,
                "abi": b.abi,
                "covers": [c.id for c in b.covers],
            }
            for b in plan.todo
        ],
        "present": [b.id for b in plan.present],
        "shards": [
            {"name": s.name, "platform": s.platform, "jobs": len(s.builds)} for s in plan.shards
        ],
    }
