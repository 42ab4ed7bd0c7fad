"""wheelfarm.github.artifacts: a publish batch's artifacts, each taken on its own. A build's code
writes its wheelhouse, so a wheel counts only in the artifact of its own build's group with its
own record; the batch file `wheelfarm shard --expect` writes reads back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ghsim.synthetic import farm_wheel
from tests.roots import REPO
from tests.unit.helpers.github import attempt
from wheelfarm.core.errors import PublishError, UsageError
from wheelfarm.core.record import path_for
from wheelfarm.github.actions import expected, plan_document
from wheelfarm.github.artifacts import Batch, artifact_wheels, read_batch
from wheelfarm.matrix.expand import Build, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, group, make_plan

MATRIX = load_matrix(REPO)
EXPANSION = expand(MATRIX)
SHARD = "linux_x86_64-3"


def _group(package: str) -> tuple[str, tuple[Build, ...]]:
    """The first Linux group job of `package` (its Pythons' builds)."""
    mine = [b for b in EXPANSION.builds if b.package == package and b.platform == "linux_x86_64"]
    first = next(iter(group(mine, MATRIX.farm.python_groups)))
    return first.id, first.builds


CLUSTER, SCATTER = _group("torch-cluster"), _group("torch-scatter")
BATCH = Batch(SHARD, 0, {g: tuple(b.id for b in builds) for g, builds in (CLUSTER, SCATTER)})


def _artifact(dist: Path, group_id: str, builds: tuple[Build, ...], attempt: int = 1) -> Path:
    """What download-artifact leaves for one build job: a folder named after its artifact with
    the group's wheels and records."""
    folder = dist / f"wheel-{SHARD}-b0-{group_id}-a{attempt}"
    folder.mkdir(parents=True)
    for build in builds:
        farm_wheel(MATRIX, build, folder, expansion=EXPANSION)
    return folder


def _forge(artifact: Path, build: Build, tmp: Path) -> Path:
    """`build`'s wheel with other bytes and a record that holds for them, planted in another
    build's artifact (as its code could write into its wheelhouse)."""
    forged = farm_wheel(MATRIX, build, tmp, payload=64, expansion=EXPANSION)
    for f in (forged, path_for(forged)):
        shutil.copy(f, artifact / f.name)
    return artifact / forged.name


def test_each_artifacts_own_wheels_are_taken(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _artifact(dist, *CLUSTER), _artifact(dist, *SCATTER)
    wheels = artifact_wheels(dist, BATCH)
    assert len(wheels) == len(CLUSTER[1]) + len(SCATTER[1])
    assert {w.parent.name.rsplit("-a", 1)[0].split("-b0-", 1)[1] for w in wheels} == {
        CLUSTER[0],
        SCATTER[0],
    }


def test_a_wheel_of_another_package_in_a_builds_artifact_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    """Issue 49 row 1: torch-cluster's build writes a torch-scatter wheel (other bytes, its
    record self-consistent); merged into one folder it replaced torch-scatter's own."""
    dist = tmp_path / "dist"
    cluster = _artifact(dist, *CLUSTER)
    _artifact(dist, *SCATTER)
    forged = _forge(cluster, SCATTER[1][0], tmp_path)
    with pytest.raises(PublishError) as caught:
        artifact_wheels(dist, BATCH)
    line = str(caught.value)
    assert "\n" not in line and line.startswith("1 problem(s) with this batch's artifacts: ")
    assert (
        f"artifact {cluster.name} (group {CLUSTER[0]}) holds {forged.name}, a wheel of "
        f"{SCATTER[1][0].id}, which is not one of its builds"
    ) in line
    assert line.endswith("rerun that build, or fix its package file. Nothing was uploaded.")


def test_the_newest_attempt_of_a_group_gives_the_copy(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _artifact(dist, *CLUSTER, attempt=1)
    second = dist / f"wheel-{SHARD}-b0-{CLUSTER[0]}-a2"
    second.mkdir()
    rebuilt = _forge(second, CLUSTER[1][0], tmp_path)  # attempt 2 rebuilt one wheel
    wheels = artifact_wheels(dist, BATCH)
    assert rebuilt in wheels and len(wheels) == len(CLUSTER[1])


def _record(wheel: Path) -> dict[str, Any]:
    return dict(json.loads(path_for(wheel).read_text()))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda w: path_for(w).unlink(), "{w}: no build record beside it"),
        (lambda w: path_for(w).write_text("{}"), "{w}.build.json: not a build record"),
        (
            lambda w: path_for(w).write_text(json.dumps(_record(w) | {"build_id": "x-1-none"})),
            "{w}: its build record is 'x-1-none''s record of '{w}', not this wheel's",
        ),
        (lambda w: w.write_bytes(w.read_bytes() + b"\0"), "{w}: its bytes are not the ones"),
    ],
    ids=["no record", "not a record", "another build's record", "other bytes"],
)
def test_a_wheel_without_its_own_record_of_its_bytes_is_refused(
    tmp_path: Path, change: Any, problem: str
) -> None:
    folder = _artifact(tmp_path / "dist", *CLUSTER)
    wheel = folder / next(p.name for p in folder.glob("*.whl"))
    change(wheel)
    with pytest.raises(PublishError) as caught:
        artifact_wheels(tmp_path / "dist", BATCH)
    assert f"{folder.name}: {problem.format(w=wheel.name)}" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (None, "not a build artifact of shard linux_x86_64-3"),  # merged: wheels at the top
        (f"wheel-{SHARD}-b1-{CLUSTER[0]}-a1", "names no group of batch 0"),
        (f"wheel-{SHARD}-b0-torch-sparse-0.6.18-cu130torch2.14-linux_x86_64-a1", "names no group"),
        (f"wheel-other-b0-{CLUSTER[0]}-a1", "not a build artifact of shard"),
        (f"wheel-{SHARD}-b0-{CLUSTER[0]}", "not a build artifact of shard"),
    ],
    ids=["merged", "another batch", "another group", "another shard", "no attempt"],
)
def test_anything_but_this_batchs_artifact_folders_is_refused(
    tmp_path: Path, name: str | None, problem: str
) -> None:
    dist = tmp_path / "dist"
    folder = _artifact(dist, *CLUSTER)
    if name is None:
        for f in folder.iterdir():
            f.rename(dist / f.name)
        folder.rmdir()
    else:
        folder.rename(dist / name)
    with pytest.raises(PublishError, match=problem):
        artifact_wheels(dist, BATCH)


