"""matrix/queue.py: the tiers, the order a run builds in, its lane shards and the run's cut
(docs/adr/0017-one-pool.md)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.roots import REPO
from wheelfarm.matrix import queue
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix, TierRule
from wheelfarm.matrix.plan import Filters, Group, job_minutes, make_plan
from wheelfarm.matrix.report import explain, tier_hours

MATRIX = load_matrix(REPO)
EXPANSION = expand(MATRIX)


def _pool(matrix: Matrix, **changes: object) -> Matrix:
    pool = dataclasses.replace(matrix.farm.pool, **changes)
    return dataclasses.replace(matrix, farm=dataclasses.replace(matrix.farm, pool=pool))


def test_tier_one_is_the_newest_torch_on_pypis_cuda_on_every_platform() -> None:
    tiers = {
        (b.platform, b.cuda, b.torch_minor): queue.tier_of(b, MATRIX)
        for b in EXPANSION.builds
        if b.package == "flash-attn"
    }
    assert tiers[("linux_x86_64", "cu132", "2.15")] == 1  # torch.yaml: PyPI's 2.15 is cu132
    assert tiers[("win_amd64", "cu132", "2.15")] == 1  # Windows takes Linux's PyPI CUDA
    assert tiers[("linux_x86_64", "cu130", "2.15")] == 2  # the newest minor's other CUDA
    assert tiers[("linux_x86_64", "cu130", "2.14")] == 2  # the previous minor's PyPI CUDA
    assert tiers[("linux_x86_64", "cu132", "2.14")] == 3
    assert tiers[("linux_x86_64", "cu126", "2.9")] == 3


def test_a_glob_rule_and_no_tiers_at_all() -> None:
    glob = _pool(MATRIX, tiers=((TierRule(torch="2.1?", cuda="cu12*"),),))
    build = next(b for b in EXPANSION.builds if b.torch_minor == "2.12" and b.cuda == "cu126")
    assert queue.tier_of(build, glob) == 1
    assert queue.tier_of(build, _pool(MATRIX, tiers=())) == 1  # the rest is tier 1 then


def test_the_run_builds_tier_one_first_the_longest_chain_first_and_newest_after() -> None:
    plan = make_plan(MATRIX, EXPANSION, one_run=False)
    ranked = sorted(plan.groups, key=lambda g: plan.placed[g.id].place)
    tiers = [plan.placed[g.id].tier for g in ranked]
    assert tiers == sorted(tiers)  # no tier-2 group before a tier-1 one
    first = [g for g in ranked if plan.placed[g.id].tier == 1]
    chains = [sum(plan.job_minutes(g)) for g in first if not plan.placed[g.id].after]
    assert chains[0] == max(chains)  # the longest chain starts first
    # the queue's order; the runs' lanes take it in turn (a run's last hours and the last run
    # are packed: test_a_run_fills_its_lanes..., test_the_last_run_takes...)
    ordered = queue.order(
        plan.groups,
        MATRIX,
        lambda g: sum(plan.job_minutes(g)),
        queue.consumers(plan.groups),
        queue.group_tiers(plan.groups, MATRIX),
    )
    rest = [g.builds[0].torch_minor for g in ordered if plan.placed[g.id].tier == 3]
    minors = [tuple(map(int, m.split("."))) for m in rest if m]  # torch-free builds: none
    assert minors == sorted(minors, reverse=True)  # past the tiers: the newest torch first
    hours = tier_hours(plan)
    assert hours[1] < 24 * 60 and hours[1] <= hours[2] <= hours[3]


def test_a_run_keeps_what_its_lanes_finish_in_its_days_and_explains_the_rest() -> None:
    short = _pool(MATRIX, run_days=1.0)
    plan = make_plan(short, expand(short))
    assert plan.later and plan.shards
    assert max(plan.placed[g.id].ends for g in plan.groups) <= 24 * 60
    assert any("left to the next farm run" in w for w in plan.warnings)
    later = plan.later[-1].builds[0]
    cell = later.covers[0]
    assert "the next farm run builds" in explain(plan, cell.id)
    whole = make_plan(short, expand(short), one_run=False)
    assert not whole.later and len(whole.todo) == len(plan.todo) + sum(
        len(g.builds) for g in plan.later
    )


def test_a_new_torch_minor_alone_fits_a_day() -> None:
    """The common case once a farm runs: the watcher's pull request adds a minor."""
    plan = make_plan(MATRIX, EXPANSION, filters=Filters(torch=("2.15*",)))
    assert not plan.later
    # a consumer runs in its producers' shard, after all of them (o_voxel after three): none waits
    assert not plan.deferred
    assert any(len(plan.placed[g.id].after) > 1 for g in plan.groups)
    # tier 1 (PyPI's CUDA, every package, Python and platform) within a day; with 45 packages
    # the minor's other CUDAs (tier 2) take longer: ADR 17 has the numbers
    assert tier_hours(plan)[1] < 24 * 60


