from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.target import resolve, select
from wheelfarm.core.errors import ConfigError, PlanError, UsageError
from wheelfarm.github.actions import (
    JOB_KEYS,
    MAX_OUTPUT_BYTES,
    batches,
    expected,
    github_outputs,
    plan_document,
    read_plan,
    shard_outputs,
)
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.plan import (
    Filters,
    Group,
    existing_build_ids,
    explain,
    make_plan,
)

from .conftest import package_yaml

ONLY_214 = """\
    constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [linux_x86_64]}
    """


def _matrix(matrix_dir: Callable[..., Path], abi: str, extra: str = ONLY_214) -> Matrix:
    return load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=abi, extra=extra)}))


def test_cpython_one_build_per_cell(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(matrix_dir, "{kind: cpython}")
    e = expand(m)
    assert [c.python for c in e.cells] == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert len(e.builds) == 5
    assert e.builds[0].id == "pkg-1.0.0-cu130torch2.14-cp310-linux_x86_64"
    assert e.builds[0].torch == "2.14.1"


def test_abi3_once_per_torch_cuda_platform(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(
        matrix_dir,
        "{kind: abi3}",
        extra='constraints: {torch: ">=2.13", cuda: "==13.0", platforms: [linux_x86_64]}\n',
    )
    e = expand(m)
    assert len(e.cells) == 10
    assert sorted(b.id for b in e.builds) == [
        "pkg-1.0.0-cu130torch2.13-cp310-abi3-linux_x86_64",
        "pkg-1.0.0-cu130torch2.14-cp310-abi3-linux_x86_64",
    ]
    assert all(len(b.covers) == 5 for b in e.builds)


def test_torch_stable_once_per_cuda_platform_against_newest_torch(
    matrix_dir: Callable[..., Path],
) -> None:
    m = _matrix(
        matrix_dir,
        "{kind: torch-stable, min_torch: '2.10', python: abi3}",
        extra='constraints: {cuda: "==13.0", platforms: [linux_x86_64]}\n',
    )
    e = expand(m)
    assert len(e.builds) == 1
    (b,) = e.builds
    assert b.torch == "2.14.1"  # compiled with the newest; the label names the floor
    assert b.id == "pkg-1.0.0-cu130torch2.10.stable-cp310-abi3-linux_x86_64"
    assert {c.torch for c in b.covers} == {"2.10", "2.11", "2.12", "2.13", "2.14"}
    assert len(b.covers) == 25
    assert any("abi.min_torch 2.10" in x.rule and x.cell.torch == "2.9" for x in e.excluded)


def test_python_none_keeps_the_packages_own_floor(matrix_dir: Callable[..., Path]) -> None:
    """xformers 0.0.35: stable ABI, no Python C API, tagged py39-none by its own setup.py."""
    m = _matrix(
        matrix_dir,
        "{kind: torch-stable, min_torch: '2.10', python: none, python_floor: '3.9'}",
        extra='constraints: {cuda: "==13.0", platforms: [linux_x86_64]}\n',
    )
    (b,) = expand(m).builds
    assert b.id == "pkg-1.0.0-cu130torch2.10.stable-py39-none-linux_x86_64"
    assert b.python == "3.10" and len(b.covers) == 25


def test_a_python_floor_above_a_cell_excludes_it(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(matrix_dir, "{kind: abi3, python_floor: '3.12'}")
    e = expand(m)
    (b,) = e.builds
    assert b.id == "pkg-1.0.0-cu130torch2.14-cp312-abi3-linux_x86_64"
    assert {c.python for c in b.covers} == {"3.12", "3.13", "3.14"}
    assert any("abi.python_floor 3.12" in x.rule and x.cell.python == "3.10" for x in e.excluded)


def test_torch_free_abi3_is_one_build_per_cuda_and_platform(
    matrix_dir: Callable[..., Path],
) -> None:
    m = _matrix(
        matrix_dir,
        "{kind: torch-free, python: abi3, python_floor: '3.9'}",
        extra='constraints: {cuda: "==13.0", platforms: [linux_x86_64]}\n',
    )
    (b,) = expand(m).builds
    assert b.id == "pkg-1.0.0-cu130-cp39-abi3-linux_x86_64"
    assert b.torch is None and {c.torch for c in b.covers} >= {"2.10", "2.14"}


def test_a_version_may_carry_its_own_abi(matrix_dir: Callable[..., Path]) -> None:
    """xformers: 0.0.34 is abi3 on the full torch ABI, 0.0.35 on the stable ABI."""
    text = f"""\
name: pkg
versions:
  - version: "0.0.34"
    source: {{sdist: pkg, sha256: "{"a" * 64}"}}
    abi: {{kind: abi3, python_floor: '3.9'}}
  - version: "0.0.35"
    source: {{sdist: pkg, sha256: "{"b" * 64}"}}
abi: {{kind: torch-stable, min_torch: '2.14', python: none, python_floor: '3.9'}}
arch: {{via: torch}}
import: [pkg]
{textwrap.dedent(ONLY_214)}"""
    ids = sorted(b.id for b in expand(load_matrix(matrix_dir({"pkg": text}))).builds)
    assert ids == [
        "pkg-0.0.34-cu130torch2.14-cp39-abi3-linux_x86_64",
        "pkg-0.0.35-cu130torch2.14.stable-py39-none-linux_x86_64",
    ]


def test_torch_free_once_per_cuda_python_platform(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(
        matrix_dir,
        "{kind: torch-free}",
        extra='constraints: {cuda: "==13.0", platforms: [linux_x86_64], python: "==3.12.*"}\n',
    )
    e = expand(m)
    assert [b.id for b in e.builds] == ["pkg-1.0.0-cu130-cp312-linux_x86_64"]
    assert e.builds[0].torch is None
    assert {c.torch for c in e.builds[0].covers} == {"2.9", "2.10", "2.11", "2.12", "2.13", "2.14"}


def test_phantom_combinations_are_never_planned() -> None:
    m = load_matrix(REPO)
    e = expand(m)
    shipped = {
        (r.minor, cuda, plat, py)
        for r in m.releases
        for cuda, plats in r.builds.items()
        for plat in plats
        for py in r.pythons()
    }
    for c in e.cells:
        assert (c.torch, c.cuda, c.platform, c.python) in shipped
    ids = {c.id for c in e.cells}
    assert (
        "flash-attn-2.8.3.post2-cu128-torch2.14-cp312-linux_x86_64" not in ids
    )  # no cu128 after 2.11
    assert "causal-conv1d-1.7.0-cu130-torch2.8-cp312-linux_x86_64" not in ids  # cu130 from 2.9
    assert "causal-conv1d-1.7.0-cu126-torch2.14-cp39-linux_x86_64" not in ids  # 3.9 dropped in 2.9


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


def test_github_outputs_name_shards_and_the_plan_file_holds_their_matrices() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m), filters=Filters(package=("causal-conv1d",)))
    out = github_outputs(plan)
    document = plan_document(
        plan, m.farm.hosted_job_limit_minutes, m.farm.publish_batch_wheels, m.farm.platforms
    )
    total = 0
    for name in json.loads(out["shards"]):
        shard = shard_outputs(document, name)
        include = json.loads(shard["include"])
        assert len(include) <= 256
        assert all(tuple(j) == JOB_KEYS for j in include)
        batches = json.loads(shard["batches"])
        assert {j["batch"] for j in include} == set(batches)
        builds = document["shards"][name]["builds"]  # a group job's build ids
        published = [i["id"] for b in batches for i in expected(document, name, b)["include"]]
        assert published == [i for j in include for i in builds[j["id"]]]
        for b in batches:  # a batch holds whole groups, at most publish_batch_wheels wheels
            mine = [j for j in include if j["batch"] == b]
            held = sum(len(builds[j["id"]]) for j in mine)
            assert held <= m.farm.publish_batch_wheels or len(mine) == 1
        total += len(published)
    assert total == int(out["count"]) == len(plan.todo)
    assert len(plan.groups) < len(plan.todo)  # its Pythons share a job
    assert max(len(v.encode("utf-16-le")) for v in out.values()) < 8 * 1024


def test_every_shard_of_the_whole_grid_fits_a_job_output() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m))
    document = plan_document(
        plan, m.farm.hosted_job_limit_minutes, m.farm.publish_batch_wheels, m.farm.platforms
    )
    sizes = [
        len(v.encode("utf-16-le"))
        for name in document["shards"]
        for v in shard_outputs(document, name).values()
    ]
    assert max(sizes) <= MAX_OUTPUT_BYTES
    assert sum(len(v.encode("utf-16-le")) for v in github_outputs(plan).values()) < 64 * 1024


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


