"""A group job's loop over its compiles (builder/group.py): each compile's targets (its
Pythons' CUDA minors, ADR 19) go to one compile; a failed Python, compile or minor does not
stop the rest, the group fails after the last with the first failure, and a lone target's
failure is raised as it is."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.build import BuildOptions, BuildResult, Outcome, ShardResult
from wheelfarm.builder.group import build_group
from wheelfarm.builder.target import Target, resolve_group
from wheelfarm.core.errors import BuildError, VerifyError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

GROUP = "flash-attn-2.8.3.post2-cu13torch2.14-linux_x86_64"
IDS = [
    f"flash-attn-2.8.3.post2-{cu}torch2.14-{py}-linux_x86_64"
    for py in ("cp311", "cp312")
    for cu in ("cu130", "cu132")
]


def _targets() -> list[Target]:
    matrix = load_matrix(REPO)
    return resolve_group(matrix, expand(matrix), GROUP, ["3.11", "3.12"])


def _opts(tmp_path: Path) -> BuildOptions:
    return BuildOptions(out_dir=tmp_path / "out", work_dir=tmp_path / "w", cache=tmp_path / "c")


def _result(opts: BuildOptions, target: Target) -> BuildResult:
    return BuildResult(opts.out_dir / f"{target.id}.whl", opts.out_dir / "r.json", {})


def test_a_groups_targets_are_its_compiles_each_with_every_minor() -> None:
    assert [t.id for t in _targets()] == IDS
    compiled: list[list[str]] = []

    def record(targets: Sequence[Target], opts: BuildOptions) -> Iterator[Outcome]:
        compiled.append([t.id for t in targets])
        yield from ((t, _result(opts, t)) for t in targets)

    built: list[BuildResult | ShardResult] = []
    build_group(_targets(), _opts(Path("/nonexistent")), built.append, build=record)
    assert compiled == [IDS[:2], IDS[2:]]  # one compile a Python, both minors from it
    assert len(built) == 4


def _failing_compile(targets: Sequence[Target], opts: BuildOptions) -> Iterator[Outcome]:
    if targets[0].build.python == "3.11":
        msg = f"nvcc failed for {targets[0].build.compile_id}"
        raise BuildError(msg)
    yield from ((t, _result(opts, t)) for t in targets)


def test_a_failed_python_does_not_stop_the_groups_others(tmp_path: Path) -> None:
    built: list[BuildResult | ShardResult] = []
    with pytest.raises(
        BuildError, match=re.escape("nvcc failed for flash-attn-2.8.3.post2-cu13torch2.14-cp311")
    ):
        build_group(_targets(), _opts(tmp_path), built.append, build=_failing_compile)
    assert [r.wheel.name for r in built if isinstance(r, BuildResult)] == [
        f"{i}.whl" for i in IDS[2:]
    ]


def test_a_minor_its_verify_refuses_does_not_stop_the_compiles_others(tmp_path: Path) -> None:
    def refuse_cu132(targets: Sequence[Target], opts: BuildOptions) -> Iterator[Outcome]:
        for t in targets:
            refused = VerifyError(f"{t.id}.whl", ["imports cudaNew@libcudart.so.13"])
            yield (t, refused if t.build.cuda == "cu132" else _result(opts, t))

    built: list[BuildResult | ShardResult] = []
    with pytest.raises(VerifyError, match="cudaNew"):
        build_group(_targets(), _opts(tmp_path), built.append, build=refuse_cu132)
    assert [r.wheel.name for r in built if isinstance(r, BuildResult)] == [
        f"{IDS[0]}.whl",
        f"{IDS[2]}.whl",
    ]


def test_a_lone_targets_failure_is_raised_at_once(tmp_path: Path) -> None:
    built: list[BuildResult | ShardResult] = []
    with pytest.raises(BuildError, match="nvcc failed"):
        build_group(_targets()[:1], _opts(tmp_path), built.append, build=_failing_compile)
    assert built == []
