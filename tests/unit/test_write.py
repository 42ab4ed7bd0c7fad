"""index/write.py: what a wheelhouse's site loads of the farm root, and when."""

from __future__ import annotations

from pathlib import Path

import pytest

from ghsim.synthetic import SAMPLE, sample_record
from tests.roots import REPO
from wheelfarm.core.record import path_for
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.index import write
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix

W = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(REPO)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Calls of index.write's `expand`, counted."""
    calls: list[int] = []

    def counting(matrix: Matrix) -> Expansion:
        calls.append(1)
        return expand(matrix)

    monkeypatch.setattr(write, "expand", counting)
    return calls


def test_planned_archs_expand_once_when_first_asked(
    shipped: Matrix, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counted(monkeypatch)
    archs = write.PlannedArchs(shipped)
    assert calls == []
    assert dict(archs) == write.policy(expand(shipped))
    assert len(archs) > 0
    assert calls == [1]


def test_builds_share_their_arch_sets(shipped: Matrix) -> None:
    archs = write.policy(expand(shipped)).values()
    assert len({id(a) for a in archs}) == len(set(archs)) < len(archs)


def test_a_wheelhouse_without_build_records_is_indexed_unexpanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a build record's archs are checked against the plan: a wheelhouse of wheels
    without one never expands the matrix; one record expands it once."""
    calls = _counted(monkeypatch)
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    info = "demo_pkg-1.0.0.dist-info"
    files = {f"{info}/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0\n"}
    write_wheel(house / W, files, info)
    first = write.index_root(REPO, lambda: write.load_grid(REPO), house, out, title="t")
    assert (first.wheels, calls) == (1, [])
    path_for(house / W).write_text(sample_record(target=SAMPLE.target).to_json())
    assert write.index_root(REPO, lambda: write.load_grid(REPO), house, out, title="t").wheels == 1
    assert calls == [1]