def test_a_chain_of_producers_and_consumers_stays_whole_in_one_shard_in_order() -> None:
    """Consumers of several producers, sharing one: one chain, each producer before every
    consumer of its wheels, in one shard where the shard's hours and jobs would part them."""
    template = next(b for b in EXPANSION.builds if not b.requires)

    def made(name: str, *producers: str) -> Group:
        ids = tuple(dataclasses.replace(template, distribution=p).id for p in producers)
        return Group(name, (dataclasses.replace(template, distribution=name, requires=ids),))

    groups = [made("c1", "p1", "p2"), made("x"), made("p1"), made("c2", "p2", "p3")]
    groups += [made("p2"), made("p3")]
    after = queue.consumers(groups)
    assert after == {"c1": ("p1", "p2"), "c2": ("p2", "p3")}
    tiers = dict.fromkeys((g.id for g in groups), 1)
    ordered = queue.order(groups, MATRIX, lambda _: 60.0, after, tiers)
    assert [g.id for g in ordered] == ["p1", "p2", "p3", "c1", "c2", "x"]  # the longest first
    chain = queue.chains(groups, after)
    pool = MATRIX.farm.pool
    shards = queue.cut_shards(ordered, lambda _: 60.0, lambda _: 1, pool, 1, chain, tiers)
    assert [[g.id for g in s] for s in shards] == [["p1", "p2", "p3", "c1", "c2"], ["x"]]


@given(
    st.lists(st.floats(min_value=0, max_value=1e4), max_size=60),
    st.integers(1, 20),
    st.floats(min_value=1, max_value=3e4),
)
def test_lanes_take_shards_in_order_as_each_comes_free_in_runs_of_the_limit(
    durations: list[float], lanes: int, limit: float
) -> None:
    slots = queue.simulate(durations, lanes, limit)
    assert [s.end - s.start for s in slots] == pytest.approx(durations)
    runs = sorted({s.run for s in slots})
    assert runs == list(range(len(runs)))
    begins = 0.0
    for run in runs:
        mine = [s for s in slots if s.run == run]
        starts = [s.start for s in mine]
        assert starts == sorted(starts)  # in order
        assert min(starts) == pytest.approx(begins)  # the next run starts as this one ends
        for t in starts:  # never more lanes busy than there are
            assert sum(1 for s in mine if s.start <= t < s.end) <= lanes
        # only a run's first shard may pass its limit (or nothing would ever be built)
        assert all(s.end <= begins + limit + 1e-6 for s in mine[1:])
        begins = max(s.end for s in mine)
    assert queue.simulate(durations, lanes) == [
        queue.Slot(s, e, 0) for s, e in _in_order(durations, lanes)
    ]


def _in_order(durations: list[float], lanes: int) -> list[tuple[float, float]]:
    """Lanes without a limit, the plain way: each shard on the lane that is free first."""
    free = [0.0] * lanes
    out = []
    for d in durations:
        lane = free.index(min(free))
        out.append((free[lane], free[lane] + d))
        free[lane] += d
    return out


