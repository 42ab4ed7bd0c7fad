"""matrix/model.py: what the typed package view gives a build. A CMake build without torch
(llama-cpp-python) takes its arch list as CMAKE_CUDA_ARCHITECTURES inside CMAKE_ARGS, and a
package's Windows-only flags sit over its shared ones on that platform only."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from ghsim.synthetic import SAMPLE, sample_record
from tests.roots import REPO
from tests.unit.helpers.roots import ONLY_214, _matrix
from tests.unit.helpers.strategies import SOME, VALUES, _mutated, _outcome, numbers
from tests.unit.helpers.wheels import NAME, wheel, wheelhouse_catalog
from wheelfarm.builder.binary import BinaryInfo
from wheelfarm.builder.target import select
from wheelfarm.builder.verify import _arch_problems
from wheelfarm.cli import main
from wheelfarm.core.errors import ConfigError, SiteError, UsageError
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.record import Archs, path_for
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.actions import check_trusted, plan_document
from wheelfarm.index.entries import covers_from_name
from wheelfarm.index.site import Site
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Abi, ArchFormat, ArchList, Matrix, Package
from wheelfarm.matrix.plan import Filters, existing_build_ids, make_plan


@pytest.mark.parametrize(
    ("listed", "fmt", "spelled"),
    [
        ("8.0;9.0;12.0+PTX", "cmake", "80-real;90-real;120-real;120-virtual"),
        ("9.0", "cmake", "90-real"),  # no PTX the policy did not ask for (plain '90' adds it)
        ("10.0a;12.0a", "cmake", "100a-real;120a-real"),
        ("8.0;9.0+PTX", "semicolon-int", "80;90"),
        ("8.0;9.0+PTX", "comma-int", "80,90"),
        ("8.0;9.0+PTX", "torch", "8.0;9.0+PTX"),
    ],
)
def test_each_format_spells_the_list(listed: str, fmt: ArchFormat, spelled: str) -> None:
    assert ArchList.parse(listed).spelled(fmt) == spelled


def _package(env: dict[str, str], platform_env: dict[str, dict[str, str]]) -> Package:
    return Package(
        name=canonicalize_name("pkg"),
        display_name="pkg",
        file=Path("pkg.yaml"),
        versions=(),
        abi=Abi(kind="torch-free"),
        arch_via="env",
        arch_env="CMAKE_CUDA_ARCHITECTURES",
        arch_format="cmake",
        env=env,
        platform_env=platform_env,
    )


def test_archs_in_env_are_the_builds_list_in_the_packages_format() -> None:
    pkg = _package({"CMAKE_ARGS": "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={archs}"}, {})
    env = pkg.env_for("cu130", "linux_x86_64", ArchList.parse("9.0;12.0+PTX"))
    assert env == {
        "CMAKE_ARGS": "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90-real;120-real;120-virtual"
    }


def test_platform_env_applies_on_its_platform_only_and_wins() -> None:
    pkg = _package(
        {"DS_BUILD_OPS": "1", "DS_BUILD_AIO": "1"},
        {"win_amd64": {"DS_BUILD_AIO": "0", "CUDA_V": "{cuda}"}},
    )
    archs = ArchList.parse("9.0")
    assert pkg.env_for("cu130", "linux_x86_64", archs) == {"DS_BUILD_OPS": "1", "DS_BUILD_AIO": "1"}
    assert pkg.env_for("cu130", "win_amd64", archs) == {
        "DS_BUILD_OPS": "1",
        "DS_BUILD_AIO": "0",
        "CUDA_V": "13.0",
    }


arch_items = st.tuples(numbers, st.sampled_from(["", "a", "f"]), st.booleans())


@pytest.mark.parametrize(
    ("policy", "cubins", "ptx", "problem"),
    [
        ("9.0", {"sm_90a"}, set(), None),  # sageattention: 9.0 as sm_90a; no other 9.x GPU
        ("12.0", {"sm_120f"}, set(), None),
        ("12.0", {"sm_120a"}, set(), "no SASS or PTX runs on 12.1, which the policy's archs do"),
        ("10.0", {"sm_100a"}, set(), "no SASS or PTX runs on 10.3,"),
        ("9.0+PTX", {"sm_90a"}, {"sm_90a"}, "no SASS or PTX runs on 10.0, 10.3, 11.0, 12.0, 12.1"),
        ("9.0", {"sm_90a", "sm_120a"}, set(), "unexpected SASS for sm_120a"),
        ("9.0;12.0", {"sm_90"}, set(), "missing SASS for sm_120"),
    ],
)
def test_verify_holds_a_wheel_to_where_its_policy_runs(
    policy: str, cubins: set[str], ptx: set[str], problem: str | None
) -> None:
    info = BinaryInfo(frozenset(cubins), frozenset(ptx))
    problems = _arch_problems("pkg/_C.so", info, ArchList.parse(policy))
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problem in problems[0]
        assert problems[0].startswith("pkg/_C.so: ")


@pytest.mark.parametrize(
    ("listed", "cubins", "ok"),
    [
        ("10.0a;12.0a", {"sm_100a", "sm_120a"}, True),  # sageattn3: exactly what it promises
        ("12.0a", {"sm_120"}, True),  # plain sm_120 runs on 12.0 too: more than promised
        ("12.0", {"sm_120a"}, False),  # a plain 12.0 promises GB10 (12.1), which sm_120a misses
        ("12.0a", {"sm_100a"}, False),
    ],
)
def test_a_listed_variant_is_what_verify_expects_and_the_package_gets_plain_numbers(
    listed: str, cubins: set[str], ok: bool
) -> None:
    """`12.0a` in a package file: verify wants 12.0's code and promises 12.0 only; the package's
    own variable gets the plain list (sageattn3's setup.py parses int('0a') and fails)."""
    archs = ArchList.parse(listed)
    assert archs.listed == listed
    assert "a" not in archs.torch and "a" not in archs.spelled("semicolon-int")
    problems = _arch_problems("pkg/_C.so", BinaryInfo(frozenset(cubins), frozenset()), archs)
    assert (problems == []) == ok, problems


@pytest.mark.parametrize(
    ("listed", "named"),
    [("12.0a+PTX", "+PTX only on a plain arch"), ("10.0f+PTX", "+PTX only on a plain arch")]
    + [(t, "duplicate arch") for t in ("9.0;9.0", "9.0a;9.0", "9.0;9.0+PTX", "8.0;12.0f;12.0a")],
)
def test_ptx_on_a_variant_and_duplicate_archs_are_refused(listed: str, named: str) -> None:
    """Issue 36 row 7: arch-specific PTX runs on no later GPU, and one SM listed twice builds
    twice (or claims a plain cubin its variant twin replaces)."""
    with pytest.raises(ValueError, match=re.escape(named)) as caught:
        ArchList.parse(listed)
    assert listed.rsplit(";", maxsplit=1)[-1] in str(caught.value)


@given(st.lists(arch_items, min_size=1, max_size=6))
def test_an_arch_list_parses_exactly_when_plain_ptx_and_no_sm_twice(items: Any) -> None:
    """Property: any list of well-formed items round-trips, unless an SM repeats or PTX rides
    on a variant, and then it is one ValueError naming the list."""
    text = ";".join(f"{m}.{n}{v}" + ("+PTX" if p else "") for (m, n), v, p in items)
    sms = [m * 10 + n for (m, n), _, _ in items]
    valid = len(set(sms)) == len(sms) and not any(v and p for _, v, p in items)
    if valid:
        assert ArchList.parse(text).listed == text
    else:
        with pytest.raises(ValueError, match="arch") as caught:
            ArchList.parse(text)
        assert text in str(caught.value)
        assert "\n" not in str(caught.value)


WHEEL_NAMES = st.builds(
    "{}-{}{}-{}-{}-{}.whl".format,
    st.sampled_from(["flash_attn", "x", "a.b", "", "demo-pkg"]),
    st.sampled_from(["1.0", "2.8.3.post2", "1", "x"]),
    st.sampled_from(["", "+cu130torch2.14", "+cu130", "+cu130torch2.10.stable", "+cpu", "+cu1"]),
    st.sampled_from(["cp312", "cp310", "py3", "cp3", "py2", "pp310", "cp3x"]),
    st.sampled_from(["cp312", "abi3", "none"]),
    st.sampled_from(
        ["linux_x86_64", "manylinux_2_28_x86_64", "win_amd64", "any", "macosx_11_0_arm64"]
    ),
) | st.text(max_size=60).map(lambda s: s + ".whl")


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(REPO)


RECORDS = st.one_of(
    st.none(),
    st.binary(max_size=40),
    VALUES.map(lambda v: json.dumps(v, default=str).encode()),
    st.fixed_dictionaries({"target": st.fixed_dictionaries({"covers": VALUES})}).map(
        lambda v: json.dumps(v, default=str).encode()
    ),
)


def test_archs_and_partial_builds(tmp_path: Path, shipped: Matrix) -> None:
    house = tmp_path / "house"
    house.mkdir()
    path = wheel(house)
    record = sample_record(
        target=dataclasses.replace(SAMPLE.target, covers=()),  # placed from its name
        archs_found={
            "a.so": Archs(cubins=("sm_90", "sm_100"), ptx=()),
            "b.so": Archs(cubins=("sm_80",), ptx=("sm_100",)),
        },
    )
    path_for(path).write_text(record.to_json())
    policy = {"demo-pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64": frozenset({"sm_80", "sm_120"})}
    with Site(tmp_path / "site") as written:
        entries = wheelhouse_catalog(house, shipped, {}, written, policy)
        (entry,) = entries
        assert entry.to_json()["archs"] == {"sass": ["sm_80", "sm_90", "sm_100"], "ptx": ["sm_100"]}
        assert entry.partial_archs
        written.commit(entries, templates=REPO.templates)
    assert existing_build_ids(tmp_path / "site" / "packages.json") == set()
    assert (tmp_path / "site" / "packages.js").is_file()


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


def test_import_with_torch_is_for_torch_free_only(matrix_dir: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match=r"import_with_torch: only for kind 'torch-free'"):
        _matrix(matrix_dir, "{kind: cpython}", extra="import_with_torch: true\n")


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


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(REPO)


@pytest.fixture(scope="module")
def document(matrix: Matrix) -> dict[str, Any]:
    plan = make_plan(matrix, expand(matrix), filters=Filters(package=("causal-conv1d",)))
    farm = matrix.farm
    return plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
    )


