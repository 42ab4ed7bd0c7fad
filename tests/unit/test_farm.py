"""wheelfarm.farm: the artifacts check before publishing, and reading a build record for
`verify --rebuild`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ghsim.synthetic import farm_wheel
from tests.roots import REPO
from wheelfarm import farm
from wheelfarm.core.errors import PlanError, UsageError, VerifyError
from wheelfarm.core.record import path_for
from wheelfarm.farm import job_deadline
from wheelfarm.github.actions import SAVE_MARGIN_MINUTES
from wheelfarm.matrix.expand import Build, Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix


@pytest.fixture(scope="module")
def grid() -> tuple[Matrix, Expansion]:
    matrix = load_matrix(REPO)
    return matrix, expand(matrix)


def _demo(grid: tuple[Matrix, Expansion], dest: Path, n: int = 0) -> Path:
    matrix, expansion = grid
    builds: list[Build] = [
        b
        for b in expansion.builds
        if b.package == "wheelfarm-demo" and b.platform == "linux_x86_64"
    ]
    build = builds[n]
    return farm_wheel(matrix, build, dest, expansion=expansion)


def test_failed_artifacts_are_counted_and_nothing_published(
    grid: tuple[Matrix, Expansion], tmp_path: Path
) -> None:
    good, changed = _demo(grid, tmp_path, 0), _demo(grid, tmp_path, 1)
    record = json.loads(path_for(changed).read_text())
    record["wheel"]["sha256"] = "0" * 64
    path_for(changed).write_text(json.dumps(record))
    stray = tmp_path / "notes.whl"
    stray.write_bytes(b"")
    with pytest.raises(VerifyError) as caught:
        farm.check_artifacts(*grid, [good, changed, stray])
    heading, *problems = str(caught.value).splitlines()
    assert heading == "nothing was published: 2 of 3 artifacts failed verification:"
    assert problems[0] == f"  - {changed.name}: its bytes are not the ones its build record hashed"
    assert problems[1].startswith("  - notes.whl: not a wheel name")
    farm.check_artifacts(*grid, [good])  # the good one alone passes


def test_a_record_of_another_wheel_or_of_no_shape_is_a_usage_error(
    grid: tuple[Matrix, Expansion], tmp_path: Path
) -> None:
    first, second = _demo(grid, tmp_path, 0), _demo(grid, tmp_path, 1)
    assert farm._read_record(first, path_for(first)).wheel.filename == first.name
    with pytest.raises(
        UsageError, match=re.escape(f"is the build record of '{second.name}', not of")
    ):
        farm._read_record(first, path_for(second))
    path_for(first).write_text('{"version": 2, "build_id": 1}')
    with pytest.raises(UsageError, match=r"is not a build record \(.*: build_id should be a"):
        farm._read_record(first, path_for(first))


def test_a_recorded_arch_list_of_no_shape_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"target\.archs 'sm_90; rm -rf' is no arch list"):
        farm._archs("sm_90; rm -rf")


def test_a_group_id_builds_the_pythons_asked_for_oldest_first() -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    group = "causal-conv1d-1.7.0-cu13torch2.14-linux_x86_64"  # one compile for cu130 and cu132
    query = farm.TargetQuery(build_id=group)
    chosen = farm.choose_targets(matrix, expansion, query, ["3.13", "3.11"])
    assert [t.id for t in chosen] == [
        "causal-conv1d-1.7.0-cu130torch2.14-cp311-linux_x86_64",
        "causal-conv1d-1.7.0-cu132torch2.14-cp311-linux_x86_64",
        "causal-conv1d-1.7.0-cu130torch2.14-cp313-linux_x86_64",
        "causal-conv1d-1.7.0-cu132torch2.14-cp313-linux_x86_64",
    ]
    every = farm.choose_targets(matrix, expansion, query)
    assert len(every) > 2 and all(t.build.group_id == group for t in every)
    with pytest.raises(PlanError, match=r"--pythons 3\.9 3\.7: causal-conv1d.* builds 3\.1"):
        farm.choose_targets(matrix, expansion, query, ["3.9", "3.7"])
    # a plan filtered by CUDA (or with cu130's wheels released) builds cu132's alone
    cu132 = farm.choose_targets(matrix, expansion, query, ["3.11"], ["cu132"])
    assert [t.id for t in cu132] == ["causal-conv1d-1.7.0-cu132torch2.14-cp311-linux_x86_64"]
    assert cu132[0].build.compile_cuda == "cu130"  # still the cu130 toolkit's compile
    with pytest.raises(PlanError, match=r"--variants cu126: causal-conv1d.* builds cu130 cu132"):
        farm.choose_targets(matrix, expansion, query, [], ["cu126"])
    one = farm.TargetQuery(build_id=chosen[0].id)
    assert [t.id for t in farm.choose_targets(matrix, expansion, one, ["3.11"])] == [chosen[0].id]
    with pytest.raises(PlanError, match=r"--pythons 3\.12: .* builds 3\.11"):
        farm.choose_targets(matrix, expansion, one, ["3.12"])
    with pytest.raises(UsageError, match="--pythons and --variants select builds of a group id"):
        farm.choose_targets(matrix, expansion, farm.TargetQuery(local=True), ["3.12"])


def test_the_deadline_counts_from_the_job_start_and_leaves_the_save_margin() -> None:
    assert job_deadline(1_000_000.0, 360) == 1_000_000.0 + (360 - SAVE_MARGIN_MINUTES) * 60