def test_a_run_fills_its_lanes_with_later_shards_that_end_in_time() -> None:
    """A long shard that would end past the run's limit waits for the next run; a later short
    one still takes the free lane, so the lane does not idle until the run ends."""
    slots = queue.simulate([10, 10, 30, 5], lanes=2, limit=20)
    assert [s.run for s in slots] == [0, 0, 1, 0]
    assert slots[3].start == 10  # the lane freed at 10 takes the short one
    assert slots[2].start == 15  # the next run starts as this one ends


def test_the_last_run_takes_its_longest_shards_first() -> None:
    """The whole pass's last run holds all that is left: longest first, its lanes end close
    together rather than on one long shard started last."""
    whole = make_plan(MATRIX, EXPANSION, one_run=False)
    slots: dict[int, queue.Placed] = {p.shard: p for p in whole.placed.values()}
    shards = [slots[n] for n in sorted(slots)]
    # the last run: the longest suffix of shards that all start once every earlier one has ended
    first = max(
        k
        for k in range(1, len(shards))
        if min(p.starts for p in shards[k:]) >= max(p.ends for p in shards[:k])
    )
    final = [p for p in shards[first:] if p.tier == shards[-1].tier]
    lengths = [p.ends - p.starts for p in final]
    assert lengths == sorted(lengths, reverse=True)
    ends = [p.ends for p in shards[first:]]  # the run's lanes end within its longest shard
    assert max(ends) - sorted(ends)[-min(len(ends), MATRIX.farm.pool.lanes)] < max(lengths)


def test_compile_shards_are_spread_only_where_the_first_tier_ends_sooner() -> None:
    """The plan's tier 1 ends no later than with each split group's shards kept in its own lane
    (on 19 lanes with the shipped catalog: 16.3 h spread against 17.5 h kept)."""
    plan = make_plan(_pool(MATRIX, lanes=19), EXPANSION, filters=Filters(torch=("2.15*",)))
    split = MATRIX.farm.split_compile
    kept = queue.place(
        plan.groups,
        MATRIX,
        lambda g: sum(job_minutes(g, plan.splits.get(g.id, 0), split)),
        lambda g: plan.splits.get(g.id, 0) + 1,
        MATRIX.farm.max_jobs_per_shard,
    )
    narrow = max(p.ends for p in kept.placed.values() if p.tier == 1)
    assert tier_hours(plan)[1] <= narrow


@pytest.mark.parametrize("lanes", [40, 60])
def test_a_split_groups_compile_shards_run_in_parallel_lanes_before_its_link(lanes: int) -> None:
    """flash-attn's torch 2.15 group on a wide pool: its five compile shards each take a
    compile lane at the run's start, and its link job's shard starts when the compile lanes
    end, so the chain is about one compile shard and the link (not five shards in turn)."""
    matrix = _pool(MATRIX, lanes=lanes)
    plan = make_plan(matrix, EXPANSION, filters=Filters(torch=("2.15*",)))
    assert 0 < plan.compile_lanes <= lanes
    lanes_first = plan.shards[: plan.compile_lanes]
    for g in plan.groups:
        if g.id.startswith("flash-attn-2") and plan.splits.get(g.id) == 5:
            *parts, link = plan.job_minutes(g)
            homes = [s.name for s in lanes_first for p, _ in s.parts if p.id == g.id]
            assert len(homes) == len(set(homes)) == 5  # a lane each, at once
            overhead = 2 * queue.SHARD_OVERHEAD_MINUTES
            assert plan.placed[g.id].ends <= max(parts) + link + overhead + 1
    # every lane still busy: tier 1 ends within its work spread over the lanes and one shard
    work = sum(sum(plan.job_minutes(g)) for g in plan.groups) / lanes
    assert tier_hours(plan)[1] <= work + matrix.farm.pool.shard_hours * 60