def _set(path: str, value: object) -> Any:
    def change(shard: dict[str, Any]) -> None:
        target: Any = shard
        *keys, last = path.split(".")
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value

    return change


TAMPERED = [
    ("runner", _set("include.0.runner", "self-hosted"), "runner 'self-hosted'"),
    (
        "container",
        _set("include.0.container", "quay.io/pypa/manylinux_2_28_x86_64:latest"),
        "container",
    ),
    ("platform", _set("include.0.platform", "linux_riscv64"), "platform 'linux_riscv64'"),
    ("minutes", _set("include.0.minutes", 100000), "minutes 100000"),
    ("after", _set("include.0.after", "flash-attn-2.8.3-cu130torch2.14-linux_x86_64"), "after"),
    ("cuda", _set("include.0.cuda", "cu999"), "cuda 'cu999'"),
    ("cuda type", _set("include.0.cuda", ["cu130"]), "cuda ['cu130']"),
    ("python", _set("include.0.python", "3.12\n3.99"), "python '3.12\\n3.99'"),
    ("timeout", _set("include.0.timeout", 100000), "timeout 100000"),
    ("timeout type", _set("include.0.timeout", "30"), "timeout '30'"),
    ("step", _set("include.0.step", 5000), "step 5000"),
    ("links", _set("include.0.links", -1), "links -1"),
    ("part", _set("include.0.part", "1/3; rm -rf /"), "part '1/3; rm -rf /'"),
]