def test_the_batch_the_plan_writes_reads_back(tmp_path: Path) -> None:
    plan = make_plan(MATRIX, EXPANSION, filters=Filters(package=("torch-scatter",)))
    farm = MATRIX.farm
    document = plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
    )
    name = next(iter(document["shards"]))
    path = tmp_path / "expect.json"
    path.write_text(json.dumps(expected(document, name, 0)))
    batch = read_batch(path)
    assert (batch.shard, batch.batch) == (name, 0)
    assert batch.groups == {g: tuple(ids) for g, ids in document["shards"][name]["builds"].items()
                            if g in batch.groups}  # fmt: skip
    assert batch.build_ids == [i["id"] for i in expected(document, name, 0)["include"]]


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["name", "batch", "groups", "include", "x"]), inner, max_size=4
            )
        ),
        max_leaves=12,
    )
)
def test_any_expect_file_is_a_batch_or_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    path = tmp_path_factory.mktemp("expect") / "batch.json"
    path.write_text(json.dumps(doc))
    batch, error = attempt(lambda: read_batch(path))
    assert error is None or ("--expect" in error and "\n" not in error)
    assert batch is None or all(isinstance(i, str) and i for i in batch.build_ids)


def test_an_expect_file_nested_too_deep_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UsageError, match="nested 100000 deep"):
        read_batch(path)
