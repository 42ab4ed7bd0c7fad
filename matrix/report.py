"""What a plan says: why a cell is built where it is (`plan --explain`), its table and its
JSON (`plan --format json`), and when each tier is done."""

from __future__ import annotations

import difflib

from wheelfarm.core.errors import PlanError
from wheelfarm.matrix import queue
from wheelfarm.matrix.expand import Build, Cell
from wheelfarm.matrix.plan import Group, Plan, Shard


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