def test_every_shard_the_planner_writes_is_trusted(matrix: Matrix) -> None:
    """The whole grid: torch-free packages and split groups included."""
    plan = make_plan(matrix, expand(matrix))
    whole = plan_document(plan, matrix.farm.hosted_job_limit_minutes, 10**6, matrix.farm.platforms)
    for name in whole["shards"]:
        check_trusted(whole, name, matrix)


@pytest.mark.parametrize(("what", "change", "named"), TAMPERED, ids=[t[0] for t in TAMPERED])
def test_a_tampered_value_is_refused_naming_it(
    matrix: Matrix, document: dict[str, Any], what: str, change: Any, named: str
) -> None:
    del what
    tampered = copy.deepcopy(document)
    name = next(iter(tampered["shards"]))
    change(tampered["shards"][name])
    with pytest.raises(UsageError) as caught:
        check_trusted(tampered, name, matrix)
    text = str(caught.value)
    assert named in text and "\n" not in text.replace("\\n", "")
    assert "wheelfarm plan" in text  # the fix


def test_shard_refuses_a_self_hosted_runner_before_writing_outputs(
    document: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tampered = copy.deepcopy(document)
    name = next(iter(tampered["shards"]))
    tampered["shards"][name]["include"][0]["runner"] = "self-hosted"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tampered))
    outputs = tmp_path / "outputs"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    code = main(["shard", name, "--plan-file", str(plan), "--root", str(REPO.path)])
    assert code == UsageError.exit_code
    assert not outputs.exists()
    assert "runner 'self-hosted'" in capsys.readouterr().err


@SOME
@given(name=WHEEL_NAMES)
def test_wheel_name_readers(shipped: Matrix, name: str) -> None:
    build_id = _outcome(lambda: build_id_from_wheel(name), ValueError)  # InvalidWheelFilename
    covers = _outcome(lambda: covers_from_name(name, shipped), ValueError)
    assert isinstance(build_id, ValueError) == isinstance(covers, ValueError)
    if isinstance(covers, tuple):
        assert all(cover.platform in NAMES for cover in covers)


@SOME
@given(data=st.data(), record=RECORDS)
def test_wheelhouse_source(
    scratch: Path, shipped: Matrix, good_wheel: bytes, data: st.DataObject, record: bytes | None
) -> None:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    wheel = scratch / NAME
    wheel.write_bytes(data.draw(st.just(good_wheel) | _mutated(good_wheel)))
    if record is not None:
        wheel.with_name(NAME + ".build.json").write_bytes(record)
    result = _outcome(lambda: wheelhouse_catalog(scratch, shipped, {}), SiteError)
    if isinstance(result, SiteError):
        assert "\n" not in str(result)
        assert str(scratch) in str(result)
    else:
        assert [e.filename for e in result] == [NAME]
