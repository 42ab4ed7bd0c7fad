from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import (
    FACTS,
    MATRIX,
    ONLY_214,
    TABLE,
    USER,
    MakeRoot,
    _matrix,
    _root,
    _root_farm_requires,
    _root_two_producers,
)
from wheelfarm.core.errors import ConfigError, PlanError
from wheelfarm.core.platforms import os_of
from wheelfarm.core.root import FarmRoot
from wheelfarm.github.actions import (
    batches,
    plan_document,
)
from wheelfarm.matrix import plan as plan_module
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, Group, existing_build_ids, make_plan
from wheelfarm.matrix.report import explain, table, to_json
from wheelfarm.matrix.toolkits import toolkit, unpinned


def test_incremental_skip_from_wheelhouse_and_manifest(tmp_path: Path) -> None:
    m = load_matrix(REPO)
    e = expand(m)
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    (wheels / "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-manylinux_2_34_x86_64.whl").touch()
    filters = Filters(package=("wheelfarm-demo",), torch=("2.14",), platform=("linux_x86_64",))
    plan = make_plan(m, e, filters=filters, existing=existing_build_ids(wheels))
    assert [b.id for b in plan.present] == [
        "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    ]
    assert "cp312" not in {b.python_tag for b in plan.todo if b.cuda == "cu130"}
    manifest = tmp_path / "packages.json"
    manifest.write_text(
        json.dumps(
            {
                "version": 1,
                "wheels": [
                    {
                        "filename": "wheelfarm_demo-0.1.0+cu130torch2.14-cp313-cp313-manylinux_2_28_x86_64.whl"
                    }
                ],
            }
        )
    )
    plan2 = make_plan(m, e, filters=filters, existing=existing_build_ids(manifest))
    assert [b.python for b in plan2.present] == ["3.13"]
    text = explain(plan2, "wheelfarm-demo-0.1.0-cu130-torch2.14-cp313-linux_x86_64")
    assert "already present" in text


def test_shards_are_lanes_of_any_platform_under_the_job_limit() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m), max_jobs=256)  # one run: the whole pass is several
    assert len(plan.shards) <= 256  # farm.yml's matrix of shards
    assert {g.platform for s in plan.shards for g in s.groups} == set(m.farm.platforms)
    assert all(
        len(s.groups) + sum(plan.splits.get(g.id, 0) for g in s.groups) <= 512 for s in plan.shards
    )
    assert sum(len(s.builds) for s in plan.shards) == len(plan.todo)
    assert [s.name for s in plan.shards[:2]] == [f"1of{len(plan.shards)}", f"2of{len(plan.shards)}"]
    causal = Filters(package=("causal-conv1d",))
    small = make_plan(m, expand(m), filters=causal, max_jobs=3, one_run=False)
    assert max(len(s.groups) for s in small.shards) <= 3
    with pytest.raises(PlanError, match="over GitHub's 256 matrix entries: raise max_jobs_per"):
        make_plan(m, expand(m), max_jobs=1, one_run=False)


def test_an_output_past_64_kb_is_refused_in_the_plan_job() -> None:
    m = load_matrix(REPO)
    pool = dataclasses.replace(m.farm.pool, shard_hours=10_000.0)  # one shard of 256 jobs
    m = dataclasses.replace(m, farm=dataclasses.replace(m.farm, pool=pool))
    linux = Filters(platform=("linux_x86_64",))
    plan = make_plan(m, expand(m), filters=linux, max_jobs=256, one_run=False)
    with pytest.raises(
        PlanError, match=r"output 'include' is [\d,]+ bytes .* lower max_jobs_per_shard"
    ):
        plan_document(
            plan, m.farm.hosted_job_limit_minutes, m.farm.publish_batch_wheels, m.farm.platforms
        )


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (Filters(cuda=("cu131",)), "--cuda 'cu131' matches nothing.*did you mean 'cu132'"),
        (
            Filters(package=("flash_atn",)),
            "--package 'flash-atn' matches nothing.*did you mean 'flash-attn'",
        ),
        (
            Filters(package=("wheelfarm-demo",), cuda=("cu126",)),
            "the filters together select no build",
        ),
        (Filters(version=("9.9.9",)), "--version '9.9.9' matches nothing"),
    ],
)
def test_filter_matching_nothing_is_an_error(filters: Filters, message: str) -> None:
    m = load_matrix(REPO)
    with pytest.raises(PlanError, match=message):
        make_plan(m, expand(m), filters=filters)