def test_long_jobs_warn_once_per_package(matrix_dir: Callable[..., Path]) -> None:
    """Split into compile shards, a 600-minute build runs no job past the limit."""
    m = _matrix(matrix_dir, "{kind: cpython}", extra=ONLY_214 + "build_minutes_per_arch: 100\n")
    plan = make_plan(m, expand(m))
    assert plan.warnings == ()
    # five Pythons in one group of 600 + 4 * 0.2 * 600 = 1080 minutes: 9 shards of 1080 / 9 + 10,
    # and a link job of 10 % of the five builds' 3000 + 10 that finishes every Python
    assert m.farm.python_groups is not None and m.farm.python_groups.next_python_fraction == 0.2
    assert plan.job_minutes(plan.groups[0]) == (130.0,) * 9 + (310.0,)
    assert plan.longest_job_minutes == 310


def test_jobs_too_long_even_split_warn_once_per_package(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(matrix_dir, "{kind: cpython}", extra=ONLY_214 + "build_minutes_per_arch: 10000\n")
    plan = make_plan(m, expand(m))
    assert len(plan.warnings) == 1
    assert "1 job(s) predicted up to 30010 min > 360 min" in plan.warnings[0]


def test_explain_names_the_collapsed_build(matrix_dir: Callable[..., Path]) -> None:
    m = _matrix(matrix_dir, "{kind: abi3}")
    plan = make_plan(m, expand(m))
    text = explain(plan, "pkg-1.0.0-cu130-torch2.14-cp313-linux_x86_64")
    assert text.startswith(
        "pkg-1.0.0-cu130-torch2.14-cp313-linux_x86_64: covered by abi3 build "
        "pkg-1.0.0-cu130torch2.14-cp310-abi3-linux_x86_64 (built with torch 2.14.1, "
        "Python 3.10; serves 5 cells; tier 1, place 1 of 1 in the queue, shard 1, predicted"
    )


@pytest.mark.parametrize(
    ("abi", "python", "tag"),
    [
        # one py39-none wheel serves 3.10-3.14: this machine's 3.12 builds it, not a missing 3.10
        ("{kind: torch-stable, min_torch: '2.14', python: none, python_floor: '3.9'}", "3.12",
         "py39-none"),
        ("{kind: abi3}", "3.10", "cp310-abi3"),  # no floor: the tag follows the build's Python
    ],
)  # fmt: skip
def test_local_builds_a_floor_tagged_wheel_with_this_python(
    matrix_dir: Callable[..., Path], abi: str, python: str, tag: str
) -> None:
    m = _matrix(matrix_dir, abi)
    t = select(m, expand(m), package="pkg", cuda="cu130", python="3.12", platform="linux_x86_64")
    assert (t.build.python, t.build.python_tag) == (python, tag)


@pytest.mark.parametrize(("flag", "torch"), [("import_with_torch: true\n", "2.14.1"), ("", None)])
def test_import_with_torch_imports_beside_the_newest_torch_of_its_cuda(
    matrix_dir: Callable[..., Path], flag: str, torch: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONSTRAINT", "")  # no pip cap: not this machine's pip config
    extra = 'constraints: {cuda: "==13.0", platforms: [linux_x86_64]}\n' + flag
    m = _matrix(matrix_dir, "{kind: torch-free, python: abi3}", extra=extra)
    (b,) = expand(m).builds
    assert (b.torch, resolve(m, expand(m), b.id).import_torch) == (None, torch)


def test_import_with_torch_is_for_torch_free_only(matrix_dir: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match=r"import_with_torch: only for kind 'torch-free'"):
        _matrix(matrix_dir, "{kind: cpython}", extra="import_with_torch: true\n")


TWO_VERSIONS = f"""\
name: pkg
versions:
  - version: "2.0"
    source: {{sdist: pkg, sha256: "{"b" * 64}"}}
  - version: "1.5"
    source: {{sdist: pkg, sha256: "{"c" * 64}"}}
    abi: {{kind: abi3}}
    build_minutes_per_arch: 7
abi: {{kind: cpython}}
arch: {{via: torch}}
import: [pkg]
build_minutes_per_arch: 1
{textwrap.dedent(ONLY_214)}"""


def test_a_local_build_takes_the_newest_version_or_the_one_asked_for(
    matrix_dir: Callable[..., Path],
) -> None:
    m = load_matrix(matrix_dir({"pkg": TWO_VERSIONS}))
    e = expand(m)
    where = {"package": "pkg", "cuda": "cu130", "python": "3.12", "platform": "linux_x86_64"}
    assert select(m, e, **where).build.version == "2.0"
    old = select(m, e, **where, version="1.5.0")  # PEP 440 equal
    assert (old.build.id, old.build.minutes / len(old.build.archs.archs)) == (
        "pkg-1.5-cu130torch2.14-cp310-abi3-linux_x86_64",
        7,
    )
    assert select(m, e, **where).build.minutes / len(old.build.archs.archs) == 1
    with pytest.raises(PlanError, match=r"pkg lists no version '1\.4': it lists 2\.0, 1\.5"):
        select(m, e, **where, version="1.4")
    with pytest.raises(PlanError, match="'not a version' is not a PEP 440 version"):
        select(m, e, **where, version="not a version")


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "shards": {"s": {"runner": 1}}}',
        (
            '{"version": 1, "shards": {"s": {"runner": "r", "container": "", "include": [1], '
            '"compile": [], "batches": "z"}}}'
        ),
        "[" * 5000 + "]" * 5000,
        '{"version": 2, "shards": {}}',
    ],
)
def test_a_malformed_plan_file_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=r"plan\.json|shard 's' in the plan is malformed"):
        shard_outputs(read_plan(path), "s")


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
    assert f"in job {g.id} with 4 other Pythons; tier 1, place 1 of 1 in the queue" in text
    missing = make_plan(m, expand(m), existing={"pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64"})
    (left,) = missing.groups
    assert left.id == g.id and [b.python for b in left.builds] == ["3.10", "3.11", "3.13", "3.14"]
    apart = make_plan(m, expand(m), grouped=False)
    assert [len(x.builds) for x in apart.groups] == [1] * 5
    assert apart.runner_hours == pytest.approx(5 * each / 60)


def test_a_platform_that_does_not_group_plans_a_job_per_build(
    matrix_dir: Callable[..., Path],
) -> None:
    windows = 'constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [win_amd64]}\n'
    m = _matrix(matrix_dir, "{kind: cpython}", extra=windows)
    assert m.farm.python_groups is not None
    linux = dataclasses.replace(m.farm.python_groups, platforms=("linux_x86_64",))
    m = dataclasses.replace(m, farm=dataclasses.replace(m.farm, python_groups=linux))
    plan = make_plan(m, expand(m))
    assert [g.id for g in plan.groups] == [b.id for b in plan.todo]


def test_a_publish_batch_holds_whole_groups() -> None:
    def g(n: int) -> Group:
        b = expand(load_matrix(REPO)).builds[0]
        return Group(f"g{n}", (b,) * n)

    assert batches([g(5), g(5), g(5), g(5), g(20), g(1)], 16) == [0, 0, 0, 1, 2, 3]
