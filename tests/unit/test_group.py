"""A group job's loop over its Pythons (builder/group.py): a failed Python does not stop the
rest, the group fails after the last with the first failure, and a lone target's failure is
raised as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.build import BuildOptions, BuildResult, ShardResult
from wheelfarm.builder.group import build_group
from wheelfarm.builder.target import Target, resolve
from wheelfarm.core.errors import BuildError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

IDS = [f"flash-attn-2.8.3.post2-cu130torch2.14-{py}-linux_x86_64" for py in ("cp311", "cp312")]


def _targets() -> list[Target]:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    return [resolve(matrix, expansion, i) for i in IDS]


def _opts(tmp_path: Path) -> BuildOptions:
    return BuildOptions(out_dir=tmp_path / "out", work_dir=tmp_path / "w", cache=tmp_path / "c")


def _failing_first(target: Target, opts: BuildOptions) -> BuildResult:
    if target.id == IDS[0]:
        msg = f"nvcc failed for {target.id}"
        raise BuildError(msg)
    return BuildResult(opts.out_dir / f"{target.id}.whl", opts.out_dir / "r.json", {})


def test_a_failed_python_does_not_stop_the_groups_others(tmp_path: Path) -> None:
    built: list[BuildResult | ShardResult] = []
    with pytest.raises(BuildError, match=f"nvcc failed for {IDS[0]}"):
        build_group(_targets(), _opts(tmp_path), built.append, build=_failing_first)
    assert [r.wheel.name for r in built if isinstance(r, BuildResult)] == [f"{IDS[1]}.whl"]


def test_a_lone_targets_failure_is_raised_at_once(tmp_path: Path) -> None:
    built: list[BuildResult | ShardResult] = []
    with pytest.raises(BuildError, match="nvcc failed"):
        build_group(_targets()[:1], _opts(tmp_path), built.append, build=_failing_first)
    assert built == []