def test_explain_each_reason() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m))
    assert "excluded by flash-attn.yaml:" in explain(
        plan, "flash-attn-2.8.3.post2-cu126-torch2.14-cp312-linux_aarch64"
    )
    assert "constraints.cuda >=13.0" in explain(
        plan, "wheelfarm-demo-0.1.0-cu126-torch2.14-cp312-linux_x86_64"
    )
    assert "built by" in explain(plan, "causal-conv1d-1.7.0-cu130-torch2.14-cp312-linux_x86_64")
    with pytest.raises(PlanError, match="no cell of this matrix"):
        explain(plan, "causal-conv1d-1.7.0-cu130-torch2.8-cp312-linux_x86_64")


def test_explain_names_the_collapsed_build(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(matrix_dir, "{kind: abi3}")
    plan = make_plan(m, expand(m))
    text = explain(plan, "pkg-1.0.0-cu130-torch2.14-cp313-linux_x86_64")
    assert text.startswith(
        "pkg-1.0.0-cu130-torch2.14-cp313-linux_x86_64: covered by abi3 build "
        "pkg-1.0.0-cu130torch2.14-cp310-abi3-linux_x86_64 (built with torch 2.14.1, "
        "Python 3.10; serves 5 cells; tier 1, place 1 of 1 in the queue, shard 1, predicted"
    )


def test_the_pythons_of_a_group_share_one_job_and_count_once(
    matrix_dir: Callable[..., Path],
) -> None:
    """Five Pythons of one package version, CUDA, torch and platform: one group job costing the
    first build whole and next_python_fraction of each other; a plan with the 3.12 wheel
    released groups the four missing Pythons only (ADR 16)."""
    m = _matrix(matrix_dir, "{kind: cpython}", extra=ONLY_214 + "build_minutes_per_arch: 10\n")
    groups = m.farm.python_groups
    assert groups is not None
    plan = make_plan(m, expand(m))
    (g,) = plan.groups
    assert g.id == "pkg-1.0.0-cu130torch2.14-linux_x86_64"
    assert [b.python for b in g.builds] == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    each = g.builds[0].minutes
    assert plan.job_minutes(g) == (round(each * (1 + 4 * groups.next_python_fraction), 1),)
    assert plan.runner_hours < len(plan.todo) * each / 60
    text = explain(plan, "pkg-1.0.0-cu130-torch2.14-cp312-linux_x86_64")
    assert f"in job {g.id} with 4 other wheels; tier 1, place 1 of 1 in the queue" in text
    missing = make_plan(m, expand(m), existing={"pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64"})
    (left,) = missing.groups
    assert left.id == g.id and [b.python for b in left.builds] == ["3.10", "3.11", "3.13", "3.14"]
    apart = make_plan(m, expand(m), grouped=False)
    assert [len(x.builds) for x in apart.groups] == [1] * 5
    assert apart.runner_hours == pytest.approx(5 * each / 60)


def test_a_publish_batch_holds_whole_groups() -> None:
    def g(n: int) -> Group:
        b = expand(load_matrix(REPO)).builds[0]
        return Group(f"g{n}", (b,) * n)

    assert batches([g(5), g(5), g(5), g(5), g(20), g(1)], 16) == [0, 0, 0, 1, 2, 3]


def test_every_planned_job_can_run_on_its_runner() -> None:
    plan = make_plan(MATRIX, expand(MATRIX))
    for build in plan.todo:
        info = MATRIX.farm.platforms[build.platform]
        tk = TABLE.toolkits[build.cuda]
        if os_of(build.platform) == "linux":
            assert build.python in FACTS.images[unpinned(info.container)].pythons, build.id
            assert tk.gcc_toolset is not None, build.id
        else:
            assert build.python in FACTS.runners[info.runner].pythons, build.id
            assert tk.msvc_toolset is not None, build.id


def test_only_cp38_on_manylinux_is_left_out_and_explained() -> None:
    expansion = expand(MATRIX)
    by_runner = [e for e in expansion.excluded if e.rule.startswith("its runner:")]
    families = Counter((e.cell.python, e.cell.platform) for e in by_runner)
    # torch 2.4's cp38 on x86_64, for every package that takes it
    assert set(families) == {("3.8", "linux_x86_64")}
    assert {(e.cell.torch, e.cell.cuda) for e in by_runner} == {
        ("2.4", "cu118"), ("2.4", "cu121"), ("2.4", "cu124")
    }  # fmt: skip
    assert families[("3.8", "linux_x86_64")] >= 3  # each package that takes it, per CUDA
    plan = make_plan(MATRIX, expansion, one_run=False)
    cell = "torch-scatter-2.1.2-cu121-torch2.4-cp38-linux_x86_64"
    assert explain(plan, cell) == (
        f"{cell}: excluded by its runner: the linux_x86_64 image "
        "quay.io/pypa/manylinux_2_28_x86_64:2026.05.07-2 has no CPython 3.8 "
        "(has 3.9, 3.10, 3.11, 3.12, 3.13, 3.14, 3.15; compat.yaml)"
    )
    # Windows builds 3.8 and 3.9: wheelfarm runs in a Python of its own there
    assert any(b.python == "3.8" and b.platform == "win_amd64" for b in plan.todo)


def test_a_cuda_no_runner_compiler_accepts_is_not_planned_and_explained(
    matrix_dir: Callable[..., FarmRoot],
) -> None:
    root = _root(
        matrix_dir,
        toolkit_line='  cu118: {version: "11.8.0", manifest_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", gcc_toolset: 11, '
        "msvc_toolset: null}",
    )
    matrix = load_matrix(root)
    plan = make_plan(matrix, expand(matrix))
    assert not [b for b in plan.todo if b.cuda == "cu118" and b.platform == "win_amd64"]
    assert any(b.cuda == "cu118" and b.platform == "linux_x86_64" for b in plan.todo)
    reason = explain(plan, "demo-pkg-1.0.0-cu118-torch2.4-cp310-win_amd64")
    assert "the win_amd64 runner windows-2022 has no host compiler CUDA 11.8 accepts" in reason
    assert "MSVC 19.10-19.39" in reason
    with pytest.raises(ConfigError, match="cu118 has no msvc_toolset"):
        toolkit(root, "cu118", "win_amd64")


def test_a_consumer_builds_in_its_producers_shard_right_after_it(matrix_dir: MakeRoot) -> None:
    """One run builds both: the consumer's job follows its producer's in one lane and takes its
    wheels from the shard's artifacts (docs/adr/0017-one-pool.md)."""
    m = load_matrix(_root_farm_requires(matrix_dir, USER))
    cold = make_plan(m, expand(m))
    assert {b.package for b in cold.todo} == {"base", "user"}
    assert not cold.deferred
    for shard in cold.shards:
        for i, g in enumerate(shard.groups):
            after = cold.placed[g.id].after
            assert bool(after) == g.id.startswith("user-")
            if after:  # right after its producer, same CUDA, torch and platform
                assert (shard.groups[i - 1].id,) == after == (g.id.replace("user-", "base-"),)
    cell = "user-1.0.0-cu130-torch2.14-cp312-linux_x86_64"
    assert "; after base-1.0.0-cu130torch2.14-linux_x86_64, whose wheels it imports" in explain(
        cold, cell
    )


def test_the_plan_defers_a_build_until_its_required_wheel_is_published(
    matrix_dir: MakeRoot,
) -> None:
    """A producer this run does not build (filtered out here): the consumer waits for a run
    after the producer's wheels are released."""
    m = load_matrix(_root_farm_requires(matrix_dir, USER))
    e = expand(m)
    cold = make_plan(m, e, filters=Filters(package=("user",)))
    assert not cold.todo
    assert len(cold.deferred) == 10
    wanted = "user-1.0.0-cu130torch2.14-cp312-linux_x86_64"
    assert cold.deferred[wanted] == ("base-1.0.0-cu130torch2.14-cp312-linux_x86_64",)
    assert any("user: 10 builds deferred" in w for w in cold.warnings)
    assert "10 deferred (farm_requires)" in table(cold)
    assert to_json(cold)["deferred"][wanted] == ["base-1.0.0-cu130torch2.14-cp312-linux_x86_64"]
    cell = "user-1.0.0-cu130-torch2.14-cp312-linux_x86_64"
    assert "deferred: " + wanted in explain(cold, cell)
    # the next run: base is released, so user is built
    base = {b.id for b in make_plan(m, e, filters=Filters(package=("base",))).todo}
    warm = make_plan(m, e, existing=base)
    assert {b.package for b in warm.todo} == {"user"}
    assert not warm.deferred
    assert not [w for w in warm.warnings if "deferred" in w]


def test_a_consumer_of_two_producers_builds_in_their_shard_after_both(
    matrix_dir: MakeRoot,
) -> None:
    """Shards of one job would part base and other; their consumer's chain stays in one
    shard, so one run builds user, after both (docs/adr/0017-one-pool.md)."""
    m = load_matrix(_root_two_producers(matrix_dir))
    plan = make_plan(m, expand(m), max_jobs=1)
    assert {b.package for b in plan.todo} == {"base", "other", "user"}
    assert not plan.deferred and not plan.later
    assert not [w for w in plan.warnings if "deferred" in w]
    users = [g for g in plan.groups if g.id.startswith("user-")]
    assert users
    for g in users:
        where = plan.placed[g.id]
        assert where.after == (g.id.replace("user-", "base-"), g.id.replace("user-", "other-"))
        for producer in (plan.placed[p] for p in where.after):
            assert producer.shard == where.shard and producer.place < where.place
    assert len(plan.shards) == len(users)  # a shard per chain: producers, then their consumer
    cell = "user-1.0.0-cu130-torch2.14-cp312-linux_x86_64"
    assert (
        "; after base-1.0.0-cu130torch2.14-linux_x86_64, other-1.0.0-cu130torch2.14-linux_x86_64,"
        " whose wheels it imports" in explain(plan, cell)
    )


def test_a_consumer_waits_while_one_of_its_producers_is_not_built_in_the_run(
    matrix_dir: MakeRoot,
) -> None:
    """A producer the run does not build (filtered out), or one already released beside one
    the run builds (the job reads its farm wheels from the shard's artifacts alone): the
    consumer waits for a later run, with the warning."""
    m = load_matrix(_root_two_producers(matrix_dir))
    e = expand(m)
    wanted = "user-1.0.0-cu130torch2.14-cp312-linux_x86_64"
    base, other = (wanted.replace("user-", f"{p}-") for p in ("base", "other"))
    plan = make_plan(m, e, filters=Filters(package=("base", "user")))
    assert {b.package for b in plan.todo} == {"base"}
    assert plan.deferred[wanted] == (base, other)
    assert any(w.startswith("user: 10 builds deferred") for w in plan.warnings)
    mixed = make_plan(m, e, existing={b.id for b in plan.todo})
    assert {b.package for b in mixed.todo} == {"other"}
    assert mixed.deferred[wanted] == (other,)
    assert any(w.startswith("user: 10 builds deferred") for w in mixed.warnings)
    released = {b.id for b in [*plan.todo, *mixed.todo]}
    last = make_plan(m, e, existing=released)
    assert {b.package for b in last.todo} == {"user"} and not last.deferred
    assert not any(last.placed[g.id].after for g in last.groups)  # from the index


CU13_214 = """\
    constraints: {torch: "==2.14", cuda: ">=13", python: "==3.12", platforms: [linux_x86_64]}
    build_minutes_per_arch: 10
    """


def test_the_minors_of_a_major_are_one_compile_and_a_relabel_each(
    matrix_dir: Callable[..., Path],
) -> None:
    """cu130 and cu132 of one torch: one group, one compile, and farm.yaml's variant minutes
    for the cu132 wheel; --explain says which compile serves the cu132 cell; a cu132 wheel
    already released is not rebuilt (ADR 19)."""
    m = _matrix(matrix_dir, "{kind: cpython}", extra=CU13_214)
    majors = m.farm.cuda_majors
    assert majors is not None
    plan = make_plan(m, expand(m))
    (g,) = plan.groups
    assert g.id == "pkg-1.0.0-cu13torch2.14-linux_x86_64"
    assert [b.cuda for b in g.builds] == ["cu130", "cu132"]
    assert list(g.compiles) == ["pkg-1.0.0-cu13torch2.14-cp312-linux_x86_64"]
    assert g.variant_minutes == majors.variant_minutes
    assert plan.job_minutes(g) == (g.builds[0].minutes + majors.variant_minutes,)
    text = explain(plan, "pkg-1.0.0-cu132-torch2.14-cp312-linux_x86_64")
    assert "served by the cu130 compile pkg-1.0.0-cu13torch2.14-cp312-linux_x86_64" in text
    assert "relabelled +cu132torch2.14" in text
    assert "also serves cu132" in explain(plan, "pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64")
    held = make_plan(m, expand(m), existing={"pkg-1.0.0-cu132torch2.14-cp312-linux_x86_64"})
    (left,) = held.groups
    assert [b.cuda for b in left.builds] == ["cu130"] and left.variant_minutes == 0
    assert [b.id for b in held.present] == ["pkg-1.0.0-cu132torch2.14-cp312-linux_x86_64"]


def test_a_version_filter_plans_that_version_alone() -> None:
    """Issue 49 row 5: a wheel request's label dispatches one version, not every planned one."""
    m = load_matrix(REPO)
    expansion = expand(m)
    versions = Counter(b.version for b in expansion.builds if b.package == "xformers")
    assert len(versions) > 1  # else this would not tell
    one = min(versions)
    plan = make_plan(m, expansion, filters=Filters(package=("xformers",), version=(one,)))
    assert {b.version for b in plan.todo} == {one}


# make_plan's stages, each on the shipped catalog (matrix/plan.py)
SHIPPED = load_matrix(REPO)
SHIPPED_EXPANSION = expand(SHIPPED)


def test_select_defers_a_consumer_whose_producer_it_does_not_select() -> None:
    chosen = plan_module._select(SHIPPED_EXPANSION, Filters(package=("torch-sparse",)), set())
    assert chosen.selected and not chosen.buildable
    assert set(chosen.deferred) == {b.id for b in chosen.selected}
    with pytest.raises(PlanError, match="select no build"):
        plan_module._select(dataclasses.replace(SHIPPED_EXPANSION, builds=()), Filters(), set())


def test_defer_holds_back_a_group_whose_producer_is_neither_built_nor_published() -> None:
    filters = Filters(package=("torch-scatter", "torch-sparse"), torch=("2.15",))
    chosen = plan_module._select(SHIPPED_EXPANSION, filters, set())
    groups = plan_module.group(chosen.buildable, SHIPPED.farm.python_groups)
    kept, deferred = plan_module._defer(groups, chosen, set())
    assert kept == groups and not deferred  # the producers build in this run
    sparse = tuple(g for g in groups if g.id.startswith("torch-sparse"))
    kept, deferred = plan_module._defer(sparse, chosen, set())
    assert kept == () and set(deferred) == {b.id for g in sparse for b in g.builds}


def test_split_gives_each_long_group_its_compile_shards_within_a_matrix() -> None:
    chosen = plan_module._select(
        SHIPPED_EXPANSION, Filters(package=("flash-attn",), torch=("2.15",)), set()
    )
    groups = plan_module.group(chosen.buildable, SHIPPED.farm.python_groups)
    split = SHIPPED.farm.split_compile
    assert set(plan_module._split(groups, split, 256).values()) == {5}
    assert set(plan_module._split(groups, split, 3).values()) == {3}
    assert plan_module._split(groups, None, 256) == {}


@pytest.mark.parametrize("lanes", [19, 40])
def test_place_spreads_compile_shards_where_the_first_tier_ends_sooner(lanes: int) -> None:
    """Both pools end torch 2.15's tier 1 sooner with flash-attn's shards spread (19 lanes:
    16.3 h against 17.5 h; 40: 9.0 h against 13.7 h); the shards are cut in order."""
    pool = dataclasses.replace(SHIPPED.farm.pool, lanes=lanes)
    matrix = dataclasses.replace(SHIPPED, farm=dataclasses.replace(SHIPPED.farm, pool=pool))
    chosen = plan_module._select(SHIPPED_EXPANSION, Filters(torch=("2.15*",)), set())
    groups = plan_module.group(
        chosen.buildable, matrix.farm.python_groups, plan_module.variant_minutes(matrix)
    )
    splits = plan_module._split(groups, matrix.farm.split_compile, 256)
    where = plan_module._place(groups, matrix, splits, 256, one_run=True)
    assert where.spread.parts
    shards = plan_module._cut(where)
    assert [s.name for s in shards] == [f"{i + 1}of{len(shards)}" for i in range(len(shards))]
    placed = {g.id for s in shards for g in s.groups}
    assert placed == {g.id for g in groups} - {g.id for g in where.later}
